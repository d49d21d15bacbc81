/// Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
/// Jitter"): after the n-th consecutive failure wait a uniformly random time in
/// `0 ... min(cap, base * 2^(n-1))`. A server's `Retry-After` wins over the computed delay (up to
/// `retryAfterCap`, so a confused server cannot silence the device for a day).
public struct BackoffPolicy: Hashable, Sendable {
    public var base: Duration
    public var cap: Duration
    public var retryAfterCap: Duration

    public init(base: Duration = .milliseconds(500), cap: Duration = .seconds(60), retryAfterCap: Duration = .seconds(300)) {
        self.base = base
        self.cap = cap
        self.retryAfterCap = retryAfterCap
    }

    /// The upper bound of the wait after `failures` consecutive failures (at least 1).
    public func ceiling(afterFailures failures: Int) -> Duration {
        let exponent = max(0, min(failures - 1, 30))
        let grown = base * (1 << exponent)
        return min(cap, grown)
    }

    /// The wait before the next attempt.
    public func delay(
        afterFailures failures: Int, retryAfter: Duration?, using generator: inout some RandomNumberGenerator
    ) -> Duration {
        if let retryAfter { return min(retryAfter, retryAfterCap) }
        let ceiling = ceiling(afterFailures: failures)
        let nanos = ceiling.components.seconds * 1_000_000_000 + ceiling.components.attoseconds / 1_000_000_000
        guard nanos > 0 else { return .zero }
        return .nanoseconds(Int64.random(in: 0...nanos, using: &generator))
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
