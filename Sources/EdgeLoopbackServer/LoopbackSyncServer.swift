import EdgeSync
import GzipCodec
public import Foundation
import Glibc
import Synchronization
public import TrackMeCore

/// A small, real HTTP/1.1 server on 127.0.0.1 implementing WIRE.md's batch and alert endpoints
/// (dedupe by `(device_id, seq)`, the same answer for the same idempotency key, gzip bodies),
/// with fault injection. For tests and benchmarks of the agent's sync; never linked by the agent.
/// One thread accepts, one thread serves each connection (blocking sockets: simple and real).
public final class LoopbackSyncServer: Sendable {
    /// What the server does to the next requests.
    public enum Fault: Hashable, Sendable {
        case none
        /// Answer with this status (and `Retry-After` seconds if given), storing nothing.
        case status(Int, retryAfterSeconds: Int?)
        /// Process the request, then wait this long before answering (a slow server; the client
        /// may time out although the server has stored the batch).
        case delay(Duration)
        /// Read the headers and part of the body, then close the connection.
        case closeMidRequest
        /// Process and store the request, then close without answering.
        case closeAfterProcessing
        /// Close each connection as soon as it is accepted.
        case refuseConnections
    }

    /// A batch as the server saw it, in arrival order.
    public struct ReceivedBatch: Hashable, Sendable {
        public var idempotencyKey: String
        public var sequences: [Int64]
        public var droppedByBudget: Int64
        public var heartbeat: DeviceHeartbeat?
        /// Whether this was a repeat of a key already answered.
        public var repeated: Bool
        public var bodyBytes: Int
    }

    private struct State {
        var listener: Int32 = -1
        var connections: Set<Int32> = []
        var fault: Fault = .none
        var faultRemaining = 0
        var readings: [String: [Int64: WireReading]] = [:]
        var receipts: [String: [Int64: Int]] = [:]
        var answers: [String: [UInt8]] = [:]
        var batches: [ReceivedBatch] = []
        var alertUpdates: [String: [Int: AlertUpdate]] = [:]
        var alertOrder: [String] = []
        var acknowledgedAlerts: [String: [String]] = [:]
        var requests = 0
        var stopped = false
    }

    public let token: String
    public let port: UInt16
    private let state: Mutex<State>

    public var baseURL: URL {
        // The literal is well-formed; a nil here would be a bug in Foundation.
        URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/")
    }

    public init(token: String = "test-token") throws {
        self.token = token
        let fd = try Self.listen(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        var initial = State()
        initial.listener = fd
        state = Mutex(initial)
        startAccepting(fd)
    }

    deinit {
        shutdown()
    }

    // MARK: - Control

    /// Applies `fault` to the next `count` requests.
    public func setFault(_ fault: Fault, count: Int = Int.max) {
        state.withLock { s in
            s.fault = fault
            s.faultRemaining = count
        }
    }

    /// Stops listening and drops every connection: the server is gone (connections refused).
    public func goAway() {
        let fds = state.withLock { s -> [Int32] in
            defer {
                s.listener = -1
                s.connections.removeAll()
            }
            return (s.listener >= 0 ? [s.listener] : []) + Array(s.connections)
        }
        for fd in fds {
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
        }
    }

    /// Listens again on the same port.
    public func comeBack() throws {
        let fd = try Self.listen(port: port)
        state.withLock { $0.listener = fd }
        startAccepting(fd)
    }

    public func shutdown() {
        state.withLock { $0.stopped = true }
        goAway()
    }

    /// Marks an alert acknowledged by a dispatcher; batch answers for its device list it.
    public func acknowledgeAlert(_ alertID: String, deviceID: String) {
        state.withLock { $0.acknowledgedAlerts[deviceID, default: []].append(alertID) }
    }

    // MARK: - What arrived

    /// Readings stored for `deviceID`, by sequence number.
    public func readings(deviceID: String) -> [Int64: WireReading] {
        state.withLock { $0.readings[deviceID] ?? [:] }
    }

    /// How many times each reading arrived for `deviceID` (in any batch, repeats included).
    public func receipts(deviceID: String) -> [Int64: Int] {
        state.withLock { $0.receipts[deviceID] ?? [:] }
    }

    public var batches: [ReceivedBatch] { state.withLock { $0.batches } }

    /// Alert updates stored, by alert id and update sequence.
    public var alertUpdates: [String: [Int: AlertUpdate]] { state.withLock { $0.alertUpdates } }

    /// `alert_id:update_seq` in the order they were first stored.
    public var alertArrivalOrder: [String] { state.withLock { $0.alertOrder } }

    public var requestCount: Int { state.withLock { $0.requests } }

    // MARK: - Sockets

    private static func listen(port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(errno: errno, "socket") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 64) == 0 else {
            let error = POSIXError(errno: errno, "bind/listen")
            close(fd)
            throw error
        }
        return fd
    }

    private func startAccepting(_ listener: Int32) {
        let thread = Thread { [self] in
            while true {
                let fd = accept(listener, nil, nil)
                if fd < 0 {
                    if errno == EINTR { continue }
                    return
                }
                let refuse = state.withLock { s -> Bool in
                    if s.stopped || s.listener != listener { return true }
                    if case .refuseConnections = s.fault, s.faultRemaining > 0 {
                        s.faultRemaining -= 1
                        return true
                    }
                    s.connections.insert(fd)
                    return false
                }
                if refuse {
                    close(fd)
                    continue
                }
                let worker = Thread { [self] in serve(fd) }
                worker.start()
            }
        }
        thread.start()
    }

    private func serve(_ fd: Int32) {
        var connection = Connection(fd: fd)
        defer {
            let owned = state.withLock { $0.connections.remove(fd) != nil }
            if owned { close(fd) }
        }
        while let head = connection.readHead() {
            let fault = state.withLock { s -> Fault in
                s.requests += 1
                guard s.faultRemaining > 0 else { return .none }
                s.faultRemaining -= 1
                return s.fault
            }
            if head.headers["expect"]?.lowercased() == "100-continue" {
                guard connection.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }
            let length = Int(head.headers["content-length"] ?? "0") ?? -1
            guard length >= 0, length <= 64 << 20 else {
                _ = connection.write(Self.response(411, ["error": "length required"], retryAfter: nil))
                return
            }
            if case .closeMidRequest = fault {
                _ = connection.readBody(length / 2)
                return
            }
            guard let body = connection.readBody(length) else { return }
            if case .status(let status, let retryAfter) = fault {
                guard connection.write(Self.response(status, ["error": ["code": "injected", "message": "fault"]], retryAfter: retryAfter))
                else { return }
                continue
            }
            let answer = handle(head, body: body)
            switch fault {
            case .closeAfterProcessing: return
            case .delay(let delay): Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            case .none, .status, .closeMidRequest, .refuseConnections: break
            }
            guard connection.write(answer) else { return }
            if head.headers["connection"]?.lowercased() == "close" { return }
        }
    }

    // MARK: - Endpoints

    private func handle(_ head: RequestHead, body: [UInt8]) -> [UInt8] {
        guard head.method == "POST" else { return Self.response(404, Self.error("not_found", "no such endpoint"), retryAfter: nil) }
        guard head.headers["authorization"] == "Bearer \(token)" else {
            return Self.response(401, Self.error("unauthorized", "bad token"), retryAfter: nil)
        }
        var payload = body
        if head.headers["content-encoding"]?.lowercased() == "gzip" {
            do {
                payload = try Gzip.decompress(body)
            } catch {
                return Self.response(400, Self.error("malformed_json", "bad gzip body"), retryAfter: nil)
            }
        }
        switch head.path {
        case "/v1/batches": return handleBatch(head, payload: payload, bodyBytes: body.count)
        case "/v1/alerts": return handleAlert(payload: payload)
        default: return Self.response(404, Self.error("not_found", "no such endpoint"), retryAfter: nil)
        }
    }

    private func handleBatch(_ head: RequestHead, payload: [UInt8], bodyBytes: Int) -> [UInt8] {
        let batch: SyncBatch
        do {
            batch = try WireCodec.decode(SyncBatch.self, from: Data(payload))
        } catch {
            return Self.response(400, Self.error(error.code.rawValue, error.message, field: error.field), retryAfter: nil)
        }
        guard head.headers["idempotency-key"] == batch.idempotencyKey else {
            return Self.response(400, Self.error("invalid_value", "Idempotency-Key must match", field: "idempotency_key"), retryAfter: nil)
        }
        return state.withLock { s -> [UInt8] in
            let received = ReceivedBatch(
                idempotencyKey: batch.idempotencyKey, sequences: batch.readings.map(\.sequence), droppedByBudget: batch.droppedByBudget,
                heartbeat: batch.heartbeat, repeated: s.answers[batch.idempotencyKey] != nil, bodyBytes: bodyBytes)
            s.batches.append(received)
            if let answer = s.answers[batch.idempotencyKey] { return answer }
            var stored = 0
            var duplicates = 0
            for reading in batch.readings {
                s.receipts[batch.deviceID, default: [:]][reading.sequence, default: 0] += 1
                if s.readings[batch.deviceID]?[reading.sequence] != nil {
                    duplicates += 1
                } else {
                    s.readings[batch.deviceID, default: [:]][reading.sequence] = reading
                    stored += 1
                }
            }
            let ack = BatchAcknowledgement(
                idempotencyKey: batch.idempotencyKey, stored: stored, duplicates: duplicates,
                acknowledgedAlerts: s.acknowledgedAlerts[batch.deviceID] ?? [])
            let answer = Self.response(200, ack, retryAfter: nil)
            s.answers[batch.idempotencyKey] = answer
            return answer
        }
    }

    private func handleAlert(payload: [UInt8]) -> [UInt8] {
        let update: AlertUpdate
        do {
            update = try WireCodec.decode(AlertUpdate.self, from: Data(payload))
        } catch {
            return Self.response(400, Self.error(error.code.rawValue, error.message, field: error.field), retryAfter: nil)
        }
        let stored = state.withLock { s -> Bool in
            guard s.alertUpdates[update.alert.id]?[update.updateSequence] == nil else { return false }
            s.alertUpdates[update.alert.id, default: [:]][update.updateSequence] = update
            s.alertOrder.append("\(update.alert.id):\(update.updateSequence)")
            return true
        }
        return Self.response(200, ["version": 1, "stored": stored ? 1 : 0], retryAfter: nil)
    }

    private static func error(_ code: String, _ message: String, field: String? = nil) -> [String: [String: String?]] {
        ["error": ["code": code, "field": field, "message": message]]
    }

    private static func response(_ status: Int, _ body: some Encodable, retryAfter: Int?) -> [UInt8] {
        let bytes = (try? WireCodec.encode(body)).map(Array.init) ?? []
        var head = "HTTP/1.1 \(status) \(status == 200 ? "OK" : "Status")\r\nContent-Type: application/json\r\n"
        head += "Content-Length: \(bytes.count)\r\n"
        if let retryAfter { head += "Retry-After: \(retryAfter)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + bytes
    }
}

struct RequestHead {
    var method: String
    var path: String
    var headers: [String: String]
}

/// A blocking connection with a read buffer.
struct Connection {
    let fd: Int32
    var buffer: [UInt8] = []

    init(fd: Int32) {
        self.fd = fd
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return true
            }
            if n < 0, errno == EINTR { continue }
            return false
        }
    }

    mutating func readHead() -> RequestHead? {
        while true {
            if let end = buffer.firstRange(of: [13, 10, 13, 10]) {
                let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                let lines = text.components(separatedBy: "\r\n")
                let parts = lines.first?.split(separator: " ") ?? []
                guard parts.count >= 2 else { return nil }
                var headers: [String: String] = [:]
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                return RequestHead(method: String(parts[0]), path: String(parts[1]), headers: headers)
            }
            guard buffer.count < 64 * 1024, fill() else { return nil }
        }
    }

    mutating func readBody(_ length: Int) -> [UInt8]? {
        while buffer.count < length {
            guard fill() else { return nil }
        }
        defer { buffer.removeSubrange(..<length) }
        return Array(buffer[..<length])
    }

    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}

extension POSIXError {
    init(errno code: Int32, _ operation: String) {
        self.init(POSIXErrorCode(rawValue: code) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: operation])
    }
}
