import Foundation

/// An HTTP answer as the sync code needs it.
public struct HTTPResponse: Hashable, Sendable {
    public var status: Int
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `Retry-After` in its delay-seconds form (the HTTP-date form is ignored: the device's wall
    /// clock may be wrong).
    public var retryAfter: Duration? {
        guard let value = headers["retry-after"], let seconds = Int64(value.trimmingCharacters(in: .whitespaces)), seconds >= 0
        else { return nil }
        return .seconds(seconds)
    }
}

/// Sends one POST and returns the answer; throws `SyncError` with code `.transport` when there
/// is no answer. The seam between the sync logic and the network; the agent's one implementation
/// is `CurlTransport`.
public protocol HTTPTransport: Sendable {
    func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse
}
