// Data path, step 5 for alerts: the dispatch lane that delivers each alert at once, retries, and falls back locally.

public import TrackMeCore

/// Delivers one alert update to the server (`POST /v1/alerts`). The HTTP implementation lives
/// with the sync client; tests use fakes. Throwing means "not accepted": the lane retries.
public protocol AlertTransport: Sendable {
    func send(_ update: AlertUpdate) async throws -> AlertReceipt
}

/// The server's answer to an accepted alert update.
public struct AlertReceipt: Hashable, Sendable {
    /// A dispatcher or contact has already acknowledged the alert.
    public var acknowledged: Bool

    public init(acknowledged: Bool = false) {
        self.acknowledged = acknowledged
    }
}
