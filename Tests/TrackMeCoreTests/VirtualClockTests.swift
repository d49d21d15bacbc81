import Synchronization
import Testing
import TrackMeCore

@Suite struct VirtualClockTests {
    @Test func sleeperWakesOnlyWhenTimeReachesItsDeadline() async throws {
        let clock = VirtualClock()
        let task = Task {
            try await clock.sleep(for: .seconds(5))
            return clock.now.offset
        }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(4))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(try await task.value == .seconds(5))
    }

    @Test func cancellingASleeperThrows() async {
        let clock = VirtualClock()
        let task = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    /// A deadline already passed (or reached) wakes the sleeper without anyone moving time: it
    /// must never wait as a sleeper. Whichever happens first ends the wait below, so the test
    /// fails, rather than hangs, if the sleep waits.
    @Test(.timeLimit(.minutes(10)), arguments: [Duration.seconds(3), .seconds(10)])
    func pastDeadlineReturnsAtOnce(deadline: Duration) async throws {
        let clock = VirtualClock()
        clock.advance(by: .seconds(10))
        let returned = Flag()
        let sleeper = Task {
            try await clock.sleep(until: .init(offset: deadline))
            returned.set()
        }
        while !returned.isSet, clock.sleeperCount == 0 { await Task.yield() }
        #expect(clock.sleeperCount == 0, "the sleep waited for time to move")
        clock.advance(by: .seconds(60))  // releases a sleep that did wait, so the test ends
        try await sleeper.value
        #expect(returned.isSet)
    }

    @Test func eventuallyReturnsAsSoonAsTheConditionHolds() async throws {
        let clock = VirtualClock()
        let checks = Counter()
        let waiter = Task {
            try await eventually("300 ms of virtual time", within: .seconds(1), every: .milliseconds(100), clock: clock) {
                checks.increment()
                return clock.now.offset >= .milliseconds(300)
            }
        }
        for _ in 0..<3 {
            await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(100))
        }
        try await waiter.value
        #expect(checks.value == 4)
        #expect(clock.sleeperCount == 0)
    }

    @Test func eventuallyThrowsWhenTheLimitPasses() async throws {
        let clock = VirtualClock()
        let checks = Counter()
        let waiter = Task {
            try await eventually("never", within: .seconds(1), every: .milliseconds(100), clock: clock) {
                checks.increment()
                return false
            }
        }
        for _ in 0..<10 {
            await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(100))
        }
        let error = await #expect(throws: ConditionTimeout.self) { try await waiter.value }
        #expect(error?.description == "never: not within 1.0 seconds")
        // Once at the start, after each step, and the last at the deadline itself.
        #expect(checks.value == 11)
    }
}

private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

private final class Counter: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
}

@Suite struct VirtualClockCancellationTests {
    /// A task already cancelled when it starts to sleep must not wait forever.
    @Test(.timeLimit(.minutes(10))) func sleepingAfterCancellationThrowsAtOnce() async {
        let clock = VirtualClock()
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            do {
                try await clock.sleep(until: clock.now.advanced(by: .seconds(10)), tolerance: nil)
                return false
            } catch {
                return error is CancellationError
            }
        }
        task.cancel()
        #expect(await task.value)
        #expect(clock.sleeperCount == 0)
    }
}
