#if PostgreSQL
import PostgresNIO
import TrackMeCore

extension PostgresServerStore {
    func keepUndispatchedAlert(_ update: AlertUpdate, body: String, receivedMilliseconds: Int64) async throws -> UndispatchedAlertOutcome {
        // Sealed before the transaction, as `SQLiteServerStore.keepUndispatchedAlert`.
        let sealed = try await personKeys.sealAlertBody(body, owner: update.alert.deviceID, alertID: update.alert.id)
        let alert = update.alert
        let sequence = Int64(update.updateSequence)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let desk = try await collect(
                connection.query("SELECT device_id FROM alerts WHERE alert_id = \(alert.id)", logger: logger).decode(String.self)
            )
            if let owner = desk.first { return owner == alert.deviceID ? .dispatched : .foreignAlert }
            let owners = try await collect(
                connection.query(
                    """
                    INSERT INTO undispatched_alerts (alert_id, device_id, kind, reason, state, update_seq, body, raised_ms, updated_ms)
                    VALUES (\(alert.id), \(alert.deviceID), \(alert.kind.rawValue), \(alert.reason), \(alert.state.rawValue), \(sequence),
                        \(sealed), \(receivedMilliseconds), \(receivedMilliseconds))
                    ON CONFLICT (alert_id) DO UPDATE SET kind = EXCLUDED.kind, reason = EXCLUDED.reason, state = EXCLUDED.state,
                        update_seq = EXCLUDED.update_seq, body = EXCLUDED.body, updated_ms = EXCLUDED.updated_ms
                    WHERE EXCLUDED.update_seq > undispatched_alerts.update_seq AND undispatched_alerts.device_id = EXCLUDED.device_id
                    RETURNING device_id
                    """,
                    logger: logger
                ).decode(String.self)
            )
            if owners.isEmpty {
                // Not written: an older update, or another device's alert.
                let stored = try await collect(
                    connection.query("SELECT device_id FROM undispatched_alerts WHERE alert_id = \(alert.id)", logger: logger).decode(String.self)
                )
                if let owner = stored.first, owner != alert.deviceID { return .foreignAlert }
            }
            return .kept
        }
    }

    func handUndispatchedAlertToDesk(id: String, deviceID: String) async throws {
        try await client.query("DELETE FROM undispatched_alerts WHERE alert_id = \(id) AND device_id = \(deviceID)", logger: logger)
    }

    func isUndispatchedAlert(id: String) async throws -> Bool {
        !(try await client.query("SELECT 1 FROM undispatched_alerts WHERE alert_id = \(id)", logger: logger).collect().isEmpty)
    }

    func undispatchedAlerts(
        deviceIDs: [String],
        before: (raisedMilliseconds: Int64, alertID: String)?,
        limit: Int?
    ) async throws -> [UndispatchedAlert] {
        guard !deviceIDs.isEmpty else { return [] }
        // NULL parameters switch the cursor and the bound off: one statement for every page.
        let beforeMilliseconds = before?.raisedMilliseconds
        let beforeID = before?.alertID
        let rows = try await client.query(
            """
            SELECT alert_id, device_id, kind, reason, state, update_seq, body, raised_ms, updated_ms FROM undispatched_alerts
            WHERE device_id = ANY(\(deviceIDs))
                AND (\(beforeMilliseconds)::BIGINT IS NULL
                    OR raised_ms < \(beforeMilliseconds) OR (raised_ms = \(beforeMilliseconds) AND alert_id < \(beforeID)::TEXT))
            ORDER BY raised_ms DESC, alert_id DESC LIMIT \(limit.map { Int64(max(1, $0)) })
            """,
            logger: logger
        )
        let stored = try await collect(rows.decode((String, String, String, String?, String, Int64, String, Int64, Int64).self)).map {
            try UndispatchedAlert.stored(
                alertID: $0.0,
                deviceID: $0.1,
                kind: $0.2,
                reason: $0.3,
                state: $0.4,
                updateSequence: $0.5,
                body: $0.6,
                raisedMilliseconds: $0.7,
                updatedMilliseconds: $0.8
            )
        }
        return try await personKeys.readable(stored)
    }
}
#endif
