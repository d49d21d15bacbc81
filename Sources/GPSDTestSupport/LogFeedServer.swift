public import Foundation
import SystemPackage
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP server that sends the same bytes to every client and then closes, standing in
/// for a receiver: gpsd is started with `tcp://127.0.0.1:PORT` as its device. gpsd opens the
/// device only when a client watches, so nothing is lost before the reader connects.
public final class LogFeedServer: Sendable {
    public let port: Int
    private let listener: OwnedFileDescriptor
    private let stopped = StopFlag()

    /// Listens on 127.0.0.1 on a free port and serves `bytes` to each connection.
    public init(bytes: [UInt8]) throws(GPSDTestSupportError) {
        let (listener, port) = try GPSDProcess.boundLoopbackSocket(listening: true)
        self.listener = listener
        self.port = port
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
        guard stopped.raise() else { return }
        // shutdown wakes the thread blocked in accept; the thread then closes the listener.
        _ = try? listener.withOpen("shutdown") { (fd) throws(SystemError) in shutdown(fd.rawValue, Int32(SHUT_RDWR)) }
    }

    private static func serve(listener owner: OwnedFileDescriptor, bytes: [UInt8], stopped: StopFlag) {
        defer { owner.close() }
        // Only this thread closes the listener, so the snapshot stays valid.
        guard let listener = owner.descriptor else { return }
        while !stopped.isRaised {
            guard let accepted = try? SystemError.retrying("accept", { accept(listener.rawValue, nil, nil) }) else { break }
            let client = FileDescriptor(rawValue: accepted)
            // A gpsd spawned by a parallel test must not inherit this connection: it would keep
            // it open after we close it, and the receiver would never "unplug".
            _ = fcntl(client.rawValue, F_SETFD, FD_CLOEXEC)
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = try? SystemError.retrying("send") {
                        send(client.rawValue, buffer.baseAddress.map { $0 + offset }, buffer.count - offset, Int32(MSG_NOSIGNAL))
                    }
                    guard let written, written > 0 else { break }
                    offset += written
                }
            }
            // Keep the connection open until gpsd closes it (after the "# EOF" marker, or when it
            // dies): closing first would make gpsd's probe writes fail and it could drop unread
            // sentences. What gpsd writes to the "receiver" is discarded.
            var sink = [UInt8](repeating: 0, count: 4096)
            while let received = try? SystemError.retrying("recv", { recv(client.rawValue, &sink, sink.count, 0) }), received > 0 {}
            try? client.close()
        }
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
