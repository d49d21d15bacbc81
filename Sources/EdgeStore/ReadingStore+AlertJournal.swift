import Foundation
import GRDB
import Logging
import Synchronization
public import TrackMeCore

/// Whether an alert update reached the disk.
public enum AlertJournalOutcome: Hashable, Sendable {
    /// Committed and fsynced before the call returned.
    case durable
    /// The journal could not be written (disk full, read-only, I/O error). The update is held
    /// in memory, offered as pending (`pendingAlertUpdates()`), and written when the store recovers; the
    /// caller must hand it to the dispatch lane from memory and must not wait for the disk.
    case memoryOnly(StoreError)
}

/// The alert journal (`alert_updates`): each update committed and fsynced on its own, held in
/// memory while the disk refuses it, offered to the dispatch lane until delivered; rows that fail
/// to open or decode go to `alert_quarantine`.
extension ReadingStore {
    /// Journals an alert update durably at once (its own transaction and fsync: alerts never
    /// wait for a group commit). If the disk fails the update is kept in memory (see
    /// `AlertJournalOutcome.memoryOnly`) and written when the store recovers.
    public func appendAlert(_ update: AlertUpdate) -> AlertJournalOutcome {
        retryMemoryAlerts()
        do {
            try writeAlert(update)
            if let fallback = state.withLock({ $0.memoryFallback }) { return .memoryOnly(fallback) }
            return .durable
        } catch {
            state.withLock { s in
                if !s.memoryAlerts.contains(where: { $0.alert.id == update.alert.id && $0.updateSequence == update.updateSequence }) {
                    s.memoryAlerts.append(update)
                }
            }
            logger.info(
                "alert journal write failed, alert kept in memory",
                metadata: ["alert.id": "\(update.alert.id)", "store.error": "\(error)"]
            )
            return .memoryOnly(error)
        }
    }

    private func writeAlert(_ update: AlertUpdate) throws(StoreError) {
        let delivered = state.withLock { $0.deliveredUnrecorded.contains(AlertUpdateKey(update)) }
        do {
            let body = try storedAlertBody(update)
            try write { db in
                let boot = try bootRef(update.alert.firstCritical.bootID, db)
                try db.cachedStatement(
                    sql: "INSERT OR IGNORE INTO alert_updates (alert_id, update_seq, boot, mono_ns, body, delivered) VALUES (?, ?, ?, ?, ?, ?)"
                ).execute(
                    arguments: [
                        update.alert.id, update.updateSequence, boot, Int64(bitPattern: update.alert.firstCritical.monotonicNanoseconds), body,
                        delivered ? 1 : 0,
                    ])
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// One update of one alert.
    struct AlertUpdateKey: Hashable, Sendable {
        var alertID: String
        var updateSequence: Int

        init(alertID: String, updateSequence: Int) {
            self.alertID = alertID
            self.updateSequence = updateSequence
        }

        init(_ update: AlertUpdate) {
            self.init(alertID: update.alert.id, updateSequence: update.updateSequence)
        }
    }

    /// Writes alert updates held in memory, and deliveries not yet recorded, once the disk
    /// accepts writes again.
    public func retryMemoryAlerts() {
        let (pending, delivered) = state.withLock { ($0.memoryAlerts, $0.deliveredUnrecorded) }
        if pending.isEmpty, delivered.isEmpty { return }
        for update in pending {
            do {
                try writeAlert(update)
                state.withLock { s in
                    s.memoryAlerts.removeAll { $0.alert.id == update.alert.id && $0.updateSequence == update.updateSequence }
                    if s.memoryFallback == nil { s.health = .healthy }
                }
            } catch {
                return
            }
        }
        for key in delivered {
            do {
                try recordDelivered(alertID: key.alertID, updateSequence: key.updateSequence)
                state.withLock { _ = $0.deliveredUnrecorded.remove(key) }
            } catch {
                return
            }
        }
    }

    /// Alert updates not yet delivered to the server, journaled or memory-only, in the order they
    /// must be sent (by alert, then update sequence).
    public func pendingAlertUpdates() -> [AlertUpdate] {
        let memory = state.withLock { $0.memoryAlerts }
        let rows =
            (try? readStatement { db in
                try Row.fetchAll(db.cachedStatement(sql: "SELECT alert_id, update_seq, body FROM alert_updates WHERE delivered = 0 ORDER BY rowid"))
            }) ?? []
        if rows.isEmpty, memory.isEmpty { return [] }
        let journaled = decodeAlertRows(rows)
        quarantineFailedAlertRows()
        var seen = state.withLock { $0.deliveredUnrecorded }
        var out: [AlertUpdate] = []
        for u in journaled + memory where seen.insert(AlertUpdateKey(u)).inserted {
            out.append(u)
        }
        return out
    }

    /// Whether `pendingAlertUpdates()` has anything to offer, without decoding any update: cheap
    /// enough to ask every second. (An update whose journal row cannot be opened or decoded
    /// counts as pending here until `pendingAlertUpdates()` has moved it to `alert_quarantine`.)
    public func hasPendingAlertUpdates() -> Bool {
        let (memory, deliveredUnrecorded) = state.withLock { (!$0.memoryAlerts.isEmpty, !$0.deliveredUnrecorded.isEmpty) }
        // Deliveries the disk has not recorded yet hide rows the journal still calls pending:
        // only the full answer can tell (rare: the disk failed while an alert was out).
        if deliveredUnrecorded { return !pendingAlertUpdates().isEmpty }
        if memory { return true }
        let exists = try? readStatement { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM alert_updates WHERE delivered = 0)"))
        }
        return (exists ?? nil) ?? false
    }

    /// Records that the server has an alert update; it is not offered again. When the disk
    /// cannot record it, the delivery is remembered in memory and recorded later.
    public func markAlertUpdateDelivered(alertID: String, updateSequence: Int) {
        state.withLock { _ = $0.deliveredUnrecorded.insert(AlertUpdateKey(alertID: alertID, updateSequence: updateSequence)) }
        retryMemoryAlerts()
    }

    private func recordDelivered(alertID: String, updateSequence: Int) throws(StoreError) {
        do {
            try write { db in
                try db.cachedStatement(sql: "UPDATE alert_updates SET delivered = 1 WHERE alert_id = ? AND update_seq = ?")
                    .execute(arguments: [alertID, updateSequence])
                // Position and escalation updates are sent, not journaled; their numbers are
                // remembered so that a restarted agent goes on above them.
                try db.cachedStatement(
                    sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)"
                ).execute(arguments: [MetaKey.alertDelivered(alertID), updateSequence])
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// The number for an alert's next update after a restart: above every update of it the
    /// journal holds or the server was seen to take (the server ignores a number it already
    /// has, so a restarted agent that numbered from 1 again would go unheard), skipping one:
    /// the dispatch lane sends one update at a time, so at most one may have reached the
    /// server without its delivery being recorded before the agent stopped. (The end-to-end
    /// test caught exactly that: a SIGTERM during a position update, and the cancellation
    /// after the restart took that update's number and was ignored.)
    public func nextAlertUpdateSequence(alertID: String) throws(StoreError) -> Int {
        let highest = try read { db in
            let journaled = try Int.fetchOne(db, sql: "SELECT MAX(update_seq) FROM alert_updates WHERE alert_id = ?", arguments: [alertID])
            let delivered = try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.alertDelivered(alertID)])
            return max(journaled ?? 0, delivered ?? 0)
        }
        let unrecorded = state.withLock { s in
            s.deliveredUnrecorded.filter { $0.alertID == alertID }.map(\.updateSequence).max() ?? 0
        }
        return max(highest, unrecorded) + 2
    }

    /// The latest journaled update of every alert (its current state), oldest alert first.
    /// A row that cannot be opened or decoded is left out and moved to `alert_quarantine`.
    public func alertStates() throws(StoreError) -> [AlertUpdate] {
        defer { quarantineFailedAlertRows() }
        let rows = try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT alert_id, update_seq, body FROM alert_updates a WHERE update_seq = (
                        SELECT MAX(update_seq) FROM alert_updates b WHERE b.alert_id = a.alert_id) ORDER BY rowid
                    """
            )
        }
        return decodeAlertRows(rows)
    }

    func notedFailedAlertRow(_ key: AlertUpdateKey, _ reason: String) {
        state.withLock { $0.failedAlertRows[key] = reason }
    }

    /// Moves the alert journal rows that failed during the last read to `alert_quarantine`
    /// (byte for byte, with the reason) and logs them; if the disk cannot take it now, the next
    /// read notes them again.
    private func quarantineFailedAlertRows() {
        let failed = state.withLock { s -> [AlertUpdateKey: String] in
            defer { s.failedAlertRows = [:] }
            return s.failedAlertRows
        }
        guard !failed.isEmpty else { return }
        let ordered = failed.sorted { ($0.key.alertID, $0.key.updateSequence) < ($1.key.alertID, $1.key.updateSequence) }
        do {
            try write { db in
                var moved = 0
                for (key, reason) in ordered {
                    try db.execute(
                        sql: """
                            INSERT INTO alert_quarantine (alert_id, update_seq, boot, mono_ns, body, delivered, reason)
                            SELECT alert_id, update_seq, boot, mono_ns, body, delivered, ? FROM alert_updates WHERE alert_id = ? AND update_seq = ?
                            """,
                        arguments: [reason, key.alertID, key.updateSequence]
                    )
                    try db.execute(
                        sql: "DELETE FROM alert_updates WHERE alert_id = ? AND update_seq = ?",
                        arguments: [key.alertID, key.updateSequence]
                    )
                    moved += db.changesCount
                }
                if moved > 0 {
                    try db.execute(
                        sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                        arguments: [MetaKey.alertQuarantinedTotal, moved]
                    )
                }
            }
            for (key, reason) in ordered {
                logger.info(
                    "alert journal row failed to open or decode, quarantined",
                    metadata: ["alert.id": "\(key.alertID)", "alert.update_seq": "\(key.updateSequence)", "store.reason": "\(reason)"]
                )
            }
        } catch {
            noteFailure(Self.storeError(error, path: configuration.path))
        }
    }

    /// Rows in `alert_quarantine`: alert id, update number and why (tests and tools).
    public func quarantinedAlertRows() throws(StoreError) -> [(alertID: String, updateSequence: Int, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT alert_id, update_seq, reason FROM alert_quarantine ORDER BY rowid").map {
                ($0[0] as String? ?? "", $0[1] as Int? ?? 0, $0[2] as String? ?? "")
            }
        }
    }
}
