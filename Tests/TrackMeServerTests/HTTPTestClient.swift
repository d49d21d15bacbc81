import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Plain HTTP requests to the server on loopback through URLSession.
struct HTTPTestClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data

        var text: String { String(decoding: body, as: UTF8.self) }
        /// The body as a JSON object (empty if it is not one).
        var object: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
        /// `error.field` and `error.code` of an error body.
        var errorField: String? { (object["error"] as? [String: Any])?["field"] as? String }
        var errorCode: String? { (object["error"] as? [String: Any])?["code"] as? String }
    }

    let port: Int
    private let session: URLSession

    init(port: Int) {
        self.port = port
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 120
        configuration.httpMaximumConnectionsPerHost = 64
        // Cookies are sent and read explicitly by the tests that use them.
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        session = URLSession(configuration: configuration)
    }

    /// Closes the kept-alive connections.
    func close() {
        session.invalidateAndCancel()
    }

    func send(_ method: String, _ path: String, token: String? = nil, json: [String: Any]) async throws -> Response {
        try await send(method, path, token: token, body: try JSONSerialization.data(withJSONObject: json))
    }

    func send(_ method: String, _ path: String, token: String? = nil, body: Data? = nil, headers: [String: String] = [:]) async throws -> Response {
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else { throw URLError(.badURL) }
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name.lowercased()] = value }
        }
        return Response(status: http.statusCode, headers: fields, body: data)
    }
}
