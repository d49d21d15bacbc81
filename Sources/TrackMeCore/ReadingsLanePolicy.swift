/// The pure policy of the readings lane, beside `DispatchPolicy`: when a batch is due, whether a
/// partly filled batch goes now or waits, when the heartbeat is due, the newest-first batch after
/// a failure or a restart, how small a batch must be after a 413, and how long to wait after a
/// failure (the one `Backoff`, drawn from a seeded generator). No I/O and no clock reads: `now`
/// is the lane clock's offset, given by the caller. The sync engine (EdgeSync) performs it, in
/// the daemon on the real clock and in the simulation on the virtual clock the event loop
/// advances.
public struct ReadingsLanePolicy: Sendable {
    public struct Settings: Hashable, Sendable {
        /// At most this many readings per batch (halved after each 413).
        public var maxBatchReadings: Int
        /// A batch (empty if need be, carrying the heartbeat) goes at least this often.
        public var heartbeatInterval: Duration
        /// How long an idle lane waits before it looks again.
        public var pollInterval: Duration
        /// A partly filled batch waits until this long after the previous batch.
        public var sendInterval: Duration
        public var backoff: Backoff
        /// After a failure or a restart, the newest readings go first in a batch of their own.
        public var latestFirst: Bool

        public init(
            maxBatchReadings: Int,
            heartbeatInterval: Duration,
            pollInterval: Duration,
            sendInterval: Duration,
            backoff: Backoff,
            latestFirst: Bool
        ) {
            self.maxBatchReadings = maxBatchReadings
            self.heartbeatInterval = heartbeatInterval
            self.pollInterval = pollInterval
            self.sendInterval = sendInterval
            self.backoff = backoff
            self.latestFirst = latestFirst
        }
    }

    /// What one step of the lane came to.
    public enum Outcome: Hashable, Sendable {
        /// A batch was acknowledged.
        case sent
        /// Nothing was due.
        case idle
        /// A batch of `readings` went out and failed. `tooLarge`: the server said 413 (it stored
        /// nothing; the readings go again in smaller batches); `rebased`: the store re-based its
        /// numbering on the server's floors and the readings go again at once.
        case sendFailed(readings: Int, retryable: Bool, retryAfter: Duration?, tooLarge: Bool, rebased: Bool)
        /// No batch could be prepared (the store's disk is full or failing).
        case notPrepared(retryable: Bool, retryAfter: Duration?)
    }

    /// When the lane looks again.
    public enum Next: Hashable, Sendable {
        /// At once (after a sent batch more may be waiting; after a 413 or a re-base the same
        /// readings go again).
        case now
        /// After this long: the poll interval when idle, the backoff after a failure.
        case wait(Duration, afterFailure: Bool, refused: Bool)
    }

    public let settings: Settings
    /// Failed sends since the last acknowledged batch.
    public private(set) var failures = 0
    /// Readings per batch: the configured maximum, halved after each 413.
    public private(set) var batchLimit: Int
    /// The newest-first batch is due (after a start or a failure).
    public private(set) var latestDue: Bool
    /// A batch may be in flight in the store (reserved, not acknowledged): true at start and
    /// after a failure, false once a step found none. Lets an idle visit decide without reading
    /// the store.
    public private(set) var mayHaveInFlight = true
    private var lastBatchAt: Duration
    private var random: SplitMix64

    public init(settings: Settings, seed: UInt64, now: Duration = .zero) {
        self.settings = settings
        batchLimit = max(1, settings.maxBatchReadings)
        latestDue = settings.latestFirst
        lastBatchAt = now
        random = SplitMix64(seed: seed)
    }

    /// What the server's last reply asked (`SyncOrders.pollMilliseconds`): a shorter heartbeat
    /// while it may have something to say (a taxi's ride offer); nil: the configured one.
    public private(set) var serverPoll: Duration?

    /// The heartbeat is due: no batch for `heartbeatInterval`, or for the server's poll interval
    /// when that is shorter.
    public func heartbeatDue(now: Duration) -> Bool {
        now - lastBatchAt >= heartbeatInterval
    }

    /// The interval the heartbeat keeps now.
    public var heartbeatInterval: Duration {
        guard let serverPoll, serverPoll > .zero else { return settings.heartbeatInterval }
        return min(settings.heartbeatInterval, serverPoll)
    }

    /// An acknowledged reply's poll request, or its absence (the configured heartbeat again).
    public mutating func serverAsksPoll(_ interval: Duration?) {
        serverPoll = interval
    }

    /// Takes the newest-first turn if it is due (once after a start or a failure).
    public mutating func takeLatestTurn() -> Bool {
        defer { latestDue = false }
        return latestDue
    }

    /// Whether a batch of `available` unsynced readings goes now: a full batch, a due heartbeat,
    /// a drain, or the send interval since the previous batch; otherwise it waits for more.
    public func sendsNow(available: Int, heartbeatDue: Bool, draining: Bool, now: Duration) -> Bool {
        draining || heartbeatDue || available >= batchLimit || now - lastBatchAt >= settings.sendInterval
    }

    /// A step found no batch in flight in the store.
    public mutating func foundNoneInFlight() {
        mayHaveInFlight = false
    }

    /// A heartbeat went alone (`POST /v1/heartbeats`): the heartbeat interval starts over.
    public mutating func heartbeatSentAlone(now: Duration) {
        lastBatchAt = now
    }

    /// The lane's state after a step, and when it looks again.
    public mutating func receive(_ outcome: Outcome, now: Duration) -> Next {
        switch outcome {
        case .sent:
            failures = 0
            latestDue = false
            lastBatchAt = now
            return .now
        case .idle:
            return .wait(settings.pollInterval, afterFailure: false, refused: false)
        case .sendFailed(let readings, let retryable, let retryAfter, let tooLarge, let rebased):
            failures += 1
            latestDue = settings.latestFirst
            mayHaveInFlight = true
            if tooLarge {
                batchLimit = max(1, min(batchLimit, readings) / 2)
                return .now
            }
            if rebased { return .now }
            return wait(retryable: retryable, retryAfter: retryAfter)
        case .notPrepared(let retryable, let retryAfter):
            mayHaveInFlight = true
            return wait(retryable: retryable, retryAfter: retryAfter)
        }
    }

    /// After a failure: the backoff with full jitter (or the server's `Retry-After`); after a
    /// refusal (a 4xx other than 408/429) the backoff's cap, in case the operator fixes it.
    private mutating func wait(retryable: Bool, retryAfter: Duration?) -> Next {
        guard retryable else { return .wait(settings.backoff.maximum, afterFailure: true, refused: true) }
        let delay = settings.backoff.delay(afterFailures: failures, retryAfter: retryAfter, using: &random)
        return .wait(delay, afterFailure: true, refused: false)
    }
}
