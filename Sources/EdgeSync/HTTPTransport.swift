public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

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
/// is no answer. The seam between the sync logic and the network.
public protocol HTTPTransport: Sendable {
    func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse
}

/// `HTTPTransport` over Foundation's URLSession (libcurl on Linux): no NIO on the agent side.
public final class URLSessionTransport: HTTPTransport {
    public let baseURL: URL
    private let session: URLSession

    /// - Parameter timeout: how long a request may take before it counts as failed; a slow
    ///   server is then retried like an absent one (the idempotency key makes that safe).
    public init(baseURL: URL, timeout: Duration = .seconds(10)) {
        self.baseURL = baseURL
        let configuration = URLSessionConfiguration.ephemeral
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        configuration.httpMaximumConnectionsPerHost = 2
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    deinit { session.invalidateAndCancel() }

    public func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body)
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw SyncError(code: .transport, message: "\(error)")
        }
        guard let http = response as? HTTPURLResponse else {
            throw SyncError(code: .transport, message: "not an HTTP response")
        }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return HTTPResponse(status: http.statusCode, headers: fields, body: Array(data))
    }
}
