import Foundation
import Synchronization
import TrackMeSystem

/// Accepts connections on a listening socket from a dedicated thread and yields them as an
/// `AsyncStream`.
///
/// The thread polls with a short timeout so that `stop()` (or the consumer ending the stream)
/// stops it within `pollMilliseconds`; the thread then closes the listener itself, so no other
/// thread ever races a `close` against its `poll`.
package final class AcceptLoop: Sendable {
    package let connections: AsyncStream<Socket>
    private let stopped: Atomic<Bool>
    private let finished: Mutex<[CheckedContinuation<Void, Never>]?>

    package init(listener: Socket, pollMilliseconds: Int32 = 100, onError: @escaping @Sendable (SocketError) -> Void) {
        let (stream, continuation) = AsyncStream<Socket>.makeStream(bufferingPolicy: .bufferingOldest(64))
        connections = stream
        stopped = Atomic(false)
        finished = Mutex([])
        continuation.onTermination = { [weak self] _ in self?.stop() }
        BlockingThreads.shared.start { [self] in
            while !stopped.load(ordering: .acquiring) {
                do throws(SocketError) {
                    guard try listener.waitReadable(timeoutMilliseconds: pollMilliseconds) else { continue }
                    let connection = try listener.accept()
                    if case .dropped = continuation.yield(connection) { connection.close() }
                } catch {
                    onError(error)
                    // A listener that keeps failing (EMFILE) must not spin the CPU.
                    usleep(UInt32(pollMilliseconds) * 1000)
                }
            }
            listener.close()
            continuation.finish()
            let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
                let all = waiters ?? []
                waiters = nil
                return all
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Asks the thread to stop; it closes the listener within one poll interval.
    package func stop() {
        stopped.store(true, ordering: .releasing)
    }

    /// Stops the thread and waits until it has closed the listener.
    package func stopAndWait() async {
        stop()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyDone = finished.withLock { waiters -> Bool in
                guard waiters != nil else { return true }
                waiters?.append(continuation)
                return false
            }
            if alreadyDone { continuation.resume() }
        }
    }
}
