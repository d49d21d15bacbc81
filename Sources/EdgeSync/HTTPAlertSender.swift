public import TrackMeCore

/// Sends one alert update to `POST /v1/alerts` and returns when the server has it; a dispatch
/// lane can use it as its transport. Idempotent by `(alert_id, update_seq)` on the server, so
/// resending after a lost answer is harmless.
public struct HTTPAlertSender: Sendable {
    public let transport: any HTTPTransport
    public let token: String

    public init(transport: any HTTPTransport, token: String) {
        self.transport = transport
        self.token = token
    }

    /// Throws `SyncError`: `.transport` / `.serverUnavailable` are worth retrying,
    /// `.rejected` (4xx other than 408/429) is not.
    public func send(_ update: AlertUpdate) async throws(SyncError) {
        let body: [UInt8]
        do {
            body = Array(try WireCodec.encode(update))
        } catch {
            throw SyncError(code: .encoding, message: "\(error)")
        }
        let response = try await transport.post(
            path: "/v1/alerts",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: body
        )
        guard (200..<300).contains(response.status) else {
            throw SyncError.forStatus(response.status, retryAfter: response.retryAfter, body: response.body)
        }
    }
}
