#if PostgreSQL
import Logging
import PostgresNIO
import TrackMeCore

extension PostgresServerStore {
    func applyRetention(_ cutoff: RetentionCutoff, nowMilliseconds: Int64) async throws -> Int {
        if cutoff.kind == .readings { return try await deleteReadings(placedBefore: cutoff.beforeMilliseconds) }
        let statements = RetentionSQL.statements(cutoff, nowMilliseconds: nowMilliseconds)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.run(statements, on: connection, logger: logger)
        }
    }

    func erase(deviceID: String, nowMilliseconds: Int64) async throws -> ErasureResult? {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            // Locks the device row: a batch of this device in flight finishes first or finds no device.
            let found = try await connection.query("SELECT 1 FROM devices WHERE device_id = \(deviceID) FOR UPDATE", logger: logger).collect()
            guard !found.isEmpty else { return nil }
            let alertIDs = try await collect(
                connection.query("SELECT alert_id FROM alerts WHERE device_id = \(deviceID)", logger: logger).decode(String.self)
            )
            let tokens = try await collect(
                connection.query("SELECT id, secret_hash FROM tokens WHERE device_id = \(deviceID)", logger: logger).decode((String, String).self)
            )
            let deleted = try await Self.run(ErasureSQL.statements(deviceID: deviceID, alertIDs: alertIDs), on: connection, logger: logger)
            for (id, hash) in tokens {
                try await connection.query(
                    """
                    INSERT INTO wipe_orders (token_digest, ordered_ms) VALUES (\(WipeOrderDigest.of(tokenID: id, secretHash: hash)), \(nowMilliseconds))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            }
            return ErasureResult(rowsDeleted: deleted, wipeOrders: tokens.count)
        }
    }

    func wipeOrder(tokenDigest: String) async throws -> Int64? {
        let rows = try await client.query("SELECT ordered_ms FROM wipe_orders WHERE token_digest = \(tokenDigest)", logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        return nil
    }

    func careSettings(deviceID: String) async throws -> StoredCareSettings? {
        let rows = try await client.query(
            "SELECT settings, updated_ms, updated_by FROM care_settings WHERE device_id = \(deviceID)",
            logger: logger
        )
        for try await (settings, updated, by) in rows.decode((String, Int64, String).self) {
            return StoredCareSettings(settings: try StoreJSON.decode(settings), updatedMilliseconds: updated, updatedBy: by)
        }
        return nil
    }

    func putCareSettings(
        deviceID: String,
        settings: CareSettings,
        person: PersonProfile,
        by actor: String,
        atMilliseconds: Int64
    ) async throws -> CareSettings {
        let logger = self.logger
        let personJSON = try await personKeys.sealProfile(try StoreJSON.encode(person), owner: deviceID)
        return try await client.withTransaction(logger: logger) { connection in
            var current: Int64 = 0
            for try await version in try await connection.query(
                "SELECT version FROM care_settings WHERE device_id = \(deviceID) FOR UPDATE",
                logger: logger
            ).decode(Int64.self) {
                current = version
            }
            var next = settings
            next.version = current + 1
            try await connection.query(
                """
                INSERT INTO care_settings (device_id, version, settings, updated_ms, updated_by)
                VALUES (\(deviceID), \(next.version), \(try StoreJSON.encode(next)), \(atMilliseconds), \(actor))
                ON CONFLICT (device_id) DO UPDATE SET version = excluded.version, settings = excluded.settings,
                    updated_ms = excluded.updated_ms, updated_by = excluded.updated_by
                """,
                logger: logger
            )
            try await connection.query("UPDATE devices SET person = \(personJSON) WHERE device_id = \(deviceID)", logger: logger)
            return next
        }
    }

    /// Runs portable statements on the caller's transaction; returns the rows they deleted.
    static func run(_ statements: [PortableStatement], on connection: PostgresConnection, logger: Logger) async throws -> Int {
        var total = 0
        for statement in statements {
            var bindings = PostgresBindings()
            for value in statement.values {
                switch value {
                case .text(let text): bindings.append(text)
                case .integer(let number): bindings.append(number)
                }
            }
            let sql = statement.counts ? statement.postgresSQL + " RETURNING 1" : statement.postgresSQL
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger).collect()
            if statement.counts { total += rows.count }
        }
        return total
    }
}
#endif
