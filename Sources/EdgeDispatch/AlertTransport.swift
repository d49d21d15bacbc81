// Data path, step 5 for alerts: the dispatch lane that delivers each alert at once, retries, and falls back locally.

public import TrackMeCore

/// Delivers one alert update to the server (`POST /v1/alerts`). The HTTP implementation lives
/// with the agent (over the sync client's HTTP transport); tests use fakes. Returning means the
/// server has the update; throwing means "not accepted": the lane retries.
public protocol AlertTransport: Sendable {
    func send(_ update: AlertUpdate) async throws
}
