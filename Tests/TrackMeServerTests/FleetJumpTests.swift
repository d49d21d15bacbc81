import Testing

@testable import TrackMeServer

/// A taxi's fixes reach the board 30 s apart, so a GPS jump is judged against the report before
/// it, not against the previous 1 Hz fix.
@Suite("Fleet: GPS jumps between 30 s reports")
struct FleetJumpTests {
    /// About 111 m per 0.001 degree of latitude.
    static func fix(_ seconds: Int64, north metres: Double) -> RaceIngest.Fix {
        RaceIngest.Fix(milliseconds: seconds * 1000, latitude: 41.15 + metres / 111_195, longitude: -8.61)
    }

    @Test("a point thrown 1.6 km off, 30 s after the report before, is not shown; 600 m in 30 s is")
    func thirtySecondReports() {
        let before = Self.fix(0, north: 0)
        #expect(FleetQueue.shown([Self.fix(30, north: 1600)], after: before, rideStarts: false) == nil)
        let driven = Self.fix(30, north: 600)
        #expect(FleetQueue.shown([driven], after: before, rideStarts: false) == driven)
        // A ride that starts far from the last drop-off is a new ride, not a jump.
        let pickup = Self.fix(30, north: 5000)
        #expect(FleetQueue.shown([pickup], after: before, rideStarts: true) == pickup)
    }
}
