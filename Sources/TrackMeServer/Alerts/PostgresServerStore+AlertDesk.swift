#if PostgreSQL
import PostgresNIO
import TrackMeCore

extension PostgresServerStore {
    private typealias DeskColumns = (String, String, String, String, Int64, Int64, Int64?, String?, String?, Int64?, String?, String)

    func alertRows(open: Bool, limit: Int) async throws -> [AlertDeskRow] {
        guard open else { return try await closedAlertRows(before: nil, limit: limit) }
        let rows = try await client.query(
            """
            SELECT a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
                a.outcome, a.resolved_ms, a.resolved_by, d.person
            FROM alerts a JOIN devices d ON d.device_id = a.device_id
            WHERE a.outcome IS NULL AND a.state NOT IN ('resolved', 'cancelled') ORDER BY a.created_ms DESC
            """,
            logger: logger
        )
        return try await personKeys.readable(try await collect(rows.decode(DeskColumns.self)).map(Self.deskRow(from:)))
    }

    func alertRows(deviceIDs: [String], before: (createdMilliseconds: Int64, alertID: String)?, limit: Int?) async throws -> [AlertDeskRow] {
        guard !deviceIDs.isEmpty else { return [] }
        let beforeMilliseconds = before?.createdMilliseconds
        let beforeID = before?.alertID
        let rows = try await client.query(
            """
            SELECT a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
                a.outcome, a.resolved_ms, a.resolved_by, d.person
            FROM alerts a JOIN devices d ON d.device_id = a.device_id
            WHERE a.device_id = ANY(\(deviceIDs))
                AND (\(beforeMilliseconds)::BIGINT IS NULL
                    OR a.created_ms < \(beforeMilliseconds) OR (a.created_ms = \(beforeMilliseconds) AND a.alert_id < \(beforeID)::TEXT))
            ORDER BY a.created_ms DESC, a.alert_id DESC LIMIT \(limit.map { Int64(max(1, $0)) })
            """,
            logger: logger
        )
        return try await personKeys.readable(try await collect(rows.decode(DeskColumns.self)).map(Self.deskRow(from:)))
    }

    func alertRows(createdFrom from: Int64, to: Int64) async throws -> [AlertDeskRow] {
        let rows = try await client.query(
            """
            SELECT a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
                a.outcome, a.resolved_ms, a.resolved_by, d.person
            FROM alerts a JOIN devices d ON d.device_id = a.device_id
            WHERE a.created_ms >= \(from) AND a.created_ms < \(to)
            """,
            logger: logger
        )
        return try await personKeys.readable(try await collect(rows.decode(DeskColumns.self)).map(Self.deskRow(from:)))
    }

    func closedAlertRows(before: (updatedMilliseconds: Int64, alertID: String)?, limit: Int) async throws -> [AlertDeskRow] {
        // A NULL cursor switches the condition off, so one statement serves the first page and the rest.
        let beforeMilliseconds = before?.updatedMilliseconds
        let beforeID = before?.alertID
        let rows = try await client.query(
            """
            SELECT a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
                a.outcome, a.resolved_ms, a.resolved_by, d.person
            FROM alerts a JOIN devices d ON d.device_id = a.device_id
            WHERE NOT (a.outcome IS NULL AND a.state NOT IN ('resolved', 'cancelled'))
                AND (\(beforeMilliseconds)::BIGINT IS NULL
                    OR a.updated_ms < \(beforeMilliseconds) OR (a.updated_ms = \(beforeMilliseconds) AND a.alert_id < \(beforeID)::TEXT))
            ORDER BY a.updated_ms DESC, a.alert_id DESC LIMIT \(Int64(max(1, limit)))
            """,
            logger: logger
        )
        return try await personKeys.readable(try await collect(rows.decode(DeskColumns.self)).map(Self.deskRow(from:)))
    }

    func alertRow(id: String) async throws -> AlertDeskRow? {
        try await personKeys.readable(try await Self.deskRow(client, id: id, logger: logger).map { [$0] } ?? []).first
    }

    private static func deskRow(_ client: PostgresClient, id: String, logger: Logger) async throws -> AlertDeskRow? {
        let rows = try await client.query(
            """
            SELECT a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
                a.outcome, a.resolved_ms, a.resolved_by, d.person
            FROM alerts a JOIN devices d ON d.device_id = a.device_id WHERE a.alert_id = \(id)
            """,
            logger: logger
        )
        return try await collect(rows.decode(DeskColumns.self)).map(deskRow(from:)).first
    }

    func alertUpdates(alertID: String) async throws -> [AlertUpdateRow] {
        let rows = try await client.query(
            "SELECT update_seq, type, body, received_ms FROM alert_updates WHERE alert_id = \(alertID) ORDER BY update_seq",
            logger: logger
        )
        return try await collect(rows.decode((Int64, String, String, Int64).self)).map {
            AlertUpdateRow(updateSequence: $0.0, type: $0.1, body: $0.2, receivedMilliseconds: $0.3)
        }
    }

    func resolveAlert(id: String, outcome: AlertOutcome, by actor: String, atMilliseconds: Int64) async throws -> ResolveResult {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.lockFeed(connection, logger: logger)
            var found: (String, String, String?)?
            for try await row in try await connection.query(
                "SELECT device_id, state, outcome FROM alerts WHERE alert_id = \(id) FOR UPDATE",
                logger: logger
            ).decode((String, String, String?).self) {
                found = row
            }
            guard let (deviceID, state, existing) = found else { return .notFound }
            guard existing == nil, state != "resolved", state != "cancelled" else { return .alreadyClosed(deviceID: deviceID) }
            try await connection.query(
                "UPDATE alerts SET outcome = \(outcome.rawValue), resolved_ms = \(atMilliseconds), resolved_by = \(actor) WHERE alert_id = \(id)",
                logger: logger
            )
            let data = try StoreJSON.encode(
                AlertResolvedData(alertID: id, deviceID: deviceID, outcome: outcome, resolvedMilliseconds: atMilliseconds, resolvedBy: actor)
            )
            try await Self.appendFeed(connection, kind: FeedKind.alertResolved, data: data, at: atMilliseconds, logger: logger)
            return .resolved(deviceID: deviceID)
        }
    }

    func addNote(alertID: String, author: String, text: String, atMilliseconds: Int64) async throws -> AlertNote? {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let exists = try await connection.query("SELECT 1 FROM alerts WHERE alert_id = \(alertID)", logger: logger).collect().count
            guard exists == 1 else { return nil }
            var id: Int64 = 0
            for try await value in try await connection.query(
                "INSERT INTO alert_notes (alert_id, author, text, created_ms) VALUES (\(alertID), \(author), \(text), \(atMilliseconds)) RETURNING id",
                logger: logger
            ).decode(Int64.self) {
                id = value
            }
            let note = AlertNote(id: id, alertID: alertID, author: author, text: text, createdMilliseconds: atMilliseconds)
            try await Self.appendFeed(
                connection,
                kind: FeedKind.alertNote,
                data: try StoreJSON.encode(AlertNoteReference(note)),
                at: atMilliseconds,
                logger: logger
            )
            return note
        }
    }

    func notes(alertID: String) async throws -> [AlertNote] {
        let rows = try await client.query(
            "SELECT id, author, text, created_ms FROM alert_notes WHERE alert_id = \(alertID) ORDER BY id",
            logger: logger
        )
        return try await collect(rows.decode((Int64, String, String, Int64).self)).map {
            AlertNote(id: $0.0, alertID: alertID, author: $0.1, text: $0.2, createdMilliseconds: $0.3)
        }
    }

    func deviceRows() async throws -> [DeviceStatusRow] {
        try await deviceRows(after: nil, limit: nil)
    }

    func deviceRows(after: String?, limit: Int?) async throws -> [DeviceStatusRow] {
        // NULL parameters switch the cursor and the bound off: one statement for every page.
        let rows = try await client.query(
            """
            SELECT device_id, person, enrolled_ms, last_seen_ms, silent, heartbeat FROM devices
            WHERE (\(after)::TEXT IS NULL OR device_id > \(after)) ORDER BY device_id LIMIT \(limit.map { Int64(max(1, $0)) })
            """,
            logger: logger
        )
        return try await personKeys.readable(
            try await collect(rows.decode((String, String, Int64, Int64?, Bool, String?).self)).map {
                DeviceStatusRow(deviceID: $0.0, person: $0.1, enrolledMilliseconds: $0.2, lastSeenMilliseconds: $0.3, silent: $0.4, heartbeat: $0.5)
            }
        )
    }

    func acknowledgeAlert(id: String, by tokenID: String, atMilliseconds: Int64) async throws -> AcknowledgeOutcome {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.lockFeed(connection, logger: logger)
            var found: (String, Bool)?
            for try await (device, acknowledged) in try await connection.query(
                "SELECT device_id, acknowledged FROM alerts WHERE alert_id = \(id) FOR UPDATE",
                logger: logger
            ).decode((String, Bool).self) {
                found = (device, acknowledged)
            }
            guard let (deviceID, acknowledged) = found else { return .notFound }
            if acknowledged { return .alreadyAcknowledged(deviceID: deviceID) }
            try await connection.query(
                "UPDATE alerts SET acknowledged = TRUE, acknowledged_ms = \(atMilliseconds), acknowledged_by = \(tokenID) WHERE alert_id = \(id)",
                logger: logger
            )
            let data = try StoreJSON.encode(AlertAcknowledgedData(alertID: id, deviceID: deviceID, acknowledgedMilliseconds: atMilliseconds))
            try await Self.appendFeed(connection, kind: FeedKind.alertAcknowledged, data: data, at: atMilliseconds, logger: logger)
            return .acknowledged(deviceID: deviceID)
        }
    }

    func feedEvents(after id: Int64, limit: Int) async throws -> [FeedEvent] {
        let rows = try await client.query("SELECT id, kind, data FROM feed WHERE id > \(id) ORDER BY id LIMIT \(limit)", logger: logger)
        var events: [FeedEvent] = []
        for try await (id, kind, data) in rows.decode((Int64, String, String).self) {
            events.append(FeedEvent(id: id, kind: kind, data: data))
        }
        return events
    }

    func feedHead() async throws -> Int64 {
        // Under the feed lock's discipline ids become visible in order, so max(id) has no gaps below it.
        try await collect(client.query("SELECT coalesce(max(id), 0)::BIGINT FROM feed", logger: logger).decode(Int64.self)).first ?? 0
    }

    func deskUpdates(alertID: String, recentPositions: Int) async throws -> [AlertUpdateRow] {
        let others = AlertUpdate.UpdateType.allCases.filter { $0 != .position }.map(\.rawValue)
        let rows = try await client.query(
            """
            SELECT update_seq, type, body, received_ms FROM (
                (SELECT update_seq, type, body, received_ms FROM alert_updates
                    WHERE alert_id = \(alertID) AND type = 'position' ORDER BY update_seq DESC LIMIT \(recentPositions))
                UNION ALL
                SELECT update_seq, type, body, received_ms FROM alert_updates WHERE alert_id = \(alertID) AND type = ANY(\(others))) u
            ORDER BY update_seq
            """,
            logger: logger
        )
        return try await collect(rows.decode((Int64, String, String, Int64).self)).map {
            AlertUpdateRow(updateSequence: $0.0, type: $0.1, body: $0.2, receivedMilliseconds: $0.3)
        }
    }

    func deviceRow(id: String) async throws -> DeviceStatusRow? {
        let rows = try await client.query(
            "SELECT device_id, person, enrolled_ms, last_seen_ms, silent, heartbeat FROM devices WHERE device_id = \(id)",
            logger: logger
        )
        let row = try await collect(rows.decode((String, String, Int64, Int64?, Bool, String?).self)).first.map {
            DeviceStatusRow(deviceID: $0.0, person: $0.1, enrolledMilliseconds: $0.2, lastSeenMilliseconds: $0.3, silent: $0.4, heartbeat: $0.5)
        }
        return try await personKeys.readable(row.map { [$0] } ?? []).first
    }

    func feedFloor(sinceMilliseconds: Int64) async throws -> Int64 {
        let rows = try await client.query(
            "SELECT coalesce((SELECT min(id) FROM feed WHERE at_ms >= \(sinceMilliseconds)) - 1, (SELECT coalesce(max(id), 0) FROM feed))::BIGINT",
            logger: logger
        )
        return try await collect(rows.decode(Int64.self)).first ?? 0
    }

    private static func deskRow(from c: DeskColumns) -> AlertDeskRow {
        AlertDeskRow(
            alertID: c.0,
            deviceID: c.1,
            record: c.2,
            state: c.3,
            createdMilliseconds: c.4,
            updatedMilliseconds: c.5,
            acknowledgedMilliseconds: c.6,
            acknowledgedBy: c.7,
            outcome: c.8.flatMap(AlertOutcome.init(rawValue:)),
            resolvedMilliseconds: c.9,
            resolvedBy: c.10,
            person: c.11
        )
    }
}
#endif
