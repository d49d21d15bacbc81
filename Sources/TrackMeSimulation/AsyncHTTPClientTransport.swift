import AsyncHTTPClient
import EdgeSync
import Foundation
import NIOCore
import NIOHTTP1
import TrackMeCore

/// `HTTPTransport` over AsyncHTTPClient, for fast mode.
///
/// The agent's `URLSessionTransport` (libcurl) costs about 0.7 ms of thread hand-offs per
/// request on loopback, and a day of trace sends some 17,000 batches one after another, so fast
/// mode uses a kept-alive SwiftNIO connection instead (about 0.2 ms). What goes over the wire is
/// the same: the sync engine builds every request, and the server is the same real server on
/// loopback. Field mode keeps the agent's own transport.
struct AsyncHTTPClientTransport: HTTPTransport {
    let baseURL: URL
    /// The caller owns the client and shuts it down.
    let client: HTTPClient
    let timeout: TimeAmount

    init(baseURL: URL, client: HTTPClient, timeout: Duration = .seconds(10)) {
        self.baseURL = baseURL
        self.client = client
        self.timeout = .milliseconds(timeout.milliseconds)
    }

    func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        var request = HTTPClientRequest(url: baseURL.appendingPathComponent(path).absoluteString)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: 4 << 20)
            var fields: [String: String] = [:]
            for (name, value) in response.headers { fields[name.lowercased()] = value }
            return HTTPResponse(status: Int(response.status.code), headers: fields, body: Array(buffer: bytes))
        } catch {
            throw SyncError(code: .transport, message: "\(error)")
        }
    }
}
