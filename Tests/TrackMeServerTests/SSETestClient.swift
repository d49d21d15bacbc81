import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A minimal Server-Sent Events client over a raw loopback socket: sends the GET, decodes the
/// chunked body and yields each event. Reading happens on a thread of its own; `close()` shuts
/// the socket down, waits for the thread, then closes the descriptor, exactly once. (The thread
/// never closes it: a descriptor number closed early is reused by another socket of this test
/// process, and a later shutdown would cut that unrelated connection.)
final class SSETestClient: @unchecked Sendable {
    struct Event: Sendable, Equatable {
        var id: Int64?
        var event: String
        var data: String
    }

    enum Item: Sendable {
        case status(Int)
        case event(Event)
        /// Why the stream ended (for failure messages).
        case ended(String)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let items: AsyncStream<Item>
    private let fd: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let closed = Mutex(false)

    /// `path` and `cookie` let the people's streams (`/v1/people/:id/stream`, signed in) use it too.
    /// `heartbeats`: yield the feed's `heartbeat` events too; without it they are skipped, so a
    /// test counting events does not depend on how long it ran.
    init(
        port: Int,
        token: String,
        lastEventID: String? = nil,
        path: String = "/v1/alerts/stream",
        cookie: String? = nil,
        heartbeats: Bool = false
    ) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect: errno \(errno)")
        }
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        if !token.isEmpty { request += "Authorization: Bearer \(token)\r\n" }
        if let cookie { request += "Cookie: \(cookie)\r\n" }
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        request += "\r\n"
        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else {
                Glibc.close(fd)
                throw Failure(description: "send: errno \(errno)")
            }
            sent += n
        }
        self.fd = fd
        let (stream, continuation) = AsyncStream.makeStream(of: Item.self)
        items = stream
        let finished = self.finished
        let thread = Thread {
            Self.read(fd: fd, heartbeats: heartbeats, into: continuation)
            finished.signal()
        }
        thread.start()
    }

    func close() {
        let first = closed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        finished.wait()
        Glibc.close(fd)
    }

    /// Collects `count` events (status skipped), failing after `timeout` as a safety net only.
    func nextEvents(_ count: Int, timeout: Duration = .seconds(60)) async throws -> [Event] {
        try await withThrowingTaskGroup(of: [Event].self) { group in
            let items = self.items
            group.addTask {
                var events: [Event] = []
                var reason = "cancelled"
                for await item in items {
                    if case .event(let event) = item { events.append(event) }
                    if case .ended(let why) = item { reason = why }
                    if events.count == count { return events }
                }
                throw Failure(description: "stream ended (\(reason)) after \(events.count) of \(count) events: \(events)")
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Failure(description: "timed out waiting for \(count) events")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? []
        }
    }

    private static func read(fd: Int32, heartbeats: Bool, into continuation: AsyncStream<Item>.Continuation) {
        defer { continuation.finish() }
        var raw: [UInt8] = []
        var headerDone = false
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                continuation.yield(.ended(n == 0 ? "connection closed" : "recv errno \(errno)"))
                return
            }
            raw.append(contentsOf: chunk[0..<n])
            if !headerDone {
                guard let end = find(raw, [13, 10, 13, 10]) else { continue }
                let head = String(decoding: raw[0..<end], as: UTF8.self)
                let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                continuation.yield(.status(status))
                raw.removeFirst(end + 4)
                headerDone = true
            }
            // Chunked transfer coding: size line, data, CRLF.
            var lastChunk = false
            while let lineEnd = find(raw, [13, 10]) {
                let sizeText = String(decoding: raw[0..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                    continuation.yield(.ended("bad chunk size line \(sizeText.debugDescription)"))
                    return
                }
                if size == 0 {
                    // The events before the end are delivered first (they may come in the same read).
                    lastChunk = true
                    break
                }
                guard raw.count >= lineEnd + 2 + size + 2 else { break }
                text.append(contentsOf: raw[(lineEnd + 2)..<(lineEnd + 2 + size)])
                raw.removeFirst(lineEnd + 2 + size + 2)
            }
            while let blockEnd = find(text, [10, 10]) {
                let block = String(decoding: text[0..<blockEnd], as: UTF8.self)
                text.removeFirst(blockEnd + 2)
                var event = Event(id: nil, event: "", data: "")
                var hasField = false
                for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                    if line.hasPrefix(":") { continue }
                    if line.hasPrefix("id: ") {
                        event.id = Int64(line.dropFirst(4))
                        hasField = true
                    } else if line.hasPrefix("event: ") {
                        event.event = String(line.dropFirst(7))
                        hasField = true
                    } else if line.hasPrefix("data: ") {
                        event.data += String(line.dropFirst(6))
                        hasField = true
                    }
                }
                if hasField, heartbeats || event.event != "heartbeat" { continuation.yield(.event(event)) }
            }
            if lastChunk {
                continuation.yield(.ended("last chunk"))
                return
            }
        }
    }

    private static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}
