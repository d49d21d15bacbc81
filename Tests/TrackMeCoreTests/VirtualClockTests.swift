import Testing
import TrackMeCore

@Suite struct VirtualClockTests {
    @Test func sleeperWakesOnlyWhenTimeReachesItsDeadline() async throws {
        let clock = VirtualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)); return clock.now.offset }
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

    @Test func pastDeadlineReturnsAtOnce() async throws {
        let clock = VirtualClock()
        clock.advance(by: .seconds(10))
        try await clock.sleep(until: .init(offset: .seconds(3)))
    }
}

@Suite struct VirtualClockCancellationTests {
    /// A task already cancelled when it starts to sleep must not wait forever.
    @Test(.timeLimit(.minutes(1))) func sleepingAfterCancellationThrowsAtOnce() async {
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
