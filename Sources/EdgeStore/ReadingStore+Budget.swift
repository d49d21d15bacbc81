import GRDB
import Logging
import Synchronization

/// The disk budget: after a commit that left the store over it, the store performs what
/// `BudgetEvictionPolicy` decides (which readings go, in what order, which never do). This file
/// only measures, offers the readings and deletes; the rules are the policy's.
extension ReadingStore {
    /// `measured`: the bytes in use as the commit that just ended saw them.
    func enforceBudget(used measured: Int64) throws(StoreError) {
        var eviction = BudgetEvictionPolicy(configuration).eviction(afterCommitUsing: measured)
        do {
            while var selection = eviction.nextRound(readings: state.withLock { $0.rowCount }) {
                let (synced, unsynced, usedAfter) = try write { db -> (Int, Int, Int64) in
                    try self.offerCandidates(to: &selection, db)
                    let delete = try db.cachedStatement(sql: "DELETE FROM readings WHERE seq IN (SELECT value FROM json_each(?))")
                    var synced = 0
                    if !selection.synced.isEmpty {
                        try delete.execute(arguments: [Self.jsonArray(selection.synced)])
                        synced = db.changesCount
                    }
                    var unsynced = 0
                    if !selection.unsynced.isEmpty {
                        try delete.execute(arguments: [Self.jsonArray(selection.unsynced)])
                        unsynced = db.changesCount
                    }
                    if unsynced > 0 { try self.addDropped(Int64(unsynced), db) }
                    return (synced, unsynced, try self.usedBytes(db))
                }
                state.withLock { s in
                    s.rowCount -= synced + unsynced
                    s.unsyncedCount -= unsynced
                }
                if unsynced > 0 {
                    logger.info("disk budget reached, unsynced readings dropped", metadata: ["store.dropped": "\(unsynced)"])
                }
                eviction.roundEnded(dropped: synced + unsynced, usedBytes: usedAfter)
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// Offers the readings to `selection` oldest first, pass by pass, until it is complete. Whether
    /// a reading is an alert's evidence is one correlated `EXISTS` over the `alert_updates_window`
    /// index (v2), so its cost per reading stays the same however many alerts the journal holds:
    /// this runs in every commit that evicts, and an `OR` of one term per alert ever journaled
    /// would make a device's commits slower with every alert of its life.
    private func offerCandidates(to selection: inout BudgetEvictionPolicy.Selection, _ db: Database) throws {
        let window = BudgetEvictionPolicy(configuration).alertWindowNanoseconds
        let reserved = try reservedSequences(db)
        let candidates = try db.cachedStatement(
            sql: """
                SELECT seq, EXISTS (SELECT 1 FROM alert_updates a WHERE a.boot = readings.boot
                    AND a.mono_ns BETWEEN readings.mono_ns - ? AND readings.mono_ns + ?)
                FROM readings WHERE synced = ? ORDER BY seq
                """
        )
        while let pass = selection.pass {
            let synced = pass == .synced
            let cursor = try Row.fetchCursor(candidates, arguments: [window, window, synced ? 1 : 0])
            while let row = try cursor.next() {
                guard let seq = row[0] as Int64? else { continue }
                let candidate = BudgetEvictionPolicy.Candidate(
                    sequence: seq,
                    synced: synced,
                    alertEvidence: (row[1] as Bool?) ?? true,
                    inFlight: reserved.contains(seq)
                )
                if !selection.offer(candidate) { break }
            }
            selection.passEnded()
        }
    }
}
