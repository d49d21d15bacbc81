import Testing
import TrackMeCore

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximumAndResets() {
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), multiplier: 2, jitter: 0.2)
        let delays = (0..<7).map { _ in backoff.nextDelay(random: 0) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        backoff.reset()
        #expect(backoff.nextDelay(random: 0) == .seconds(1))
    }

    @Test(arguments: [0.0, 0.5, 0.999])
    func jitterShortensByAtMostItsFraction(random: Double) {
        var backoff = Backoff(initial: .seconds(10), maximum: .seconds(30), jitter: 0.2)
        let delay = backoff.nextDelay(random: random)
        #expect(delay <= .seconds(10))
        #expect(delay >= .seconds(8))
        #expect(delay == .nanoseconds(Int64(10e9 * (1 - 0.2 * random))))
    }

    /// The presets keep the three schedules the device had before they became one type.
    @Test func presetsKeepTheStrapGpsdAndSyncSchedules() {
        var gpsd = Backoff.gpsdReconnect
        #expect((0..<3).map { _ in gpsd.nextDelay() } == [.milliseconds(500), .seconds(1), .seconds(2)])
        var strap = Backoff.strapReconnect
        #expect(strap.nextDelay(random: 0.999) >= .milliseconds(800))
        let sync = Backoff.sync
        #expect(sync.ceiling(afterFailures: 1) == .milliseconds(500))
        #expect(sync.ceiling(afterFailures: 20) == .seconds(60))
        var generator = SplitMix64(seed: 7)
        for failures in 1...10 {
            let delay = sync.delay(afterFailures: failures, retryAfter: nil, using: &generator)
            #expect(delay >= .zero && delay <= sync.ceiling(afterFailures: failures), "full jitter: anywhere up to the ceiling")
        }
        #expect(sync.delay(afterFailures: 3, retryAfter: .seconds(9000), using: &generator) == .seconds(300))
    }
}
