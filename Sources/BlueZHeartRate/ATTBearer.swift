// Data path, step 1 (heart rate): HCI scan, ATT client over an L2CAP LE socket, Heart Rate Measurement decoding, reconnects.

import Glibc
import SystemPackage
import TrackMeSystem

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
    private let descriptor: OwnedFileDescriptor
    private let stopping = StopFlag()

    /// How long one `poll` waits before checking whether the bearer was closed.
    static let pollSlice: Int32 = 50
    /// Largest PDU we accept: ATT MTUs top out at 517.
    static let receiveBufferSize = 1024

    /// Takes ownership of a connected, non-blocking `SOCK_SEQPACKET` descriptor.
    init(descriptor: OwnedFileDescriptor) {
        self.descriptor = descriptor
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream(bufferingPolicy: .bufferingNewest(512))
        incoming = stream
        let stopping = self.stopping
        continuation.onTermination = { _ in stopping.raise() }
        BlockingThreads.shared.start { [descriptor] in
            Self.receiveLoop(descriptor: descriptor, stopping: stopping, continuation: continuation)
        }
    }

    /// A connected pair of bearers over `socketpair(AF_UNIX, SOCK_SEQPACKET)`: what the simulated
    /// strap and the tests use in place of an L2CAP link.
    public static func pair() throws -> (SeqPacketBearer, SeqPacketBearer) {
        var fds: [Int32] = [-1, -1]
        try SystemError.retrying("socketpair") {
            socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        }
        return (
            SeqPacketBearer(descriptor: OwnedFileDescriptor(FileDescriptor(rawValue: fds[0]))),
            SeqPacketBearer(descriptor: OwnedFileDescriptor(FileDescriptor(rawValue: fds[1])))
        )
    }

    /// Sends one PDU. Never waits: callers run on Swift's cooperative pool, so a full send queue
    /// (a congested link) is an error (`EAGAIN`) for the caller to handle, not a stall.
    public func send(_ pdu: [UInt8]) throws {
        _ = try descriptor.withOpen("send") { (fd) throws(SystemError) in
            try SystemError.retrying("send") {
                pdu.withUnsafeBytes { Glibc.send(fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
        }
    }

    deinit { stopping.raise() }

    public func close() {
        stopping.raise()
        // Shut down now so the peer sees the hang-up at once; the receive thread closes the fd.
        _ = try? descriptor.withOpen("shutdown") { (fd) throws(SystemError) in _ = shutdown(fd.rawValue, Int32(SHUT_RDWR)) }
    }

    private static func receiveLoop(
        descriptor owner: OwnedFileDescriptor,
        stopping: StopFlag,
        continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) {
        defer { owner.close() }
        // Only this thread closes the descriptor (on its way out), so the snapshot stays valid.
        guard let descriptor = owner.descriptor else { return continuation.finish() }
        do throws(SystemError) {
            try receive(from: descriptor, stopping: stopping, continuation: continuation)
            continuation.finish()
        } catch {
            continuation.finish(throwing: error)
        }
    }

    /// Polls and receives until the link ends cleanly (hang-up, reset) or `stopping`; throws the
    /// error that ended it otherwise.
    private static func receive(
        from descriptor: FileDescriptor,
        stopping: StopFlag,
        continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    ) throws(SystemError) {
        var buffer = [UInt8](repeating: 0, count: receiveBufferSize)
        while !stopping.isRaised {
            let events = try descriptor.poll(Int16(POLLIN), timeoutMilliseconds: pollSlice)
            if events == 0 { continue }
            if events & Int16(POLLIN) != 0 {
                let count: Int
                do throws(SystemError) {
                    count = try SystemError.retrying("recv") {
                        buffer.withUnsafeMutableBytes { recv(descriptor.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                    }
                } catch {
                    switch error.errno {
                    case .resourceTemporarilyUnavailable, .wouldBlock: continue
                    case .connectionReset, .socketNotConnected: return
                    default: throw error
                    }
                }
                if count == 0 { return }
                continuation.yield(Array(buffer[0..<count]))
                continue
            }
            if events & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                let error = (try? descriptor.pendingSocketError()) ?? 0
                if error != 0 && error != ECONNRESET { throw SystemError(call: "poll", errno: Errno(rawValue: error)) }
                return
            }
        }
    }
}

extension FileDescriptor {
    /// The socket's pending error (`SO_ERROR`, cleared by reading it): what a failed non-blocking
    /// connect or a reset link left; 0 if none.
    func pendingSocketError() throws(SystemError) -> Int32 {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try SystemError.retrying("getsockopt(SO_ERROR)") { getsockopt(rawValue, SOL_SOCKET, SO_ERROR, &error, &length) }
        return error
    }
}
