// Data path, step 5 (sync): batches, retries with backoff, idempotency keys, the HTTP client.

import CCurlShim
public import Foundation

/// How the agent checks the server it sends to (`server.ca_file`, `server.pin_sha256`).
public struct ServerTrust: Hashable, Sendable {
    /// PEM file of the CA(s) to trust instead of the system store (a self-hosted server's CA).
    public var caFile: String?
    /// SHA-256 pins of the server's public key (SubjectPublicKeyInfo), base64; any one matching
    /// is enough. Checked in addition to the CA.
    public var publicKeySHA256: [String]

    public init(caFile: String? = nil, publicKeySHA256: [String] = []) {
        self.caFile = caFile
        self.publicKeySHA256 = publicKeySHA256
    }

    /// The system trust store, no pins: what `URLSessionTransport` does.
    public static let system = ServerTrust()
}

/// `HTTPTransport` over libcurl directly, for what URLSession cannot do on Linux: trust a
/// configured CA file and pin the server's key (swift-corelibs-foundation reads no CA setting on
/// Linux; `URLSessionCertificateAuthorityInfoFile` is read on Android only). Each request runs
/// on a thread of its own (libcurl blocks), never on the cooperative pool. An untrusted server
/// is a `.transport` error saying so; the sync engine retries and the readings wait.
public final class CurlTransport: HTTPTransport {
    public let baseURL: URL
    public let trust: ServerTrust
    let timeout: Duration

    private static let initialised: Bool = {
        tm_curl_global_init()
        return true
    }()

    public init(baseURL: URL, trust: ServerTrust, timeout: Duration = .seconds(10)) {
        _ = Self.initialised
        self.baseURL = baseURL
        self.trust = trust
        self.timeout = timeout
    }

    public func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        let url = baseURL.appendingPathComponent(path).absoluteString
        let lines = headers.map { "\($0.key): \($0.value)" } + ["Expect:"]
        let caFile = trust.caFile
        let pins = trust.publicKeySHA256.isEmpty ? nil : trust.publicKeySHA256.map { "sha256//\($0)" }.joined(separator: ";")
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        let outcome: Result<HTTPResponse, SyncError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: Self.perform(url: url, lines: lines, body: body, caFile: caFile, pins: pins, timeoutMilliseconds: milliseconds))
            }
            thread.start()
        }
        return try outcome.get()
    }

    private static func perform(url: String, lines: [String], body: [UInt8], caFile: String?, pins: String?, timeoutMilliseconds: Int)
        -> Result<HTTPResponse, SyncError>
    {
        var result = tm_curl_result()
        let cLines = lines.map { strdup($0) }
        defer { for line in cLines { free(line) } }
        let status: Int32 = cLines.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerPointers in
            body.withUnsafeBytes { bodyBytes in
                tm_curl_post(url, headerPointers.baseAddress, headerPointers.count, bodyBytes.baseAddress, bodyBytes.count, caFile, pins, timeoutMilliseconds, &result)
            }
        }
        defer { tm_curl_result_free(&result) }
        guard status == 0 else { return .failure(SyncError(code: .transport, message: "libcurl: out of memory")) }
        let message = withUnsafeBytes(of: result.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch result.failure_kind {
        case 0:
            break
        case 1:
            return .failure(SyncError(code: .transport, message: "TLS: the server's certificate is not trusted for this name: \(message)"))
        case 2:
            return .failure(SyncError(code: .transport, message: "TLS: the server's public key does not match server.pin_sha256: \(message)"))
        case 3:
            return .failure(SyncError(code: .transport, message: "TLS: cannot read server.ca_file \(caFile ?? "?"): \(message)"))
        default:
            return .failure(SyncError(code: .transport, message: "\(message) (curl \(result.curl_code))"))
        }
        let headerText = result.headers.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: result.headers_length), as: UTF8.self) } ?? ""
        var fields: [String: String] = [:]
        // Only the last response's headers count (a 100 Continue or a redirect comes first).
        for block in headerText.components(separatedBy: "\r\n\r\n").filter({ !$0.isEmpty }).suffix(1) {
            for line in block.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                fields[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        let bytes = result.body.map { Array(UnsafeRawBufferPointer(start: $0, count: result.body_length)) } ?? []
        return .success(HTTPResponse(status: Int(result.status), headers: fields, body: bytes))
    }
}
