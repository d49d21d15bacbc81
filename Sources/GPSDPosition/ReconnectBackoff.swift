/// Exponential backoff between connection attempts: `initial`, doubling, capped at `maximum`.
///
/// No jitter: the agent has one gpsd on loopback, so there is no herd to spread out, and exact
/// delays keep the tests and the simulation deterministic.
public struct ReconnectBackoff: Hashable, Sendable {
    public var initial: Duration
    public var maximum: Duration
    private var next: Duration

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = maximum
        next = initial
    }

    /// The delay before the next attempt; each call doubles the following one, up to `maximum`.
    public mutating func nextDelay() -> Duration {
        let delay = min(next, maximum)
        next = min(next * 2, maximum)
        return delay
    }

    /// Called when a connection worked: the next failure waits `initial` again.
    public mutating func reset() {
        next = initial
    }
}
