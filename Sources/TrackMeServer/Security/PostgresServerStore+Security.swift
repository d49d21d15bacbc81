#if PostgreSQL
import Logging
import PostgresNIO

extension PostgresServerStore {
    func tokens(after: (createdMilliseconds: Int64, tokenID: String)?, limit: Int?) async throws -> [TokenSummary] {
        var result: [TokenSummary] = []
        // NULL parameters switch the cursor and the bound off: one statement for every page.
        let afterMilliseconds = after?.createdMilliseconds
        let afterID = after?.tokenID
        let rows = try await client.query(
            """
            SELECT id, role, device_id, created_ms, expires_ms FROM tokens
            WHERE \(afterMilliseconds)::BIGINT IS NULL OR created_ms > \(afterMilliseconds)
                OR (created_ms = \(afterMilliseconds) AND id > \(afterID)::TEXT)
            ORDER BY created_ms, id LIMIT \(limit.map { Int64(max(1, $0)) })
            """,
            logger: logger
        )
        for try await (id, role, deviceID, created, expires) in rows.decode((String, String, String?, Int64, Int64?).self) {
            guard let role = Role(rawValue: role) else { continue }
            result.append(TokenSummary(tokenID: id, role: role, deviceID: deviceID, createdMilliseconds: created, expiresMilliseconds: expires))
        }
        return result
    }

    func deleteToken(id: String) async throws -> Bool {
        let rows = try await client.query("DELETE FROM tokens WHERE id = \(id) RETURNING 1", logger: logger)
        var deleted = 0
        for try await _ in rows.decode(Int.self) { deleted += 1 }
        return deleted == 1
    }

    func replaceToken(id: String, with replacement: StoredToken, createdMilliseconds: Int64) async throws -> StoredToken? {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection -> StoredToken? in
            var old: StoredToken?
            for try await (hash, role, deviceID) in try await connection.query(
                "SELECT secret_hash, role, device_id FROM tokens WHERE id = \(id) FOR UPDATE",
                logger: logger
            ).decode((String, String, String?).self) {
                old = Role(rawValue: role).map { StoredToken(id: id, secretHash: hash, role: $0, deviceID: deviceID) }
            }
            guard let old else { return nil }
            let expires = old.role == .dispatcher ? replacement.expiresMilliseconds : nil
            try await connection.query(
                """
                INSERT INTO tokens (id, secret_hash, role, device_id, created_ms, expires_ms)
                VALUES (\(replacement.id), \(replacement.secretHash), \(old.role.rawValue), \(old.deviceID), \(createdMilliseconds), \(expires))
                """,
                logger: logger
            )
            try await connection.query("DELETE FROM tokens WHERE id = \(id)", logger: logger)
            return old
        }
    }

    func appendFeedEvent(kind: String, data: String) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            try await Self.appendFeed(connection, kind: kind, data: data, logger: logger)
        }
    }
}
#endif
