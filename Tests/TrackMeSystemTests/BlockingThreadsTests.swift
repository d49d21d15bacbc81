import Foundation
import Glibc
import Testing
import TrackMeSystem

/// Blocking calls run on kept OS threads: off the calling thread, as many at once as there are
/// calls, and one after another on the same few threads rather than a new thread per call.
@Suite struct BlockingThreadsTests {
    struct Refused: Error, Equatable { var code: Int }

    @Test("a call runs off the calling thread and returns its result or its typed error")
    func runsAndReturns() async throws {
        let threads = BlockingThreads(keptIdle: 1)
        let caller = pthread_self()
        let ranElsewhere = await threads.run { pthread_equal(pthread_self(), caller) == 0 }
        #expect(ranElsewhere)
        #expect(await threads.run { 6 * 7 } == 42)
        await #expect(throws: Refused(code: 3)) {
            try await threads.run { () throws(Refused) -> Int in throw Refused(code: 3) }
        }
    }

    @Test("calls one after another reuse the kept threads instead of starting one each")
    func keepsThreads() async {
        let threads = BlockingThreads(keptIdle: 2)
        var seen = Set<UInt>()
        for _ in 0..<200 { seen.insert(await threads.run { UInt(pthread_self()) }) }
        // Without keeping, 200 calls start 200 threads. A call's thread counts itself free
        // before its caller hears back, so the next call is its, not a new thread's, however
        // busy the machine: one thread for all of them.
        #expect(threads.threadsStarted == 1)
        #expect(seen.count == 1)
    }

    /// Blocks each arriving thread until `count` have arrived (or the deadline passes).
    final class Barrier: @unchecked Sendable {
        // Sound: `arrived` is only touched under `condition`.
        private let condition = NSCondition()
        private var arrived = 0
        let count: Int
        let deadline = Date(timeIntervalSinceNow: 30)

        init(count: Int) { self.count = count }

        func arriveAndWait() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            arrived += 1
            condition.broadcast()
            while arrived < count {
                if !condition.wait(until: deadline) { return false }
            }
            return true
        }
    }

    @Test("once its owner is done, the kept threads end; a later call still runs, and its thread ends after it")
    func endsIdleThreads() async {
        let threads = BlockingThreads(keptIdle: 4)
        let barrier = Barrier(count: 4)
        let met = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { await threads.run { barrier.arriveAndWait() } } }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(met)
        #expect(threads.threadsStarted == 4)
        threads.endIdleThreads()
        // A bound on a thread that never ends, not a speed.
        #expect(await BlockingThreads.shared.run { threads.waitUntilNoThreadIsAlive(within: .seconds(30)) })
        #expect(await threads.run { 6 * 7 } == 42)
        #expect(threads.threadsStarted == 5)
        #expect(await BlockingThreads.shared.run { threads.waitUntilNoThreadIsAlive(within: .seconds(30)) })
    }

    @Test("calls that block at the same time each get a thread: eight wait for one another")
    func blocksSideBySide() async {
        let threads = BlockingThreads(keptIdle: 0)
        let barrier = Barrier(count: 8)
        let met = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { await threads.run { barrier.arriveAndWait() } }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(met)
        #expect(threads.threadsStarted == 8)
    }

    @Test("maxThreads bounds the threads alive: sixteen calls at once run on two, never more than two at a time")
    func boundedThreads() async {
        let threads = BlockingThreads(keptIdle: 2, maxThreads: 2)
        final class Peak: @unchecked Sendable {
            // Sound: both counters are only touched under `lock`.
            private let lock = NSLock()
            private var running = 0
            private(set) var peak = 0
            func enter() {
                lock.lock()
                running += 1
                peak = max(peak, running)
                lock.unlock()
            }
            func leave() {
                lock.lock()
                running -= 1
                lock.unlock()
            }
        }
        let peak = Peak()
        let results = await withTaskGroup(of: Int.self) { group in
            for index in 0..<16 {
                group.addTask {
                    await threads.run {
                        peak.enter()
                        defer { peak.leave() }
                        // Work long enough that the calls overlap.
                        var total = 0
                        for value in 0..<200_000 { total &+= value ^ index }
                        return total == -1 ? -1 : index
                    }
                }
            }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(0..<16))
        #expect(peak.peak <= 2)
        #expect(threads.threadsStarted <= 2)
    }
}
