/// Exponential backoff with jitter: the one schedule for every retry on the device (the strap's
/// reconnects, gpsd's reconnects, the sync lanes after a failed send). A pure value: the caller
/// supplies the random draw, so tests and the simulation are exact.
///
/// After the n-th consecutive failure the ceiling is `initial * multiplier^(n-1)`, capped at
/// `maximum`; the delay lies in `[(1 - jitter) * ceiling, ceiling]`. `jitter` 0 gives exact
/// delays (one gpsd on loopback has no herd to spread out), 0.2 spreads a strap's reconnects a
/// little, and 1 is "full jitter" (AWS Architecture Blog, "Exponential Backoff And Jitter"),
/// which spreads many devices retrying one server. A server's `Retry-After` wins over the
/// computed delay, up to `retryAfterCap`, so a confused server cannot silence a device for a day.
public struct Backoff: Hashable, Sendable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    /// Fraction of each delay that is random: 0.2 means the delay lies in [0.8 d, d].
    public var jitter: Double
    public var retryAfterCap: Duration
    /// Failed attempts since the last success, for callers that keep the count here.
    public private(set) var failures = 0

    public init(
        initial: Duration = .seconds(1),
        maximum: Duration = .seconds(30),
        multiplier: Double = 2,
        jitter: Double = 0.2,
        retryAfterCap: Duration = .seconds(300)
    ) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = max(1, multiplier)
        self.jitter = min(1, max(0, jitter))
        self.retryAfterCap = retryAfterCap
    }

    /// The strap's reconnects: 1 s doubling to 30 s, 20 % jitter.
    public static let strapReconnect = Backoff()
    /// gpsd's reconnects: 500 ms doubling to 30 s, exact (no jitter).
    public static let gpsdReconnect = Backoff(initial: .milliseconds(500), maximum: .seconds(30), jitter: 0)
    /// The sync lanes: 500 ms doubling to 60 s, full jitter, `Retry-After` honoured up to 5 min.
    public static let sync = Backoff(initial: .milliseconds(500), maximum: .seconds(60), jitter: 1, retryAfterCap: .seconds(300))

    /// The upper bound of the wait after `failures` consecutive failures (at least 1).
    public func ceiling(afterFailures failures: Int) -> Duration {
        var value = initial
        var steps = max(0, min(failures - 1, 62))
        let integral = multiplier.rounded() == multiplier && multiplier < 1e6
        while steps > 0, value < maximum {
            value = integral ? value * Int(multiplier) : value * multiplier
            steps -= 1
        }
        return min(value, maximum)
    }

    /// The wait after `failures` consecutive failures, `random` a draw in [0, 1).
    public func delay(afterFailures failures: Int, retryAfter: Duration? = nil, random: Double) -> Duration {
        if let retryAfter { return min(retryAfter, retryAfterCap) }
        let ceiling = ceiling(afterFailures: failures)
        let seconds = Double(ceiling.components.seconds) + Double(ceiling.components.attoseconds) / 1e18
        let draw = min(1, max(0, random))
        return .nanoseconds(Int64(seconds * (1 - jitter * draw) * 1e9))
    }

    /// The same, drawing from `generator` (the sync lanes' seeded generator): uniform over
    /// `[(1 - jitter) * ceiling, ceiling]` in whole nanoseconds.
    public func delay(
        afterFailures failures: Int,
        retryAfter: Duration?,
        using generator: inout some RandomNumberGenerator
    ) -> Duration {
        if let retryAfter { return min(retryAfter, retryAfterCap) }
        let ceiling = Self.nanoseconds(ceiling(afterFailures: failures))
        guard ceiling > 0 else { return .zero }
        let floor = Int64((Double(ceiling) * (1 - jitter)).rounded(.up))
        return .nanoseconds(Int64.random(in: min(floor, ceiling)...ceiling, using: &generator))
    }

    /// Records a failure and returns the delay before the next attempt; `random` is a draw in
    /// [0, 1) (0: the delay without its random part).
    public mutating func nextDelay(random: Double = 0) -> Duration {
        failures += 1
        return delay(afterFailures: failures, random: random)
    }

    /// Records a success: the next failure starts from `initial` again.
    public mutating func reset() { failures = 0 }

    private static func nanoseconds(_ d: Duration) -> Int64 {
        d.components.seconds * 1_000_000_000 + d.components.attoseconds / 1_000_000_000
    }
}

/// A small seedable generator (SplitMix64) so tests and simulations can replay the jitter.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
