import BlueZHeartRate
import Testing

@Suite struct ReconnectBackoffTests {
    @Test func doublesUpToTheMaximumAndResets() {
        var backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(30), multiplier: 2, jitter: 0.2)
        let delays = (0..<7).map { _ in backoff.nextDelay(random: 0) }
        #expect(delays == [1, 2, 4, 8, 16, 30, 30].map { Duration.seconds($0) })
        backoff.reset()
        #expect(backoff.nextDelay(random: 0) == .seconds(1))
    }

    @Test(arguments: [0.0, 0.5, 0.999])
    func jitterShortensByAtMostItsFraction(random: Double) {
        var backoff = ReconnectBackoff(initial: .seconds(10), maximum: .seconds(30), jitter: 0.2)
        let delay = backoff.nextDelay(random: random)
        #expect(delay <= .seconds(10))
        #expect(delay >= .seconds(8))
        #expect(delay == .nanoseconds(Int64(10e9 * (1 - 0.2 * random))))
    }
}
