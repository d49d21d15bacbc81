import Testing
@testable import TrackMeAgent
