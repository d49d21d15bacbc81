import Foundation
import TrackMeCore

#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP socket for the attacks the server must survive (slow headers, slow bodies,
/// idle sockets, many sockets from one address). Every call is bounded by a timeout; run them
/// through `BlockingThreads.shared.run` so a blocked call never holds a thread of the
/// cooperative pool the server's handlers need.
final class RawSocket: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let fd: Int32

    /// Connects to `127.0.0.1:port` (or `host`) from `source` (any 127.x.y.z address is this
    /// machine on Linux, so tests can play several peers).
    init(port: Int, host: String = "127.0.0.1", source: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw Failure(description: "bind \(source): \(String(cString: strerror(errno)))")
            }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        remote.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "connect: \(message)")
        }
    }

    deinit { close(fd) }

    /// Sends all of `text`; false if the peer has closed (EPIPE/ECONNRESET).
    @discardableResult
    func send(_ text: String) -> Bool {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Glibc.send(fd, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    /// Closes the sending side (`shutdown(SHUT_WR)`): the peer reads the end of the stream, as
    /// when a client closes, and what it still answers can be read here.
    func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Waits up to `timeout` for the peer to close; true if it did (EOF or reset). Data that
    /// arrives meanwhile is read and kept in `received`.
    func waitForClose(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            switch readSome(until: deadline) {
            case .closed: return true
            case .data, .timedOut: continue
            }
        }
        return false
    }

    /// Waits on all of `sockets` at once until `count` of them are closed by the peer or
    /// `timeout` passes; returns how many are closed. Unlike one `waitForClose` after another,
    /// a slow accept on a loaded machine cannot make a close fall outside its own short window.
    static func waitForCloses(_ sockets: [RawSocket], count: Int, timeout: Duration) -> Int {
        let deadline = ContinuousClock.now + timeout
        var closed = Set<Int>()
        while closed.count < count, ContinuousClock.now < deadline {
            let open = sockets.indices.filter { !closed.contains($0) }
            var descriptors = open.map { pollfd(fd: sockets[$0].fd, events: Int16(POLLIN), revents: 0) }
            let left = max(Duration.zero, deadline - ContinuousClock.now)
            let (seconds, attoseconds) = left.components
            let ready = poll(&descriptors, nfds_t(descriptors.count), Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000))
            guard ready > 0 else { break }
            for (slot, index) in open.enumerated() where descriptors[slot].revents != 0 {
                if sockets[index].readSome(until: ContinuousClock.now) == .closed { closed.insert(index) }
            }
        }
        return sockets.indices.filter { closed.contains($0) || sockets[$0].isClosedByPeer }.count
    }

    /// Whether the peer has closed, without waiting.
    var isClosedByPeer: Bool {
        readSome(until: ContinuousClock.now) == .closed
    }

    private(set) var received: [UInt8] = []

    /// Reads until a whole HTTP response (head and Content-Length body) is there or `timeout`
    /// passes; returns its status, nil on timeout or close.
    func readResponse(timeout: Duration) -> (status: Int, head: String, body: String)? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let text = String(decoding: received, as: UTF8.self)
            if let range = text.range(of: "\r\n\r\n") {
                let head = String(text[..<range.lowerBound])
                let length =
                    head.split(separator: "\r\n").compactMap { line -> Int? in
                        let parts = line.split(separator: ":", maxSplits: 1)
                        guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                        return Int(parts[1].trimmingCharacters(in: .whitespaces))
                    }.first ?? 0
                let body = Array(received[(text.utf8.distance(from: text.startIndex, to: range.upperBound))...])
                if body.count >= length {
                    let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                    received.removeAll()
                    return (status, head, String(decoding: body.prefix(length), as: UTF8.self))
                }
            }
            guard ContinuousClock.now < deadline else { return nil }
            if readSome(until: deadline) == .closed { return nil }
        }
    }

    private enum ReadOutcome: Equatable { case data, closed, timedOut }

    private func readSome(until deadline: ContinuousClock.Instant) -> ReadOutcome {
        let left = max(Duration.zero, deadline - ContinuousClock.now)
        let (seconds, attoseconds) = left.components
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        guard ready > 0 else { return .timedOut }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        if count > 0 {
            received.append(contentsOf: buffer.prefix(count))
            return .data
        }
        if count < 0, errno == EINTR || errno == EAGAIN { return .data }
        return .closed
    }
}
