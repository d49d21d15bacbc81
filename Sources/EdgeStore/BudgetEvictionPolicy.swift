// Data path, step 4 (store): the durable buffer on the device, its disk budget and sync cursor.

/// The disk budget's decision: when a commit has left the store over its byte budget, which
/// readings go, in what order, and which never do. Sans I/O, like `DispatchPolicy` and
/// `ReadingsLanePolicy`: facts in, a decision out. `ReadingStore` (ReadingStore+Budget.swift)
/// measures the bytes in use, offers the readings oldest first with what it knows of each,
/// deletes what the policy chose and measures again.
///
/// The rules:
/// 1. A commit that leaves at most `budgetBytes` in use evicts nothing.
/// 2. Otherwise readings go until at most `targetBytes` (95 % of the budget) are in use, so that
///    the next few commits do not each evict again.
/// 3. Readings the server has (synced) go first, oldest first; only then readings it has not,
///    oldest first (those are counted and reported to the server as `dropped_by_budget`).
/// 4. Never dropped: a reading within `alertWindow` of a journaled alert's first critical
///    observation, same boot (the alert's evidence, synced or not); an unsynced reading of a batch
///    in flight (the batch must go again unchanged after a crash). The alert journal itself, the
///    meta counters and the device state are not readings: the budget never touches them.
/// 5. Eviction goes in rounds: each drops an estimate of the readings needed (the excess bytes
///    over the mean bytes per reading, plus 32) and the store measures again. A round that finds
///    nothing it may drop ends the eviction (all that is left is protected, and the store stays
///    over its budget), and so does the 64th round.
struct BudgetEvictionPolicy: Hashable, Sendable {
    /// The most bytes the database's live pages may take (`StoreConfiguration.diskBudgetBytes`).
    let budgetBytes: Int64
    /// Readings this close to an alert's first critical observation are its evidence
    /// (`StoreConfiguration.alertWindow`).
    let alertWindow: Duration

    static let maxRounds = 64
    /// Added to each round's estimate, so that a round that guessed the mean slightly high
    /// does not leave the store a few bytes over its target for another round.
    static let slackPerRound = 32
    /// The estimate of bytes per reading never goes below this (an almost empty store).
    static let minimumBytesPerReading: Int64 = 16

    init(budgetBytes: Int64, alertWindow: Duration) {
        self.budgetBytes = budgetBytes
        self.alertWindow = alertWindow
    }

    init(_ configuration: StoreConfiguration) {
        self.init(budgetBytes: configuration.diskBudgetBytes, alertWindow: configuration.alertWindow)
    }

    /// Where an eviction stops: 95 % of the budget.
    var targetBytes: Int64 { budgetBytes - budgetBytes / 20 }

    /// `alertWindow` in nanoseconds of monotonic time, as readings and alerts are stamped.
    var alertWindowNanoseconds: Int64 {
        Int64(alertWindow.components.seconds) * 1_000_000_000 + alertWindow.components.attoseconds / 1_000_000_000
    }

    /// A reading as the store knows it when it offers it for eviction.
    struct Candidate: Hashable, Sendable {
        var sequence: Int64
        /// The server acknowledged it.
        var synced: Bool
        /// Within the alert window of a journaled alert's first critical observation, same boot.
        var alertEvidence: Bool
        /// Named by a batch reserved and not yet acknowledged.
        var inFlight: Bool

        init(sequence: Int64, synced: Bool, alertEvidence: Bool = false, inFlight: Bool = false) {
            self.sequence = sequence
            self.synced = synced
            self.alertEvidence = alertEvidence
            self.inFlight = inFlight
        }
    }

    /// Whether the budget may ever drop `reading` (rule 4). A synced reading still named by a
    /// batch in flight may go: the server has it (the batch is then resent without it).
    static func mayDrop(_ reading: Candidate) -> Bool {
        if reading.alertEvidence { return false }
        return reading.synced || !reading.inFlight
    }

    /// The eviction a commit that left `usedBytes` in use calls for (nothing to do when that is
    /// within the budget: `nextRound` then answers nil at once).
    func eviction(afterCommitUsing usedBytes: Int64) -> Eviction {
        Eviction(policy: self, usedBytes: usedBytes)
    }

    /// One eviction, from the commit that went over the budget to the store back at its target
    /// (or to nothing more it may drop).
    struct Eviction: Hashable, Sendable {
        let policy: BudgetEvictionPolicy
        /// The bytes in use as last measured.
        private(set) var usedBytes: Int64
        private(set) var roundsDone = 0
        /// Readings dropped by the rounds so far.
        private(set) var dropped = 0
        private var finished: Bool

        init(policy: BudgetEvictionPolicy, usedBytes: Int64) {
            self.policy = policy
            self.usedBytes = usedBytes
            finished = usedBytes <= policy.budgetBytes
        }

        /// The next round's selection, for a store holding `readings` readings, or nil when the
        /// eviction is over: back at the target, a round found nothing to drop, or the last
        /// round was done.
        func nextRound(readings: Int) -> Selection? {
            guard !finished, usedBytes > policy.targetBytes, roundsDone < BudgetEvictionPolicy.maxRounds else { return nil }
            let perReading = max(BudgetEvictionPolicy.minimumBytesPerReading, usedBytes / Int64(max(readings, 1)))
            return Selection(wanted: Int((usedBytes - policy.targetBytes) / perReading) + BudgetEvictionPolicy.slackPerRound)
        }

        /// The round dropped `dropped` readings and the store now uses `usedBytes`.
        mutating func roundEnded(dropped count: Int, usedBytes measured: Int64) {
            roundsDone += 1
            dropped += count
            usedBytes = measured
            if count == 0 { finished = true }
        }
    }

    /// Which readings one round drops. The store offers readings oldest first, pass by pass
    /// (`pass`): the synced ones, then the unsynced ones; the selection takes those it may drop
    /// until it has `wanted`.
    struct Selection: Hashable, Sendable {
        enum Pass: Hashable, Sendable {
            case synced
            case unsynced
        }

        let wanted: Int
        /// The readings the store offers next, oldest first; nil once the selection is complete.
        private(set) var pass: Pass?
        /// Chosen synced readings, oldest first.
        private(set) var synced: [Int64] = []
        /// Chosen unsynced readings, oldest first: the drops reported to the server.
        private(set) var unsynced: [Int64] = []

        init(wanted: Int) {
            self.wanted = wanted
            pass = wanted > 0 ? .synced : nil
        }

        var count: Int { synced.count + unsynced.count }

        /// Offers the next reading of the current pass. Returns whether the selection takes more
        /// of this pass (false: stop offering and call `passEnded`). A reading of another pass
        /// than the current one is declined.
        @discardableResult
        mutating func offer(_ reading: Candidate) -> Bool {
            guard let current = pass else { return false }
            let belongs: Bool
            switch current {
            case .synced: belongs = reading.synced
            case .unsynced: belongs = !reading.synced
            }
            if belongs, BudgetEvictionPolicy.mayDrop(reading) {
                switch current {
                case .synced: synced.append(reading.sequence)
                case .unsynced: unsynced.append(reading.sequence)
                }
            }
            if count >= wanted { pass = nil }
            return pass == current
        }

        /// The store has offered every reading of the current pass it had (or the selection
        /// asked it to stop): the unsynced pass comes next if the synced one was not enough.
        mutating func passEnded() {
            switch pass {
            case .synced: pass = count < wanted ? .unsynced : nil
            case .unsynced, nil: pass = nil
            }
        }
    }
}
