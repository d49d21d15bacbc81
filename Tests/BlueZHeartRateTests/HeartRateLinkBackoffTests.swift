import BlueZHeartRate
import Logging
import Synchronization
import Testing
import TrackMeCore

/// The supervisor retries a strap it cannot reach with exponential backoff and jitter on its
/// injected clock, and never before the clock says so.
@Suite(.timeLimit(.minutes(10))) struct HeartRateLinkBackoffTests {
    struct Absent: Error, CustomStringConvertible {
        var description: String { "strap absent" }
    }

    @Test func unreachableStrapIsRetriedWithBackoffOnTheClock() async throws {
        let clock = VirtualClock()
        let attempts = Atomic<Int>(0)
        let connector = StrapConnector {
            attempts.add(1, ordering: .relaxed)
            throw Absent()
        }
        let link = HeartRateLink(
            connector: connector,
            configuration: .init(backoff: Backoff(initial: .seconds(1), maximum: .seconds(4), jitter: 0.2)),
            clock: clock,
            logger: Logger(label: "test.backoff"),
            random: { 0.5 }
        )
        var events = link.events().makeAsyncIterator()

        // Delays: 1, 2, 4, 4 s shortened by the jitter draw 0.5 × 20 % = 10 %.
        let expected: [Duration] = [.milliseconds(900), .milliseconds(1800), .milliseconds(3600), .milliseconds(3600)]
        for (index, delay) in expected.enumerated() {
            #expect(await events.next() == .linkState(.searching(attempt: index + 1)))
            guard case .linkState(.unreachable(let reason, let notFound, let retryIn)) = await events.next() else {
                Issue.record("expected unreachable")
                return
            }
            #expect(reason == "strap absent")
            #expect(notFound == false)
            #expect(retryIn == delay)
            await clock.waitForSleepers(1)
            #expect(attempts.load(ordering: .relaxed) == index + 1)
            // Just short of the delay nothing happens; at the delay the next attempt starts.
            clock.advance(by: delay - .milliseconds(1))
            #expect(clock.sleeperCount == 1)
            clock.advance(by: .milliseconds(1))
        }
        #expect(await events.next() == .linkState(.searching(attempt: 5)))
    }
}
