// Data path, step 1 (heart rate): HCI scan, ATT client over an L2CAP LE socket, Heart Rate Measurement decoding, reconnects.

import Glibc
import Synchronization

/// A connected ATT bearer: one PDU per message, in both directions.
///
/// Two implementations share `SeqPacketBearer`: the L2CAP LE socket on ATT's fixed channel
/// (`L2CAPConnector`) and one end of a `socketpair(AF_UNIX, SOCK_SEQPACKET)` (`SeqPacketBearer.pair()`)
/// for the simulated strap.
public protocol ATTBearer: Sendable {
    /// PDUs as they arrive. Finishes when the link closes: normally on hang-up, throwing on an
    /// error. Iterate it once.
    var incoming: AsyncThrowingStream<[UInt8], any Error> { get }
    /// Sends one PDU without blocking.
    func send(_ pdu: [UInt8]) throws
    /// Closes the link; `incoming` finishes shortly after.
    func close()
}

/// An ATT bearer over a `SOCK_SEQPACKET` descriptor. The descriptor is non-blocking; a dedicated
/// thread `poll`s it with a short timeout and receives only when data is ready, never blocking in
/// `recv` (on Debian's 6.1 kernel a blocking L2CAP receive stalls the adapter's receive path).
public final class SeqPacketBearer: ATTBearer {
    public let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let descriptor: FileDescriptor
    private let stopping = StopFlag()

    /// How long one `poll` waits before checking whether the bearer was closed.
    static let pollSlice: Int32 = 50
    /// Largest PDU we accept: ATT MTUs top out at 517.
    static let receiveBufferSize = 1024

    /// Takes ownership of a connected, non-blocking `SOCK_SEQPACKET` descriptor.
    init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream(bufferingPolicy: .bufferingNewest(512))
        incoming = stream
        let stopping = self.stopping
        continuation.onTermination = { _ in stopping.stop() }
        startDedicatedThread { [descriptor] in
            Self.receiveLoop(descriptor: descriptor, stopping: stopping, continuation: continuation)
        }
    }

    /// A connected pair of bearers over `socketpair(AF_UNIX, SOCK_SEQPACKET)`: what the simulated
    /// strap and the tests use in place of an L2CAP link.
    public static func pair() throws -> (SeqPacketBearer, SeqPacketBearer) {
        var fds: [Int32] = [-1, -1]
        try SystemError.check("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        }
        return (SeqPacketBearer(descriptor: FileDescriptor(fds[0])), SeqPacketBearer(descriptor: FileDescriptor(fds[1])))
    }

    /// Sends one PDU. Never waits: callers run on Swift's cooperative pool, so a full send queue
    /// (a congested link) is an error (`EAGAIN`) for the caller to handle, not a stall.
    public func send(_ pdu: [UInt8]) throws {
        _ = try descriptor.withOpen { (fd) throws(SystemError) in
            try SystemError.check("send") {
                pdu.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
        }
    }

    deinit { stopping.stop() }

    public func close() {
        stopping.stop()
        // Shut down now so the peer sees the hang-up at once; the receive thread closes the fd.
        _ = try? descriptor.withOpen { (fd) throws(SystemError) in _ = shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private static func receiveLoop(
        descriptor: FileDescriptor, stopping: StopFlag,
        continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) {
        var buffer = [UInt8](repeating: 0, count: receiveBufferSize)
        defer { descriptor.close() }
        while !stopping.isStopped {
            var p = pollfd(fd: descriptor.raw, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, pollSlice)
            if ready < 0 {
                if errno == EINTR { continue }
                continuation.finish(throwing: SystemError(call: "poll", errno: errno))
                return
            }
            if ready == 0 { continue }
            if p.revents & Int16(POLLIN) != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(descriptor.raw, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count > 0 {
                    continuation.yield(Array(buffer[0..<count]))
                    continue
                }
                if count == 0 {
                    continuation.finish()
                    return
                }
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                if code == ECONNRESET || code == ENOTCONN {
                    continuation.finish()
                    return
                }
                continuation.finish(throwing: SystemError(call: "recv", errno: code))
                return
            }
            if p.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                _ = getsockopt(descriptor.raw, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 && error != ECONNRESET {
                    continuation.finish(throwing: SystemError(call: "poll", errno: error))
                } else {
                    continuation.finish()
                }
                return
            }
        }
        continuation.finish()
    }
}

/// A flag one side sets and a polling thread reads.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isStopped: Bool { value.load(ordering: .relaxed) }
    func stop() { value.store(true, ordering: .relaxed) }
}
