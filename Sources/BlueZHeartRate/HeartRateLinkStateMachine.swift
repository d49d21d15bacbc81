public import TrackMeCore

/// The link supervisor's policy as a value: given what happened and when, what to report, whether
/// to connect, forward readings or wait. `HeartRateLink` is the shell that performs the actions.
public struct HeartRateLinkStateMachine: Sendable {
    public enum Event: Sendable, Hashable {
        /// The supervisor starts.
        case start
        /// A wait asked for by `.wait` is over.
        case retryDue
        case connectFailed(reason: String, notFound: Bool)
        case connected(address: BluetoothAddress?)
        case linkLost(reason: String)
    }

    public enum Action: Sendable, Hashable {
        case report(HeartRateLinkState)
        /// Open a connection, discover and subscribe; answer with `.connected` or `.connectFailed`.
        case connect
        /// Deliver readings until the link ends; answer with `.linkLost`.
        case forwardReadings
        /// Sleep on the clock, then answer with `.retryDue`.
        case wait(Duration)
    }

    private var backoff: Backoff
    private var attempt = 0
    private var lostAt: Duration?

    public init(backoff: Backoff) {
        self.backoff = backoff
    }

    /// - Parameters:
    ///   - now: time on the supervisor's clock since it started.
    ///   - random: a draw in [0, 1) for the backoff jitter.
    public mutating func receive(_ event: Event, now: Duration, random: Double) -> [Action] {
        switch event {
        case .start, .retryDue:
            attempt += 1
            return [.report(.searching(attempt: attempt)), .connect]
        case .connectFailed(let reason, let notFound):
            let delay = backoff.nextDelay(random: random)
            return [.report(.unreachable(reason: reason, notFound: notFound, retryIn: delay)), .wait(delay)]
        case .connected(let address):
            backoff.reset()
            attempt = 0
            let gap = lostAt.map { now - $0 }
            return [.report(.connected(address: address, gap: gap)), .forwardReadings]
        case .linkLost(let reason):
            lostAt = now
            let delay = backoff.nextDelay(random: random)
            return [.report(.lost(since: now, reason: reason)), .wait(delay)]
        }
    }
}
