import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where blocking calls run: OS threads of their own, never Swift's cooperative pool (STYLE 7),
/// kept after their work for the next call rather than one new thread per call.
///
/// The cooperative pool has one thread per core (two here, four on a Pi): a blocking `recv`,
/// `poll` or libcurl transfer there would stall every task, and dispatch's global queues on Linux
/// are capped near the core count too, so a few idle clients would starve a server. A call takes
/// an idle kept thread or starts a new one, so any number of calls may block at once; afterwards
/// up to `keptIdle` threads wait for the next call and the others end. A batch POST every few
/// seconds then costs a thread's wake-up, not its creation (measured: about 25 µs of a batch's
/// 1.1 ms round trip on loopback). A receive loop that runs until stopped (`start`) holds its
/// thread until then.
public final class BlockingThreads: @unchecked Sendable {
    /// The process's threads for blocking calls (the agent's sockets, libcurl, BlueZ).
    public static let shared = BlockingThreads(keptIdle: 4)

    /// Idle threads kept waiting for work; more end when they find none.
    public let keptIdle: Int
    /// Threads alive at once; calls beyond them wait their turn (CPU-bound work such as
    /// password hashing, which must not take more of the machine than this).
    public let maxThreads: Int
    // `@unchecked Sendable` is sound: `jobs`, `idle`, `finishing`, `started` and `alive` are
    // only touched under `condition`.
    private let condition = NSCondition()
    /// Told when the last thread ends, for an owner waiting for that (`waitUntilNoThreadIsAlive`);
    /// not `condition`, whose single wake-ups are for the threads waiting for jobs.
    private let ended = NSCondition()
    /// A job does its blocking work and returns what tells its caller it is done, which its
    /// thread runs once it counts itself free again (`finishing`).
    private typealias Job = @Sendable () -> (@Sendable () -> Void)?
    private var jobs: [Job] = []
    private var idle = 0
    /// Threads whose job is done and that look for the next one before they wait: the caller
    /// told by one of them may call again at once, and its job is theirs, not a new thread's.
    private var finishing = 0
    private var started = 0
    private var alive = 0
    /// Idle threads kept now: `keptIdle` until `endIdleThreads`.
    private var keep: Int

    public init(keptIdle: Int, maxThreads: Int = .max) {
        self.keptIdle = max(0, keptIdle)
        self.maxThreads = max(1, maxThreads)
        keep = self.keptIdle
    }

    /// Ends the threads waiting for work, and keeps none from now on: for a pool whose owner
    /// is done with it (a server that stopped), whose kept threads would otherwise wait for
    /// the process's end. Calls still run; each thread ends when it finds no more work.
    public func endIdleThreads() {
        condition.lock()
        keep = 0
        condition.broadcast()
        condition.unlock()
    }

    /// Runs a blocking `body` on one of these threads and awaits its result.
    public func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            enqueue {
                let result: Result<T, E>
                do throws(E) {
                    result = .success(try body())
                } catch {
                    result = .failure(error)
                }
                return { continuation.resume(returning: result) }
            }
        }
        return try result.get()
    }

    /// Starts `body` on one of these threads and returns at once.
    public func start(_ body: @escaping @Sendable () -> Void) {
        enqueue {
            body()
            return nil
        }
    }

    /// Starts `body` on one of these threads and returns at once; what `body` returns is run on
    /// that thread once it counts itself free, as `run` tells its caller, so that a caller told
    /// there calls again into the same thread. For a caller that needs to stop waiting before
    /// its work is taken (`run` waits until it is done).
    package func startHandingBack(_ body: @escaping @Sendable () -> (@Sendable () -> Void)?) {
        enqueue(body)
    }

    private func enqueue(_ job: @escaping Job) {
        condition.lock()
        jobs.append(job)
        // Each idle or finishing thread takes one job; a job beyond them needs a thread of its
        // own, unless `maxThreads` are alive: then a busy one takes it when done.
        let needsThread = jobs.count > idle + finishing && alive < maxThreads
        if needsThread {
            started += 1
            alive += 1
        } else {
            condition.signal()
        }
        condition.unlock()
        if needsThread { spawn() }
    }

    /// Threads started so far (for tests).
    package var threadsStarted: Int {
        condition.lock()
        defer { condition.unlock() }
        return started
    }

    /// Waits until no thread of these is alive, or for at most `limit`; whether none is (for tests).
    package func waitUntilNoThreadIsAlive(within limit: Duration) -> Bool {
        let (seconds, attoseconds) = limit.components
        let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
        // `ended` is held from each look at `alive` until the wait, and a thread tells it only
        // after it counted itself out, so no ending is missed.
        ended.lock()
        defer { ended.unlock() }
        while threadsAlive > 0 {
            if !ended.wait(until: deadline) { return threadsAlive == 0 }
        }
        return true
    }

    private var threadsAlive: Int {
        condition.lock()
        defer { condition.unlock() }
        return alive
    }

    private func spawn() {
        final class Box {
            let threads: BlockingThreads
            init(_ threads: BlockingThreads) { self.threads = threads }
        }
        let box = Unmanaged.passRetained(Box(self)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread,
            nil,
            { argument in
                guard let argument else { return nil }
                Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().threads.work()
                return nil
            },
            box
        )
        if status == 0 {
            pthread_detach(thread)
        } else {
            // No thread (resource exhaustion): run one job here rather than lose it.
            Unmanaged<Box>.fromOpaque(box).release()
            condition.lock()
            alive -= 1
            let job = jobs.isEmpty ? nil : jobs.removeFirst()
            condition.unlock()
            job?()?()
        }
    }

    /// A thread's life: jobs while there are any, then waiting for more while fewer than
    /// `keptIdle` others wait.
    private func work() {
        condition.lock()
        while true {
            if !jobs.isEmpty {
                let job = jobs.removeFirst()
                condition.unlock()
                let done = job()
                condition.lock()
                if let done {
                    finishing += 1
                    condition.unlock()
                    done()
                    condition.lock()
                    finishing -= 1
                }
                continue
            }
            if idle >= keep { break }
            idle += 1
            condition.wait()
            idle -= 1
        }
        alive -= 1
        let none = alive == 0
        condition.unlock()
        if none {
            ended.lock()
            ended.broadcast()
            ended.unlock()
        }
    }
}
