import Foundation
import Testing
import TrackMeCore

@testable import EdgeStore

/// The disk budget's rules, straight on the pure policy (no SQLite), then once through the store.
@Suite("Budget eviction policy")
struct BudgetEvictionPolicyTests {
    typealias Candidate = BudgetEvictionPolicy.Candidate

    static let policy = BudgetEvictionPolicy(budgetBytes: 100_000, alertWindow: .seconds(300))

    /// Offers `readings` (oldest first) the way the store does: the synced ones until the
    /// selection stops taking them, then the unsynced ones.
    static func select(_ readings: [Candidate], wanted: Int) -> BudgetEvictionPolicy.Selection {
        var selection = BudgetEvictionPolicy.Selection(wanted: wanted)
        while let pass = selection.pass {
            for reading in readings where reading.synced == (pass == .synced) {
                if !selection.offer(reading) { break }
            }
            selection.passEnded()
        }
        return selection
    }

    @Test("budget already met: a commit at or under the budget evicts nothing, however much is unsynced", arguments: [0, 50_000, 99_999, 100_000])
    func budgetMet(used: Int64) {
        #expect(Self.policy.eviction(afterCommitUsing: used).nextRound(readings: 1000) == nil)
    }

    @Test("over budget: down to 95 % of it, the first round's size from the mean bytes per reading plus 32")
    func firstRound() throws {
        #expect(Self.policy.targetBytes == 95_000)
        // 100,100 bytes in 1,000 readings: 100 bytes each; 5,100 bytes over the target.
        let round = try #require(Self.policy.eviction(afterCommitUsing: 100_100).nextRound(readings: 1000))
        #expect(round.wanted == 51 + 32)
        #expect(round.pass == .synced)
        // No readings counted (all the bytes are something else): no division by zero, one
        // small round. A mean below 16 bytes per reading is taken as 16.
        #expect(Self.policy.eviction(afterCommitUsing: 100_100).nextRound(readings: 0)?.wanted == 32)
        #expect(Self.policy.eviction(afterCommitUsing: 100_100).nextRound(readings: 1_000_000)?.wanted == 5100 / 16 + 32)
    }

    @Test("synced readings go first, oldest first; unsynced ones only for what is still wanted, oldest first")
    func syncedFirst() {
        // seq 1...10 unsynced, 11...14 synced (acknowledged out of order), 15...20 unsynced.
        let readings = (1...20).map { Candidate(sequence: Int64($0), synced: (11...14).contains($0)) }
        let selection = Self.select(readings, wanted: 7)
        #expect(selection.synced == [11, 12, 13, 14])
        #expect(selection.unsynced == [1, 2, 3])
        #expect(selection.pass == nil)
        // Enough synced ones: no unsynced reading is touched.
        let few = Self.select(readings, wanted: 3)
        #expect(few.synced == [11, 12, 13])
        #expect(few.unsynced.isEmpty)
    }

    @Test("everything unsent: the oldest unsynced go, never one of a batch in flight")
    func everythingUnsent() {
        let inFlight: Set<Int64> = [1, 2, 5]
        let readings = (1...10).map { Candidate(sequence: Int64($0), synced: false, inFlight: inFlight.contains(Int64($0))) }
        let selection = Self.select(readings, wanted: 4)
        #expect(selection.synced.isEmpty)
        #expect(selection.unsynced == [3, 4, 6, 7])
        // All of them in flight: nothing may go.
        let all = (1...10).map { Candidate(sequence: Int64($0), synced: false, inFlight: true) }
        #expect(Self.select(all, wanted: 4).count == 0)
    }

    @Test("a synced reading still named by a batch in flight may go (the server has it)")
    func syncedInFlight() {
        #expect(BudgetEvictionPolicy.mayDrop(Candidate(sequence: 1, synced: true, inFlight: true)))
        #expect(!BudgetEvictionPolicy.mayDrop(Candidate(sequence: 1, synced: false, inFlight: true)))
        #expect(BudgetEvictionPolicy.mayDrop(Candidate(sequence: 1, synced: false)))
    }

    @Test("an alert's evidence is never evicted, synced or not, in flight or not", arguments: [true, false], [true, false])
    func alertEvidenceKept(synced: Bool, inFlight: Bool) {
        #expect(!BudgetEvictionPolicy.mayDrop(Candidate(sequence: 1, synced: synced, alertEvidence: true, inFlight: inFlight)))
    }

    @Test("readings around an alert are skipped in both passes; the ones past them go instead")
    func alertWindowSkipped() {
        // 1...20, the first 8 synced; an alert's window covers 3...6 and 12...15.
        let evidence: Set<Int64> = [3, 4, 5, 6, 12, 13, 14, 15]
        let readings = (1...20).map { Candidate(sequence: Int64($0), synced: $0 <= 8, alertEvidence: evidence.contains(Int64($0))) }
        let selection = Self.select(readings, wanted: 8)
        #expect(selection.synced == [1, 2, 7, 8])
        #expect(selection.unsynced == [9, 10, 11, 16])
    }

    @Test("nothing that may go: the round selects nothing and the eviction ends over budget instead of spinning")
    func onlyProtectedLeft() throws {
        let readings = (1...50).map { Candidate(sequence: Int64($0), synced: $0 % 2 == 0, alertEvidence: true) }
        var eviction = Self.policy.eviction(afterCommitUsing: 200_000)
        let round = try #require(eviction.nextRound(readings: 50))
        let selection = Self.select(readings, wanted: round.wanted)
        #expect(selection.count == 0)
        #expect(selection.pass == nil)
        eviction.roundEnded(dropped: selection.count, usedBytes: 200_000)
        #expect(eviction.nextRound(readings: 50) == nil)
        #expect(eviction.roundsDone == 1)
    }

    @Test("rounds go on while over the target and stop at it, or after 64 rounds")
    func rounds() throws {
        var eviction = Self.policy.eviction(afterCommitUsing: 120_000)
        // Each round frees too little (freed pages may stay in the file): the next round's
        // estimate follows the new measure.
        let first = try #require(eviction.nextRound(readings: 1200))
        eviction.roundEnded(dropped: first.wanted, usedBytes: 110_000)
        let second = try #require(eviction.nextRound(readings: 1200 - first.wanted))
        #expect(second.wanted < first.wanted)
        // Between the target and the budget: still over the target, so on.
        eviction.roundEnded(dropped: second.wanted, usedBytes: 97_000)
        #expect(eviction.nextRound(readings: 900) != nil)
        eviction.roundEnded(dropped: 10, usedBytes: 95_000)
        #expect(eviction.nextRound(readings: 890) == nil)
        #expect(eviction.dropped == first.wanted + second.wanted + 10)

        var stuck = Self.policy.eviction(afterCommitUsing: 200_000)
        for _ in 0..<BudgetEvictionPolicy.maxRounds {
            #expect(stuck.nextRound(readings: 1000) != nil)
            stuck.roundEnded(dropped: 1, usedBytes: 200_000)
        }
        #expect(stuck.nextRound(readings: 1000) == nil)
    }

    @Test("a reading of the other pass, or one offered after the selection is complete, is declined")
    func offersOutOfTurn() {
        var selection = BudgetEvictionPolicy.Selection(wanted: 2)
        let answers = [
            selection.offer(Candidate(sequence: 1, synced: false)),  // synced pass: declined, go on
            selection.offer(Candidate(sequence: 2, synced: true)),
            selection.offer(Candidate(sequence: 3, synced: true)),  // complete
            selection.offer(Candidate(sequence: 4, synced: true)),
        ]
        #expect(answers == [true, true, false, false])
        selection.passEnded()
        #expect(selection.pass == nil)
        #expect(selection.synced == [2, 3])
        #expect(selection.unsynced.isEmpty)
        #expect(BudgetEvictionPolicy.Selection(wanted: 0).pass == nil)
    }

    @Test(
        "the alert window in monotonic nanoseconds",
        arguments: [
            (Duration.seconds(300), Int64(300_000_000_000)), (.milliseconds(1500), 1_500_000_000), (.nanoseconds(7), 7), (.zero, 0),
        ]
    )
    func alertWindow(window: Duration, nanoseconds: Int64) {
        #expect(BudgetEvictionPolicy(budgetBytes: 1, alertWindow: window).alertWindowNanoseconds == nanoseconds)
    }

    @Test("through the store: when every reading is an alert's evidence, commits go on over the budget and nothing is dropped")
    func storeKeepsEvidenceOverBudget() throws {
        let dir = try TemporaryDirectory()
        let budget: Int64 = 80_000
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: dir.storePath, diskBudgetBytes: budget, alertWindow: .seconds(3600)),
            logger: quiet
        )
        // Readings are 0.5 s apart from 1 s: an alert at 10 minutes covers the first 2,000 and more.
        #expect(store.appendAlert(alertUpdate(id: "sos", at: 600_000_000_000)) == .durable)
        var appended: [Int64] = []
        for chunk in stride(from: 0, to: 2000, by: 200) { appended += try store.append(newReadings(chunk..<chunk + 200)) }
        let stats = store.statistics()
        #expect(stats.usedBytes > budget)
        #expect(stats.readings == 2000)
        #expect(stats.droppedByBudgetTotal == 0)
        #expect(try store.sequenceNumbers() == appended)
        // A reading outside the window is the one that goes.
        let outside = try store.append(newReadings(20_000..<20_001))
        #expect(store.statistics().droppedByBudgetTotal == 1)
        #expect(try store.sequenceNumbers() == appended)
        #expect(!(try store.sequenceNumbers()).contains(outside[0]))
    }
}
