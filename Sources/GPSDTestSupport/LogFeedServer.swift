public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that sends the same bytes to every client and then closes, standing in
/// for a receiver: gpsd is started with `tcp://127.0.0.1:PORT` as its device. gpsd opens the
/// device only when a client watches, so nothing is lost before the reader connects.
public final class LogFeedServer: Sendable {
    public let port: Int
    private let listener: Int32
    private let stopped = StoppedFlag()

    /// Listens on 127.0.0.1 on a free port and serves `bytes` to each connection.
    public init(bytes: [UInt8]) throws(GPSDTestSupportError) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Self.failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw Self.failure("bind/listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else {
            close(fd)
            throw Self.failure("getsockname")
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [listener, stopped] in
            Self.serve(listener: listener, bytes: bytes, stopped: stopped)
        }
        thread.name = "log-feed"
        thread.start()
    }

    deinit {
        stop()
    }

    /// Stops accepting; the accept thread ends. Idempotent.
    public func stop() {
        guard !stopped.value.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // shutdown wakes the thread blocked in accept; the thread then closes the listener.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private static func serve(listener: Int32, bytes: [UInt8], stopped: StoppedFlag) {
        while !stopped.value.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            // A gpsd spawned by a parallel test must not inherit this connection: it would keep
            // it open after we close it, and the receiver would never "unplug".
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = send(client, buffer.baseAddress.map { $0 + offset }, buffer.count - offset, Int32(MSG_NOSIGNAL))
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { break }
                    offset += written
                }
            }
            // Keep the connection open until gpsd closes it (after the "# EOF" marker, or when it
            // dies): closing first would make gpsd's probe writes fail and it could drop unread
            // sentences. What gpsd writes to the "receiver" is discarded.
            var sink = [UInt8](repeating: 0, count: 4096)
            while true {
                let received = recv(client, &sink, sink.count, 0)
                if received < 0 && errno == EINTR { continue }
                if received <= 0 { break }
            }
            close(client)
        }
        close(listener)
    }

    private static func failure(_ call: String) -> GPSDTestSupportError {
        GPSDTestSupportError(code: .socketFailed, context: "\(call) failed: errno \(errno)")
    }

    /// gpsd's own end-of-log marker (what gpsfake sends): a `# EOF` comment line makes gpsd
    /// close the device after every sentence before it has been processed, so a client sees the
    /// end of the log as a DEVICE "activated":0 message, in order.
    public static let endOfLogMarker: [UInt8] = Array("\n# EOF\n".utf8)

    /// The bytes of a gpsd regression log as a receiver would send them, then `endOfLogMarker`:
    /// the log's `#` comment header lines are left out, everything else is sent unchanged (NULs,
    /// broken sentences and all).
    public static func receiverBytes(ofLog url: URL) throws -> [UInt8] {
        try receiverBytes(of: Data(contentsOf: url))
    }

    /// `receiverBytes(ofLog:)` for bytes already in memory.
    public static func receiverBytes(of data: Data) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(data.count)
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if line.first == UInt8(ascii: "#") { continue }
            output.append(contentsOf: line)
            output.append(UInt8(ascii: "\n"))
        }
        return output + endOfLogMarker
    }
}

/// Shared between the server and its accept thread.
final class StoppedFlag: Sendable {
    let value = Atomic<Bool>(false)
}
