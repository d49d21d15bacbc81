import GRDB

extension SQLiteServerStore {
    func tokens(after: (createdMilliseconds: Int64, tokenID: String)?, limit: Int?) async throws -> [TokenSummary] {
        var sql = "SELECT id, role, device_id, created_ms, expires_ms FROM tokens"
        var arguments: StatementArguments = []
        SQLiteKeysetPage(time: "created_ms", id: "id", newestFirst: false)
            .append(to: &sql, &arguments, after: after.map { ($0.createdMilliseconds, $0.tokenID) }, limit: limit, filtered: false)
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).compactMap { row in
                guard let role = Role(rawValue: try row.decode(forColumn: "role")) else { return nil }
                return TokenSummary(
                    tokenID: try row.decode(forColumn: "id"),
                    role: role,
                    deviceID: try row.decode(forColumn: "device_id"),
                    createdMilliseconds: try row.decode(forColumn: "created_ms"),
                    expiresMilliseconds: try row.decode(forColumn: "expires_ms")
                )
            }
        }
    }

    func deleteToken(id: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tokens WHERE id = ?", arguments: [id])
            return db.changesCount == 1
        }
    }

    func replaceToken(id: String, with replacement: StoredToken, createdMilliseconds: Int64) async throws -> StoredToken? {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT secret_hash, role, device_id FROM tokens WHERE id = ?", arguments: [id]),
                let role = Role(rawValue: try row.decode(forColumn: "role"))
            else { return nil }
            let old = StoredToken(
                id: id,
                secretHash: try row.decode(forColumn: "secret_hash"),
                role: role,
                deviceID: try row.decode(forColumn: "device_id")
            )
            try db.execute(
                sql: "INSERT INTO tokens (id, secret_hash, role, device_id, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    replacement.id, replacement.secretHash, old.role.rawValue, old.deviceID, createdMilliseconds,
                    old.role == .dispatcher ? replacement.expiresMilliseconds : nil,
                ]
            )
            try db.execute(sql: "DELETE FROM tokens WHERE id = ?", arguments: [id])
            return old
        }
    }

    func appendFeedEvent(kind: String, data: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO feed (kind, data) VALUES (?, ?)", arguments: [kind, data])
        }
    }
}
