import Synchronization
import TrackMeCore
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// One kind of CPU-bound work on threads of its own, so that a flood of it cannot take the
/// cooperative pool's threads, which take device alerts and every other request in. At most
/// `threads` run at once, at the nice value `niceness` (Linux's nice is per thread: the kernel
/// gives the core to the rest of the process first when both want it); at most `queueLimit` are
/// admitted, running or waiting; past that the caller is told to come back without costing the
/// work. `hardware/SERVER-POOLS.md` lists the pools and how each is sized.
struct WorkPool: Sendable {
    let queueLimit: Int
    let niceness: Int32
    private let threads: BlockingThreads
    private let admitted = Admitted()

    init(threads: Int, queueLimit: Int, niceness: Int32) {
        self.queueLimit = max(1, queueLimit)
        self.niceness = niceness
        self.threads = BlockingThreads(keptIdle: max(1, threads), maxThreads: max(1, threads))
    }

    /// Work admitted and not yet done (for tests and `/metrics`).
    var inFlight: Int { admitted.count }

    /// Threads started so far (at most `threads`).
    var threadsStarted: Int { threads.threadsStarted }

    /// Runs `work` on one of the pool's threads; throws `busy()` at once when `queueLimit` are
    /// already admitted.
    ///
    /// A caller cancelled while its work waits for a thread (a download whose client hung up)
    /// is told `CancellationError` at once, and the work is dropped when its turn comes rather
    /// than run for no one. Work already running finishes (it is one page, and the caller waits
    /// for it, so no work of a request outlives it); the caller's next step sees the cancellation.
    func run<T: Sendable>(
        busy: @autoclosure () -> APIError,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        guard admitted.enter(limit: queueLimit) else { throw busy() }
        let niceness = self.niceness
        let admitted = self.admitted
        let job = Job<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                job.wait(continuation)
                threads.startHandingBack { () -> (@Sendable () -> Void)? in
                    guard job.start() else {
                        admitted.drop()
                        return nil
                    }
                    _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
                    let result = Result { try work() }
                    admitted.leave()
                    return { job.finish(result) }
                }
            }
        } onCancel: {
            job.cancel()
        }
    }

    /// Ends the pool's idle threads once its server has stopped (`BlockingThreads.endIdleThreads`).
    func endIdleThreads() {
        threads.endIdleThreads()
    }

    /// Whether no thread of the pool is alive, waiting for at most `limit` (for tests).
    func waitUntilNoThreadIsAlive(within limit: Duration) -> Bool {
        threads.waitUntilNoThreadIsAlive(within: limit)
    }

    /// Work dropped unstarted because its caller was cancelled while it waited (for tests).
    var dropped: Int { admitted.dropped }

    /// Work run to its end (for tests).
    var completed: Int { admitted.completed }

    /// One caller's work: waiting for a thread, taken by one, done, or dropped because its caller
    /// went first. The caller is told exactly once.
    private final class Job<T: Sendable>: Sendable {
        private enum State {
            case waiting(CheckedContinuation<T, any Error>?)
            case running(CheckedContinuation<T, any Error>?)
            case cancelled
            case done
        }

        private let state = Mutex(State.waiting(nil))

        /// The caller's continuation; resumed at once when the caller was cancelled already.
        func wait(_ continuation: CheckedContinuation<T, any Error>) {
            let cancelled = state.withLock { state -> Bool in
                switch state {
                case .waiting:
                    state = .waiting(continuation)
                    return false
                case .cancelled:
                    return true
                case .running, .done:
                    // `wait` comes before the work is queued: nothing can have taken it yet.
                    return false
                }
            }
            if cancelled { continuation.resume(throwing: CancellationError()) }
        }

        /// Whether a thread may run the work: false when the caller has gone meanwhile.
        func start() -> Bool {
            state.withLock { state in
                switch state {
                case .waiting(let continuation):
                    state = .running(continuation)
                    return true
                case .running, .cancelled, .done:
                    return false
                }
            }
        }

        func cancel() {
            let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
                guard case .waiting(let continuation) = state else { return nil }
                state = .cancelled
                return continuation
            }
            continuation?.resume(throwing: CancellationError())
        }

        func finish(_ result: Result<T, any Error>) {
            let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
                guard case .running(let continuation) = state else { return nil }
                state = .done
                return continuation
            }
            continuation?.resume(with: result)
        }
    }

    /// Counts work admitted and not yet done, and how admitted work ended.
    private final class Admitted: Sendable {
        private struct Counts {
            var inFlight = 0
            var completed = 0
            var dropped = 0
        }

        private let value = Mutex(Counts())

        func enter(limit: Int) -> Bool {
            value.withLock { counts in
                guard counts.inFlight < limit else { return false }
                counts.inFlight += 1
                return true
            }
        }

        func leave() {
            value.withLock { counts in
                counts.inFlight -= 1
                counts.completed += 1
            }
        }

        func drop() {
            value.withLock { counts in
                counts.inFlight -= 1
                counts.dropped += 1
            }
        }

        var count: Int { value.withLock { $0.inFlight } }
        var completed: Int { value.withLock { $0.completed } }
        var dropped: Int { value.withLock { $0.dropped } }
    }
}
