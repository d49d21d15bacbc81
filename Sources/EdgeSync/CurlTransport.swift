// Data path, step 5 (sync): batches, retries with backoff, idempotency keys, the HTTP client.

import CCurlShim
public import Foundation
import Synchronization
import TrackMeCore
import TrackMeSystem

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

    /// The system trust store, no pins.
    public static let system = ServerTrust()
}

/// The agent's one HTTP client: `HTTPTransport` over libcurl's easy interface (the `CCurlShim`
/// target), with the system trust store by default, or a configured CA file and key pins
/// (swift-corelibs-foundation's URLSession reads no CA setting on Linux, and the agent does not
/// link FoundationNetworking at all: it keeps the binary small).
///
/// Connections are kept alive and reused: libcurl keeps its connection cache per easy handle,
/// and the transport keeps a small stack of idle handles. A POST takes an idle handle (or makes
/// one when every kept handle is busy: the alert lane and the readings lane may post at the same
/// time), and gives it back afterwards; beyond `keptConnections` idle handles the extra one is
/// freed with its connection. A connection the server or the network closed between two POSTs
/// is noticed by libcurl and replaced by a new one (a POST that met a closed kept-alive
/// connection before any answer is sent again on a fresh one; the idempotency key makes that
/// safe). libcurl blocks, so each POST runs on a kept thread (`BlockingThreads`), never on the
/// cooperative pool. An untrusted server is a `.transport` error saying so; the sync engine
/// retries and the readings wait.
public final class CurlTransport: HTTPTransport {
    public let baseURL: URL
    public let trust: ServerTrust
    let timeout: Duration
    private let pool: CurlHandlePool
    private let opened = Atomic<Int>(0)

    /// Connections libcurl opened so far (TCP, and TLS handshakes on https): one per batch
    /// without reuse, about one in all with it.
    package var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    private static let initialised: Bool = {
        tm_curl_global_init()
        return true
    }()

    /// - Parameters:
    ///   - timeout: how long a request may take before it counts as failed; a slow server is
    ///     then retried like an absent one (the idempotency key makes that safe).
    ///   - keptConnections: idle connections kept for the next POSTs (the agent's two lanes).
    public init(baseURL: URL, trust: ServerTrust = .system, timeout: Duration = .seconds(10), keptConnections: Int = 2) {
        _ = Self.initialised
        self.baseURL = baseURL
        self.trust = trust
        self.timeout = timeout
        pool = CurlHandlePool(capacity: keptConnections)
    }

    public func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        let url = baseURL.appendingPathComponent(path).absoluteString
        let lines = headers.map { "\($0.key): \($0.value)" } + ["Expect:"]
        let caFile = trust.caFile
        let pins = trust.publicKeySHA256.isEmpty ? nil : trust.publicKeySHA256.map { "sha256//\($0)" }.joined(separator: ";")
        let milliseconds = Int(timeout.milliseconds)
        guard let handle = pool.take() else { throw SyncError(code: .transport, message: "libcurl: out of memory") }
        // A cancelled caller (an alert's send past its timeout, a stopping agent) ends the POST
        // within about a second instead of at `timeout`, and gives its thread back.
        let stop = StopFlag()
        let (outcome, newConnections) = await withTaskCancellationHandler {
            await BlockingThreads.shared.run {
                Self.perform(
                    handle: handle,
                    url: url,
                    lines: lines,
                    body: body,
                    caFile: caFile,
                    pins: pins,
                    timeoutMilliseconds: milliseconds,
                    stop: stop
                )
            }
        } onCancel: {
            stop.raise()
        }
        pool.giveBack(handle)
        opened.add(newConnections, ordering: .relaxed)
        return try outcome.get()
    }

    private static func perform(
        handle: CurlHandle,
        url: String,
        lines: [String],
        body: [UInt8],
        caFile: String?,
        pins: String?,
        timeoutMilliseconds: Int,
        stop: StopFlag
    ) -> (Result<HTTPResponse, SyncError>, newConnections: Int) {
        var result = tm_curl_result()
        let cLines = lines.map { strdup($0) }
        defer { for line in cLines { free(line) } }
        // `stop` outlives the call: the caller's closure holds it until this function returns.
        let stopContext = Unmanaged.passUnretained(stop).toOpaque()
        let shouldStop: tm_curl_should_stop = { context in
            guard let context else { return 0 }
            return Unmanaged<StopFlag>.fromOpaque(context).takeUnretainedValue().isRaised ? 1 : 0
        }
        let status: Int32 = cLines.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerPointers in
            body.withUnsafeBytes { bodyBytes in
                tm_curl_post(
                    handle.pointer,
                    url,
                    headerPointers.baseAddress,
                    headerPointers.count,
                    bodyBytes.baseAddress,
                    bodyBytes.count,
                    caFile,
                    pins,
                    timeoutMilliseconds,
                    shouldStop,
                    stopContext,
                    &result
                )
            }
        }
        defer { tm_curl_result_free(&result) }
        guard status == 0 else { return (.failure(SyncError(code: .transport, message: "libcurl: out of memory")), 0) }
        return (response(result, caFile: caFile), result.new_connections)
    }

    private static func response(_ result: tm_curl_result, caFile: String?) -> Result<HTTPResponse, SyncError> {
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
        case 5:
            return .failure(SyncError(code: .transport, message: "cancelled"))
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

/// One libcurl easy handle and the connection it keeps alive; freed (and its connection closed)
/// when the last reference goes.
///
/// `@unchecked Sendable` is sound: a handle is used by one thread at a time, either idle in
/// `CurlHandlePool` (under its mutex) or held by the one POST that took it.
final class CurlHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init?() {
        guard let pointer = tm_curl_create() else { return nil }
        self.pointer = pointer
    }

    deinit { tm_curl_free(pointer) }
}

/// The idle handles of one `CurlTransport`, most recently used on top (its connection is the
/// likeliest still open).
final class CurlHandlePool: Sendable {
    private let idle = Mutex<[CurlHandle]>([])
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// An idle handle, or a new one when none is idle; nil when out of memory.
    func take() -> CurlHandle? {
        idle.withLock { $0.popLast() } ?? CurlHandle()
    }

    /// Keeps `handle` for the next POST, or frees it when `capacity` handles are idle already.
    func giveBack(_ handle: CurlHandle) {
        // When not kept, the caller's reference is the last: the handle is freed outside the
        // lock (closing a TLS connection writes to the socket).
        idle.withLock { handles in
            if handles.count < capacity { handles.append(handle) }
        }
    }
}
