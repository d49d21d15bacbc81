// Data path, step 6 (tests of step 5, sync): the far end of the agent's sync for its tests and
// benchmarks: the real `TrackMeServer` started in this process on loopback (`InProcessServer`)
// and `FaultProxy`, a small TCP proxy in front of it that injects what a field network does. No
// second implementation of the server side of the wire protocol: what a test checks was stored
// is what the real server stored. Never linked by the agent.

public import Foundation
import Synchronization
import TrackMeAgent
import TrackMeSystem

/// A small HTTP/1.1-aware TCP proxy on 127.0.0.1 in front of a real server, injecting the faults
/// of a field network per request or per time window: an answer the server never gave (500,
/// 503 with `Retry-After`, 413…), a request cut off before the server saw it, an answer lost
/// after the server processed the request, an answer held back (on the proxy's clock, or until
/// the client gives up), refused connections, and the whole endpoint going away and coming back.
///
/// It frames requests and answers by `Content-Length` (and chunked answers), so a fault hits one
/// request, not a connection. Each client connection has a thread of its own (blocking sockets,
/// the agent's `Socket` layer); every request gets a fresh upstream connection. `Expect:
/// 100-continue` is answered by the proxy and not forwarded. What the clients sent is kept in
/// `exchanges` (for checks of what the agent did: keys, order, count); what was stored is the
/// server's to say.
public final class FaultProxy: Sendable {
    public enum Fault: Hashable, Sendable {
        /// Answer with this status (and `Retry-After` seconds if given) without forwarding: the
        /// server never sees the request.
        case status(Int, retryAfterSeconds: Int? = nil)
        /// Read the head and half of the body, then close the connection: the server never
        /// sees the request.
        case dropRequest
        /// Forward; the server processes the request; its answer is thrown away and the
        /// connection closed.
        case dropAnswer
        /// Forward; hold the server's answer this long on the proxy's clock, then pass it on.
        case delayAnswer(Duration)
        /// Forward; hold the server's answer until the client gives up and closes the
        /// connection (a server slower than the client's timeout), then drop it.
        case holdAnswerUntilClientCloses
        /// Accept connections and close them at once (counted per connection).
        case refuseConnections
        /// Forward and pass the server's answer on, then close the connection: a server (or a
        /// NAT box) ending a kept-alive connection between two requests.
        case closeAfterAnswer
    }

    public enum Scope: Hashable, Sendable {
        /// The next `count` requests (connections, for `.refuseConnections`).
        case next(Int)
        /// While the proxy's clock reads within `from..<until` since the proxy started.
        case window(from: Duration, until: Duration)
        case always
    }

    /// One request as a client sent it, and what it got.
    public struct Exchange: Sendable {
        public var method: String
        public var path: String
        /// Header names lowercased.
        public var headers: [String: String]
        /// The body as sent (still gzip-compressed if it was).
        public var body: [UInt8]
        /// The fault applied, if any.
        public var fault: Fault?
        /// The status the client received (the server's or the injected one); nil when it got
        /// no answer.
        public var status: Int?
    }

    private struct Rule {
        var fault: Fault
        var scope: Scope
        var used = 0
    }

    private struct State {
        var rules: [Rule] = []
        var exchanges: [Exchange] = []
        var refusedConnections = 0
        var acceptedConnections = 0
        var connections: [ObjectIdentifier: Socket] = [:]
        /// Bumped by `goAway()`: the connections of an earlier generation end.
        var generation = 0
        var accepting: Acceptor?
        var stopped = false
    }

    public let port: Int
    public let upstreamPort: Int
    private let now: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state = Mutex(State())
    /// How often blocked reads look whether the proxy went away.
    private static let pollMilliseconds: Int32 = 20

    public var baseURL: URL {
        // The literal is well formed; the fallback is never taken.
        URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// - Parameter clock: what `.delayAnswer` waits on and `.window` reads (a `VirtualClock` in
    ///   tests that must not wait in real time).
    public init<C: Clock>(upstreamPort: Int, clock: C = ContinuousClock()) throws where C.Duration == Duration {
        let start = clock.now
        now = { start.duration(to: clock.now) }
        sleep = { try await clock.sleep(for: $0) }
        self.upstreamPort = upstreamPort
        let listener = try Self.listenOutsideEphemeralRange()
        port = Int(try listener.localPort())
        startAccepting(listener)
    }

    /// A listener on a port below the kernel's ephemeral range (`LoopbackPort`), not one that
    /// `bind(0)` picks: the proxy closes its port while it is away and binds it again when it
    /// comes back, and meanwhile a port of the ephemeral range can become the source port of
    /// any outgoing connection on the machine, and `comeBack` would fail with "Address already
    /// in use". Another listener may still take a candidate between the check and the bind:
    /// then the next one is tried.
    private static func listenOutsideEphemeralRange() throws -> Socket {
        var attempt = 0
        while true {
            do {
                return try Socket.listenTCPLoopback(port: UInt16(try LoopbackPort.unused()), backlog: 64)
            } catch {
                attempt += 1
                if attempt >= 20 { throw error }
            }
        }
    }

    deinit {
        let connections = state.withLock { s -> [Socket] in
            s.stopped = true
            return Array(s.connections.values)
        }
        for connection in connections { connection.shutdownWrite() }
    }

    // MARK: - Control

    /// Applies `fault` to the requests (or connections) `scope` says, after the rules already
    /// set (the first rule that applies to a request wins).
    public func inject(_ fault: Fault, _ scope: Scope) {
        state.withLock { $0.rules.append(Rule(fault: fault, scope: scope)) }
    }

    public func clearFaults() {
        state.withLock { $0.rules.removeAll() }
    }

    /// Stops listening and drops every connection: the server is gone (connections refused).
    public func goAway() async {
        let (acceptor, connections) = state.withLock { s -> (Acceptor?, [Socket]) in
            defer {
                s.generation += 1
                s.accepting = nil
                s.connections.removeAll()
            }
            return (s.accepting, Array(s.connections.values))
        }
        for connection in connections { connection.shutdownWrite() }
        await acceptor?.finished()
    }

    /// Listens again on the same port.
    public func comeBack() throws {
        startAccepting(try Socket.listenTCPLoopback(port: UInt16(port), backlog: 64))
    }

    public func shutdown() async {
        state.withLock { $0.stopped = true }
        await goAway()
    }

    // MARK: - What went through

    public var exchanges: [Exchange] { state.withLock { $0.exchanges } }
    public var requestCount: Int { state.withLock { $0.exchanges.count } }
    public var refusedConnections: Int { state.withLock { $0.refusedConnections } }
    /// Client connections accepted and served (not the refused ones): how many connections the
    /// clients opened.
    public var acceptedConnections: Int { state.withLock { $0.acceptedConnections } }

    // MARK: - Faults

    private func matchingFault(forConnection: Bool) -> Fault? {
        let elapsed = now()
        return state.withLock { s -> Fault? in
            for index in s.rules.indices {
                let rule = s.rules[index]
                guard (rule.fault == .refuseConnections) == forConnection else { continue }
                switch rule.scope {
                case .always:
                    return rule.fault
                case .next(let count):
                    guard rule.used < count else { continue }
                    s.rules[index].used += 1
                    return rule.fault
                case .window(let from, let until):
                    guard elapsed >= from, elapsed < until else { continue }
                    return rule.fault
                }
            }
            return nil
        }
    }

    // MARK: - Connections

    /// Accepts on a thread of its own (never on the cooperative pool, which a busy test process
    /// may starve), polling so that `goAway()` stops it; the thread closes the listener itself.
    private func startAccepting(_ listener: Socket) {
        let acceptor = Acceptor()
        let generation = state.withLock { s -> Int in
            s.accepting = acceptor
            return s.generation
        }
        let thread = Thread { [self] in
            while isCurrent(generation) {
                guard (try? listener.waitReadable(timeoutMilliseconds: Self.pollMilliseconds)) == true, isCurrent(generation),
                    let connection = try? listener.accept()
                else { continue }
                admit(connection, generation: generation)
            }
            listener.close()
            acceptor.finish()
        }
        thread.name = "trackme-fault-proxy-accept"
        thread.start()
    }

    private func admit(_ connection: Socket, generation: Int) {
        if matchingFault(forConnection: true) != nil {
            state.withLock { $0.refusedConnections += 1 }
            connection.close()
            return
        }
        let admitted = state.withLock { s -> Bool in
            guard !s.stopped, s.generation == generation else { return false }
            s.connections[ObjectIdentifier(connection)] = connection
            s.acceptedConnections += 1
            return true
        }
        guard admitted else {
            connection.close()
            return
        }
        let thread = Thread { [self] in serve(connection, generation: generation) }
        thread.name = "trackme-fault-proxy"
        thread.start()
    }

    private func isCurrent(_ generation: Int) -> Bool {
        state.withLock { !$0.stopped && $0.generation == generation }
    }

    private func serve(_ client: Socket, generation: Int) {
        defer {
            state.withLock { _ = $0.connections.removeValue(forKey: ObjectIdentifier(client)) }
            client.close()
        }
        var reader = MessageReader(socket: client, alive: { [self] in isCurrent(generation) })
        while let request = reader.readRequestHead() {
            if request.headers["expect"]?.lowercased() == "100-continue" {
                guard (try? client.writeAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))) != nil else { return }
            }
            guard let length = Int(request.headers["content-length"] ?? "0"), length >= 0, request.headers["transfer-encoding"] == nil else {
                _ = try? client.writeAll(Self.answer(411, retryAfterSeconds: nil))
                return
            }
            let fault = matchingFault(forConnection: false)
            if fault == .dropRequest {
                _ = reader.readBody(length / 2)
                record(request, body: [], fault: fault, status: nil)
                return
            }
            guard let body = reader.readBody(length) else { return }
            let index = record(request, body: body, fault: fault, status: nil)
            if case .status(let status, let retryAfter) = fault {
                guard (try? client.writeAll(Self.answer(status, retryAfterSeconds: retryAfter))) != nil else { return }
                setStatus(index, status)
                continue
            }
            guard let answer = forward(request, body: body, alive: { [self] in isCurrent(generation) }) else { return }
            switch fault {
            case .dropAnswer:
                return
            case .holdAnswerUntilClientCloses:
                reader.waitForClose()
                return
            case .delayAnswer(let delay):
                let done = DispatchSemaphore(value: 0)
                let sleep = self.sleep
                Task.detached {
                    try? await sleep(delay)
                    done.signal()
                }
                done.wait()
                guard isCurrent(generation) else { return }
            case .none, .status, .dropRequest, .refuseConnections, .closeAfterAnswer:
                break
            }
            guard (try? client.writeAll(answer.bytes)) != nil else { return }
            setStatus(index, answer.status)
            if request.headers["connection"]?.lowercased() == "close" || fault == .closeAfterAnswer { return }
        }
    }

    @discardableResult
    private func record(_ request: MessageHead, body: [UInt8], fault: Fault?, status: Int?) -> Int {
        state.withLock { s -> Int in
            s.exchanges.append(
                Exchange(method: request.method, path: request.target, headers: request.headers, body: body, fault: fault, status: status)
            )
            return s.exchanges.count - 1
        }
    }

    private func setStatus(_ index: Int, _ status: Int) {
        state.withLock { $0.exchanges[index].status = status }
    }

    /// Sends the request to the server on a connection of its own and reads its whole answer.
    private func forward(_ request: MessageHead, body: [UInt8], alive: @escaping @Sendable () -> Bool) -> (status: Int, bytes: [UInt8])? {
        guard let upstream = try? Socket.connectTCPLoopback(port: UInt16(upstreamPort)) else { return nil }
        defer { upstream.close() }
        var head = "\(request.method) \(request.target) \(request.version)\r\n"
        for (name, value) in request.lines where name.lowercased() != "expect" { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        guard (try? upstream.writeAll(Array(head.utf8) + body)) != nil else { return nil }
        var reader = MessageReader(socket: upstream, alive: alive)
        return reader.readResponse()
    }

    private static func answer(_ status: Int, retryAfterSeconds: Int?) -> [UInt8] {
        let body = Array(#"{"error":{"code":"injected","message":"fault injected by the test proxy"}}"#.utf8)
        var head = "HTTP/1.1 \(status) Injected\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        if let retryAfterSeconds { head += "Retry-After: \(retryAfterSeconds)\r\n" }
        return Array((head + "\r\n").utf8) + body
    }
}

/// Tells `goAway()` when the accepting thread has closed the listener (so the port can be bound again).
final class Acceptor: Sendable {
    private let state = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func finish() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.done = true
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func finished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if !s.done { s.waiters.append(continuation) }
                return s.done
            }
            if done { continuation.resume() }
        }
    }
}

/// A request or status line and its headers.
struct MessageHead {
    var method: String
    var target: String
    var version: String
    /// Headers in their order, names as sent.
    var lines: [(String, String)]
    /// Header names lowercased (the last of repeated ones).
    var headers: [String: String]
}

/// Reads HTTP/1.1 messages off a blocking socket, polling so that a proxy that went away stops
/// waiting.
struct MessageReader {
    let socket: Socket
    let alive: @Sendable () -> Bool
    var buffer: [UInt8] = []

    /// More bytes; false on end of file, an error, or the proxy gone.
    mutating func fill() -> Bool {
        while alive() {
            do {
                guard try socket.waitReadable(timeoutMilliseconds: 20) else { continue }
                let bytes = try socket.read(maximum: 64 * 1024)
                guard !bytes.isEmpty else { return false }
                buffer += bytes
                return true
            } catch {
                return false
            }
        }
        return false
    }

    mutating func readHead() -> MessageHead? {
        while true {
            if let end = buffer.firstRange(of: [13, 10, 13, 10]) {
                let text = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                let lines = text.components(separatedBy: "\r\n")
                let parts = (lines.first ?? "").split(separator: " ", maxSplits: 2).map(String.init)
                guard parts.count >= 2 else { return nil }
                var head = MessageHead(method: parts[0], target: parts[1], version: parts.count > 2 ? parts[2] : "", lines: [], headers: [:])
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = String(line[..<colon])
                    let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    head.lines.append((name, value))
                    head.headers[name.lowercased()] = value
                }
                return head
            }
            guard buffer.count < 64 * 1024, fill() else { return nil }
        }
    }

    /// The next request's head (`method`, `target`, `version`).
    mutating func readRequestHead() -> MessageHead? { readHead() }

    mutating func readBody(_ length: Int) -> [UInt8]? {
        while buffer.count < length {
            guard fill() else { return nil }
        }
        defer { buffer.removeSubrange(..<length) }
        return Array(buffer[..<length])
    }

    /// A whole answer, verbatim: its status and bytes (head and body, by `Content-Length`,
    /// chunked, or up to the end of the connection).
    mutating func readResponse() -> (status: Int, bytes: [UInt8])? {
        var head: MessageHead
        repeat {
            guard let next = readHead() else { return nil }
            head = next
        } while head.target.hasPrefix("1") && head.target.count == 3  // 1xx interim answers
        // For a status line, `method` holds the version and `target` the status code.
        guard let status = Int(head.target) else { return nil }
        var bytes = Array("\(head.method) \(head.target) \(head.version)\r\n".utf8)
        for (name, value) in head.lines { bytes += Array("\(name): \(value)\r\n".utf8) }
        bytes += [13, 10]
        if head.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                guard let sizeLine = readLine(),
                    let size = Int((sizeLine.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces), radix: 16)
                else { return nil }
                bytes += Array("\(sizeLine)\r\n".utf8)
                if size == 0 {
                    // Trailers, up to the empty line.
                    while let trailer = readLine() {
                        bytes += Array("\(trailer)\r\n".utf8)
                        if trailer.isEmpty { return (status, bytes) }
                    }
                    return nil
                }
                guard let chunk = readBody(size + 2) else { return nil }
                bytes += chunk
            }
        } else if let length = head.headers["content-length"].flatMap({ Int($0) }) {
            guard let body = readBody(length) else { return nil }
            bytes += body
        } else if status != 204, status != 304 {
            while fill() {}
            bytes += buffer
            buffer.removeAll()
        }
        return (status, bytes)
    }

    private mutating func readLine() -> String? {
        while true {
            if let end = buffer.firstRange(of: [13, 10]) {
                let line = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
                buffer.removeSubrange(..<end.upperBound)
                return line
            }
            guard fill() else { return nil }
        }
    }

    /// Waits until the peer closes its end (or the proxy goes away), discarding what it sends.
    mutating func waitForClose() {
        while fill() { buffer.removeAll() }
    }
}
