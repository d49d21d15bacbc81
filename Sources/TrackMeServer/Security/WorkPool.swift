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
    func run<T: Sendable>(
        busy: @autoclosure () -> APIError,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        guard admitted.enter(limit: queueLimit) else { throw busy() }
        defer { admitted.leave() }
        let niceness = self.niceness
        return try await threads.run { () throws -> T in
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
            return try work()
        }
    }

    /// Counts work admitted and not yet done.
    private final class Admitted: Sendable {
        private let value = Mutex(0)

        func enter(limit: Int) -> Bool {
            value.withLock { count in
                guard count < limit else { return false }
                count += 1
                return true
            }
        }

        func leave() { value.withLock { $0 -= 1 } }

        var count: Int { value.withLock { $0 } }
    }
}
