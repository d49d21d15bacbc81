import GRDB
import TrackMeCore

extension SQLiteServerStore {
    private static let deskColumns = """
        a.alert_id, a.device_id, a.record, a.state, a.created_ms, a.updated_ms, a.acknowledged_ms, a.acknowledged_by,
        a.outcome, a.resolved_ms, a.resolved_by, d.person
        """
    private static let openCondition = "a.outcome IS NULL AND a.state NOT IN ('resolved', 'cancelled')"

    func alertRows(open: Bool, limit: Int) async throws -> [AlertDeskRow] {
        guard open else { return try await closedAlertRows(before: nil, limit: limit) }
        let sql =
            "SELECT \(Self.deskColumns) FROM alerts a JOIN devices d ON d.device_id = a.device_id WHERE \(Self.openCondition) ORDER BY a.created_ms DESC"
        return try await personKeys.readable(try await pool.read { db in try Row.fetchAll(db, sql: sql).map(Self.deskRow(from:)) })
    }

    func closedAlertRows(before: (updatedMilliseconds: Int64, alertID: String)?, limit: Int) async throws -> [AlertDeskRow] {
        var sql = "SELECT \(Self.deskColumns) FROM alerts a JOIN devices d ON d.device_id = a.device_id WHERE NOT (\(Self.openCondition))"
        var arguments: StatementArguments = []
        SQLiteKeysetPage(time: "a.updated_ms", id: "a.alert_id", newestFirst: true)
            .append(to: &sql, &arguments, after: before.map { ($0.updatedMilliseconds, $0.alertID) }, limit: limit, filtered: true)
        let finalSQL = sql
        let finalArguments = arguments
        return try await personKeys.readable(
            try await pool.read { db in try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map(Self.deskRow(from:)) }
        )
    }

    func alertRows(deviceIDs: [String], before: (createdMilliseconds: Int64, alertID: String)?, limit: Int?) async throws -> [AlertDeskRow] {
        guard !deviceIDs.isEmpty else { return [] }
        var sql = """
            SELECT \(Self.deskColumns) FROM alerts a JOIN devices d ON d.device_id = a.device_id
            WHERE a.device_id IN (\(deviceIDs.map { _ in "?" }.joined(separator: ",")))
            """
        var arguments = StatementArguments(deviceIDs)
        SQLiteKeysetPage(time: "a.created_ms", id: "a.alert_id", newestFirst: true)
            .append(to: &sql, &arguments, after: before.map { ($0.createdMilliseconds, $0.alertID) }, limit: limit, filtered: true)
        let finalSQL = sql
        let finalArguments = arguments
        return try await personKeys.readable(
            try await pool.read { db in try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map(Self.deskRow(from:)) }
        )
    }

    func alertRows(createdFrom from: Int64, to: Int64) async throws -> [AlertDeskRow] {
        let sql = "SELECT \(Self.deskColumns) FROM alerts a JOIN devices d ON d.device_id = a.device_id WHERE a.created_ms >= ? AND a.created_ms < ?"
        return try await personKeys.readable(
            try await pool.read { db in try Row.fetchAll(db, sql: sql, arguments: [from, to]).map(Self.deskRow(from:)) }
        )
    }

    func alertRow(id: String) async throws -> AlertDeskRow? {
        try await personKeys.readable(try await pool.read { db in try Self.deskRow(db, id: id) }.map { [$0] } ?? []).first
    }

    func alertUpdates(alertID: String) async throws -> [AlertUpdateRow] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT update_seq, type, body, received_ms FROM alert_updates WHERE alert_id = ? ORDER BY update_seq",
                arguments: [alertID]
            ).map {
                AlertUpdateRow(
                    updateSequence: try $0.decode(forColumn: "update_seq"),
                    type: try $0.decode(forColumn: "type"),
                    body: try $0.decode(forColumn: "body"),
                    receivedMilliseconds: try $0.decode(forColumn: "received_ms")
                )
            }
        }
    }

    /// The other updates are read through `alert_updates_type` by name: left to itself, SQLite
    /// takes the primary key for the outer ORDER BY and walks every position of the alert (a
    /// 6-hour alert's detail cost ten times a new one's).
    func deskUpdates(alertID: String, recentPositions: Int) async throws -> [AlertUpdateRow] {
        let others = AlertUpdate.UpdateType.allCases.filter { $0 != .position }.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        return try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT update_seq, type, body, received_ms FROM (
                        SELECT * FROM (SELECT update_seq, type, body, received_ms FROM alert_updates
                            WHERE alert_id = ? AND type = 'position' ORDER BY update_seq DESC LIMIT ?)
                        UNION ALL
                        SELECT update_seq, type, body, received_ms FROM alert_updates INDEXED BY alert_updates_type
                            WHERE alert_id = ? AND type IN (\(others)))
                    ORDER BY update_seq
                    """,
                arguments: [alertID, recentPositions, alertID]
            ).map { row in
                AlertUpdateRow(
                    updateSequence: try row.decode(forColumn: "update_seq"),
                    type: try row.decode(forColumn: "type"),
                    body: try row.decode(forColumn: "body"),
                    receivedMilliseconds: try row.decode(forColumn: "received_ms")
                )
            }
        }
    }

    func deviceRow(id: String) async throws -> DeviceStatusRow? {
        let row = try await pool.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT device_id, person, enrolled_ms, last_seen_ms, silent, heartbeat FROM devices WHERE device_id = ?",
                arguments: [id]
            ).map { row in
                DeviceStatusRow(
                    deviceID: try row.decode(forColumn: "device_id"),
                    person: try row.decode(forColumn: "person"),
                    enrolledMilliseconds: try row.decode(forColumn: "enrolled_ms"),
                    lastSeenMilliseconds: try row.decode(forColumn: "last_seen_ms"),
                    silent: try row.decode(forColumn: "silent"),
                    heartbeat: try row.decode(forColumn: "heartbeat")
                )
            }
        }
        return try await personKeys.readable(row.map { [$0] } ?? []).first
    }

    func resolveAlert(id: String, outcome: AlertOutcome, by actor: String, atMilliseconds: Int64) async throws -> ResolveResult {
        try await pool.write { db in
            guard let row = try Self.deskRow(db, id: id) else { return .notFound }
            guard row.isOpen else { return .alreadyClosed(deviceID: row.deviceID) }
            try db.execute(
                sql: "UPDATE alerts SET outcome = ?, resolved_ms = ?, resolved_by = ? WHERE alert_id = ?",
                arguments: [outcome.rawValue, atMilliseconds, actor, id]
            )
            let data = try StoreJSON.encode(
                AlertResolvedData(alertID: id, deviceID: row.deviceID, outcome: outcome, resolvedMilliseconds: atMilliseconds, resolvedBy: actor)
            )
            try Self.appendFeed(db, kind: FeedKind.alertResolved, data: data, at: atMilliseconds)
            return .resolved(deviceID: row.deviceID)
        }
    }

    func addNote(alertID: String, author: String, text: String, atMilliseconds: Int64) async throws -> AlertNote? {
        try await pool.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM alerts WHERE alert_id = ?", arguments: [alertID]) != nil else { return nil }
            try db.execute(
                sql: "INSERT INTO alert_notes (alert_id, author, text, created_ms) VALUES (?, ?, ?, ?)",
                arguments: [alertID, author, text, atMilliseconds]
            )
            let note = AlertNote(id: db.lastInsertedRowID, alertID: alertID, author: author, text: text, createdMilliseconds: atMilliseconds)
            try Self.appendFeed(db, kind: FeedKind.alertNote, data: try StoreJSON.encode(AlertNoteReference(note)), at: atMilliseconds)
            return note
        }
    }

    func notes(alertID: String) async throws -> [AlertNote] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, author, text, created_ms FROM alert_notes WHERE alert_id = ? ORDER BY id", arguments: [alertID]).map
            {
                AlertNote(
                    id: try $0.decode(forColumn: "id"),
                    alertID: alertID,
                    author: try $0.decode(forColumn: "author"),
                    text: try $0.decode(forColumn: "text"),
                    createdMilliseconds: try $0.decode(forColumn: "created_ms")
                )
            }
        }
    }

    func deviceRows() async throws -> [DeviceStatusRow] {
        try await deviceRows(after: nil, limit: nil)
    }

    func deviceRows(after: String?, limit: Int?) async throws -> [DeviceStatusRow] {
        var sql = "SELECT device_id, person, enrolled_ms, last_seen_ms, silent, heartbeat FROM devices"
        var arguments: StatementArguments = []
        if let after {
            sql += " WHERE device_id > ?"
            arguments += [after]
        }
        sql += " ORDER BY device_id"
        if let limit { sql += " LIMIT \(max(1, limit))" }
        let finalSQL = sql
        let finalArguments = arguments
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map {
                DeviceStatusRow(
                    deviceID: try $0.decode(forColumn: "device_id"),
                    person: try $0.decode(forColumn: "person"),
                    enrolledMilliseconds: try $0.decode(forColumn: "enrolled_ms"),
                    lastSeenMilliseconds: try $0.decode(forColumn: "last_seen_ms"),
                    silent: try $0.decode(forColumn: "silent"),
                    heartbeat: try $0.decode(forColumn: "heartbeat")
                )
            }
        }
        return try await personKeys.readable(rows)
    }

    func acknowledgeAlert(id: String, by tokenID: String, atMilliseconds: Int64) async throws -> AcknowledgeOutcome {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT device_id, acknowledged FROM alerts WHERE alert_id = ?", arguments: [id]) else {
                return .notFound
            }
            let deviceID: String = try row.decode(forColumn: "device_id")
            if try row.decode(Bool.self, forColumn: "acknowledged") { return .alreadyAcknowledged(deviceID: deviceID) }
            try db.execute(
                sql: "UPDATE alerts SET acknowledged = 1, acknowledged_ms = ?, acknowledged_by = ? WHERE alert_id = ?",
                arguments: [atMilliseconds, tokenID, id]
            )
            let data = try StoreJSON.encode(AlertAcknowledgedData(alertID: id, deviceID: deviceID, acknowledgedMilliseconds: atMilliseconds))
            try Self.appendFeed(db, kind: FeedKind.alertAcknowledged, data: data, at: atMilliseconds)
            return .acknowledged(deviceID: deviceID)
        }
    }

    func feedEvents(after id: Int64, limit: Int) async throws -> [FeedEvent] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, kind, data FROM feed WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit]).map {
                FeedEvent(id: try $0.decode(forColumn: "id"), kind: try $0.decode(forColumn: "kind"), data: try $0.decode(forColumn: "data"))
            }
        }
    }

    func feedHead() async throws -> Int64 {
        try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT coalesce(max(id), 0) FROM feed") ?? 0 }
    }

    func feedFloor(sinceMilliseconds: Int64) async throws -> Int64 {
        try await pool.read { db in
            try Int64.fetchOne(
                db,
                sql: "SELECT coalesce((SELECT min(id) FROM feed WHERE at_ms >= ?) - 1, (SELECT coalesce(max(id), 0) FROM feed))",
                arguments: [sinceMilliseconds]
            ) ?? 0
        }
    }

    private static func deskRow(_ db: Database, id: String) throws -> AlertDeskRow? {
        try Row.fetchOne(
            db,
            sql: "SELECT \(deskColumns) FROM alerts a JOIN devices d ON d.device_id = a.device_id WHERE a.alert_id = ?",
            arguments: [id]
        )
        .map(deskRow(from:))
    }

    private static func deskRow(from row: Row) throws -> AlertDeskRow {
        let outcome: String? = try row.decode(forColumn: "outcome")
        return AlertDeskRow(
            alertID: try row.decode(forColumn: "alert_id"),
            deviceID: try row.decode(forColumn: "device_id"),
            record: try row.decode(forColumn: "record"),
            state: try row.decode(forColumn: "state"),
            createdMilliseconds: try row.decode(forColumn: "created_ms"),
            updatedMilliseconds: try row.decode(forColumn: "updated_ms"),
            acknowledgedMilliseconds: try row.decode(forColumn: "acknowledged_ms"),
            acknowledgedBy: try row.decode(forColumn: "acknowledged_by"),
            outcome: outcome.flatMap(AlertOutcome.init(rawValue:)),
            resolvedMilliseconds: try row.decode(forColumn: "resolved_ms"),
            resolvedBy: try row.decode(forColumn: "resolved_by"),
            person: try row.decode(forColumn: "person")
        )
    }
}
