/// Exponential backoff with jitter for reconnect attempts. A pure value: the caller supplies the
/// random draw, so tests are exact.
public struct ReconnectBackoff: Hashable, Sendable {
    public var initial: Duration
    public var maximum: Duration
    public var multiplier: Double
    /// Fraction of each delay that is random: 0.2 means the delay lies in [0.8 d, d].
    public var jitter: Double
    /// Failed attempts since the last success.
    public private(set) var failures = 0

    public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(30), multiplier: Double = 2, jitter: Double = 0.2) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.jitter = min(1, max(0, jitter))
    }

    /// Records a failure and returns the delay before the next attempt. `random` is a draw in
    /// [0, 1).
    public mutating func nextDelay(random: Double) -> Duration {
        let exponent = Double(min(failures, 62))
        failures += 1
        let base = min(seconds(maximum), seconds(initial) * pow2(exponent, multiplier))
        let draw = min(1, max(0, random))
        let delay = base * (1 - jitter * draw)
        return .nanoseconds(Int64(delay * 1e9))
    }

    /// Records a success: the next failure starts from `initial` again.
    public mutating func reset() { failures = 0 }

    private func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private func pow2(_ exponent: Double, _ base: Double) -> Double {
        var result = 1.0
        var n = Int(exponent)
        while n > 0 && result < 1e12 {
            result *= base
            n -= 1
        }
        return result
    }
}
