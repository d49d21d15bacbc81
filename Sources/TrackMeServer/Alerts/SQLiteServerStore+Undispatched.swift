import GRDB
import TrackMeCore

extension SQLiteServerStore {
    func keepUndispatchedAlert(_ update: AlertUpdate, body: String, receivedMilliseconds: Int64) async throws -> UndispatchedAlertOutcome {
        // Sealed before the transaction: a new person's key is in the key store before the first
        // value sealed under it is committed.
        let sealed = try await personKeys.sealAlertBody(body, owner: update.alert.deviceID, alertID: update.alert.id)
        return try await pool.write { db in
            if let owner = try String.fetchOne(db, sql: "SELECT device_id FROM alerts WHERE alert_id = ?", arguments: [update.alert.id]) {
                return owner == update.alert.deviceID ? .dispatched : .foreignAlert
            }
            let owner = try String.fetchOne(db, sql: "SELECT device_id FROM undispatched_alerts WHERE alert_id = ?", arguments: [update.alert.id])
            if let owner, owner != update.alert.deviceID { return .foreignAlert }
            try db.execute(
                sql: """
                    INSERT INTO undispatched_alerts (alert_id, device_id, kind, reason, state, update_seq, body, raised_ms, updated_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (alert_id) DO UPDATE SET kind = excluded.kind, reason = excluded.reason, state = excluded.state,
                        update_seq = excluded.update_seq, body = excluded.body, updated_ms = excluded.updated_ms
                    WHERE excluded.update_seq > undispatched_alerts.update_seq
                    """,
                arguments: [
                    update.alert.id, update.alert.deviceID, update.alert.kind.rawValue, update.alert.reason, update.alert.state.rawValue,
                    update.updateSequence, sealed, receivedMilliseconds, receivedMilliseconds,
                ]
            )
            return .kept
        }
    }

    func handUndispatchedAlertToDesk(id: String, deviceID: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM undispatched_alerts WHERE alert_id = ? AND device_id = ?", arguments: [id, deviceID])
        }
    }

    func isUndispatchedAlert(id: String) async throws -> Bool {
        try await pool.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM undispatched_alerts WHERE alert_id = ?", arguments: [id]) ?? false }
    }

    func undispatchedAlerts(
        deviceIDs: [String],
        before: (raisedMilliseconds: Int64, alertID: String)?,
        limit: Int?
    ) async throws -> [UndispatchedAlert] {
        guard !deviceIDs.isEmpty else { return [] }
        var sql = """
            SELECT alert_id, device_id, kind, reason, state, update_seq, body, raised_ms, updated_ms FROM undispatched_alerts
            WHERE device_id IN (\(deviceIDs.map { _ in "?" }.joined(separator: ",")))
            """
        var arguments = StatementArguments(deviceIDs)
        SQLiteKeysetPage(time: "raised_ms", id: "alert_id", newestFirst: true)
            .append(to: &sql, &arguments, after: before.map { ($0.raisedMilliseconds, $0.alertID) }, limit: limit, filtered: true)
        let finalSQL = sql
        let finalArguments = arguments
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map { row in
                try UndispatchedAlert.stored(
                    alertID: row.decode(forColumn: "alert_id"),
                    deviceID: row.decode(forColumn: "device_id"),
                    kind: row.decode(forColumn: "kind"),
                    reason: row.decode(forColumn: "reason"),
                    state: row.decode(forColumn: "state"),
                    updateSequence: row.decode(forColumn: "update_seq"),
                    body: row.decode(forColumn: "body"),
                    raisedMilliseconds: row.decode(forColumn: "raised_ms"),
                    updatedMilliseconds: row.decode(forColumn: "updated_ms")
                )
            }
        }
        return try await personKeys.readable(rows)
    }
}
