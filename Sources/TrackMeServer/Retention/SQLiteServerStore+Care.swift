import GRDB
import TrackMeCore

extension SQLiteServerStore {
    func applyRetention(_ cutoff: RetentionCutoff, nowMilliseconds: Int64) async throws -> Int {
        if cutoff.kind == .readings { return try await deleteReadings(placedBefore: cutoff.beforeMilliseconds) }
        let statements = RetentionSQL.statements(cutoff, nowMilliseconds: nowMilliseconds)
        return try await pool.write { db in try Self.run(statements, in: db) }
    }

    func erase(deviceID: String, nowMilliseconds: Int64) async throws -> ErasureResult? {
        try await pool.write { db in
            guard try Int.fetchOne(db, sql: "SELECT 1 FROM devices WHERE device_id = ?", arguments: [deviceID]) != nil else { return nil }
            let alertIDs = try String.fetchAll(db, sql: "SELECT alert_id FROM alerts WHERE device_id = ?", arguments: [deviceID])
            let tokens = try Row.fetchAll(db, sql: "SELECT id, secret_hash FROM tokens WHERE device_id = ?", arguments: [deviceID])
            let deleted = try Self.run(ErasureSQL.statements(deviceID: deviceID, alertIDs: alertIDs), in: db)
            for token in tokens {
                try db.execute(
                    sql: "INSERT INTO wipe_orders (token_digest, ordered_ms) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    arguments: [
                        WipeOrderDigest.of(
                            tokenID: try token.decode(forColumn: "id"),
                            secretHash: try token.decode(forColumn: "secret_hash")
                        ), nowMilliseconds,
                    ]
                )
            }
            return ErasureResult(rowsDeleted: deleted, wipeOrders: tokens.count)
        }
    }

    func wipeOrder(tokenDigest: String) async throws -> Int64? {
        try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT ordered_ms FROM wipe_orders WHERE token_digest = ?", arguments: [tokenDigest])
        }
    }

    func careSettings(deviceID: String) async throws -> StoredCareSettings? {
        let found = try await pool.read { db -> (settings: String, updated: Int64, by: String)? in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT settings, updated_ms, updated_by FROM care_settings WHERE device_id = ?",
                    arguments: [deviceID]
                )
            else { return nil }
            return (try row.decode(forColumn: "settings"), try row.decode(forColumn: "updated_ms"), try row.decode(forColumn: "updated_by"))
        }
        guard let found else { return nil }
        return StoredCareSettings(settings: try StoreJSON.decode(found.settings), updatedMilliseconds: found.updated, updatedBy: found.by)
    }

    func putCareSettings(
        deviceID: String,
        settings: CareSettings,
        person: PersonProfile,
        by actor: String,
        atMilliseconds: Int64
    ) async throws -> CareSettings {
        let personJSON = try await personKeys.sealProfile(try StoreJSON.encode(person), owner: deviceID)
        return try await pool.write { db in
            let current = try Int64.fetchOne(db, sql: "SELECT version FROM care_settings WHERE device_id = ?", arguments: [deviceID]) ?? 0
            var next = settings
            next.version = current + 1
            try db.execute(
                sql: """
                    INSERT INTO care_settings (device_id, version, settings, updated_ms, updated_by) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (device_id) DO UPDATE SET version = excluded.version, settings = excluded.settings,
                        updated_ms = excluded.updated_ms, updated_by = excluded.updated_by
                    """,
                arguments: [deviceID, next.version, try StoreJSON.encode(next), atMilliseconds, actor]
            )
            try db.execute(sql: "UPDATE devices SET person = ? WHERE device_id = ?", arguments: [personJSON, deviceID])
            return next
        }
    }

    /// Runs portable statements in the caller's transaction; returns the rows they deleted.
    static func run(_ statements: [PortableStatement], in db: Database) throws -> Int {
        var total = 0
        for statement in statements {
            let arguments = StatementArguments(
                statement.values.map { value -> (any DatabaseValueConvertible)? in
                    switch value {
                    case .text(let text): text
                    case .integer(let number): number
                    }
                }
            )
            try db.execute(sql: statement.sql, arguments: arguments)
            if statement.counts { total += db.changesCount }
        }
        return total
    }
}
