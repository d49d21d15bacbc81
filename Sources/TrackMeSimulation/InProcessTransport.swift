import EdgeSync
import HTTPTypes
import NIOCore

/// Fast mode's HTTP: the agent's requests, as its sync engine and dispatch lane encode them,
/// handed to the server's own router, middleware and handlers in process (`InProcessRouter`: no
/// socket, no HTTP parser, no event-loop hop). The answer, error statuses
/// included, comes back as `CurlTransport` returns one: the status, the headers by lowercased
/// name (the last of a repeated name), the body.
struct InProcessTransport: HTTPTransport {
    let router: InProcessRouter

    func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> EdgeSync.HTTPResponse {
        // The path as `CurlTransport` resolves it against the server's root, with or without
        // its leading slash.
        let uri = path.hasPrefix("/") ? path : "/" + path
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let field = HTTPField.Name(name) else {
                throw SyncError(code: .transport, message: "in-process request: invalid header name \(name)")
            }
            fields[field] = value
        }
        let response: InProcessRouter.Answer
        do {
            response = try await router.execute(uri: uri, method: .post, headers: fields, body: ByteBuffer(bytes: body))
        } catch {
            throw SyncError(code: .transport, message: "in-process request to \(uri) failed: \(error)")
        }
        var answer: [String: String] = [:]
        for field in response.headers { answer[field.name.canonicalName] = field.value }
        return EdgeSync.HTTPResponse(status: response.status.code, headers: answer, body: Array(buffer: response.body))
    }
}
