#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    private typealias AccountColumns = (String, String, String, String, String, Bool, Int64, Int64, Int64, Int64?)

    func insertAccount(_ account: Account) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO accounts (id, username, display_name, role, password_hash, disabled, created_ms)
            VALUES (\(account.id), \(account.username), \(account.displayName), \(account.role.rawValue), \(account.passwordHash),
                \(account.disabled), \(account.createdMilliseconds))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func account(id: String) async throws -> Account? {
        let rows = try await client.query("SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE id = \(id)", logger: logger)
        return try await collect(rows.decode(AccountColumns.self)).compactMap(Self.account(from:)).first
    }

    func account(username: String) async throws -> Account? {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE username = \(username)",
            logger: logger
        )
        return try await collect(rows.decode(AccountColumns.self)).compactMap(Self.account(from:)).first
    }

    func accounts() async throws -> [Account] {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts ORDER BY username",
            logger: logger
        )
        return try await collect(rows.decode(AccountColumns.self)).compactMap(Self.account(from:))
    }

    func setAccountDisabled(id: String, disabled: Bool) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let changed = try await connection.query("UPDATE accounts SET disabled = \(disabled) WHERE id = \(id) RETURNING 1", logger: logger)
                .collect().count
            guard changed == 1 else { return false }
            if disabled { try await connection.query("DELETE FROM sessions WHERE account_id = \(id)", logger: logger) }
            return true
        }
    }

    private static let accountColumns =
        "id, username, display_name, role, password_hash, disabled, created_ms, failed_sign_ins, failed_sign_ins_before, last_failed_sign_in_ms"

    func recordFailedSignIn(accountID: String, atMilliseconds: Int64) async throws {
        try await client.query(
            "UPDATE accounts SET failed_sign_ins = failed_sign_ins + 1, last_failed_sign_in_ms = \(atMilliseconds) WHERE id = \(accountID)",
            logger: logger
        )
    }

    func recordSignIn(accountID: String) async throws {
        try await client.query(
            "UPDATE accounts SET failed_sign_ins_before = failed_sign_ins, failed_sign_ins = 0 WHERE id = \(accountID) AND failed_sign_ins > 0",
            logger: logger
        )
    }

    func insertSession(_ session: Session) async throws {
        try await client.query(
            """
            INSERT INTO sessions (id, secret_hash, account_id, csrf_token, created_ms, expires_ms)
            VALUES (\(session.id), \(session.secretHash), \(session.accountID), \(session.csrfToken), \(session.createdMilliseconds),
                \(session.expiresMilliseconds))
            """,
            logger: logger
        )
    }

    func session(id: String) async throws -> (Session, Account)? {
        let rows = try await client.query(
            "SELECT secret_hash, account_id, csrf_token, created_ms, expires_ms FROM sessions WHERE id = \(id)",
            logger: logger
        )
        for try await (hash, accountID, csrf, created, expires) in rows.decode((String, String, String, Int64, Int64).self) {
            guard let account = try await account(id: accountID) else { return nil }
            return (
                Session(id: id, secretHash: hash, accountID: accountID, csrfToken: csrf, createdMilliseconds: created, expiresMilliseconds: expires),
                account
            )
        }
        return nil
    }

    func deleteSession(id: String) async throws {
        try await client.query("DELETE FROM sessions WHERE id = \(id)", logger: logger)
    }

    func deleteExpiredSessions(now: Int64) async throws -> Int {
        try await client.query("DELETE FROM sessions WHERE expires_ms <= \(now) RETURNING 1", logger: logger).collect().count
    }

    private static func account(from c: AccountColumns) -> Account? {
        guard let role = Role(rawValue: c.3) else { return nil }
        return Account(
            id: c.0,
            username: c.1,
            displayName: c.2,
            role: role,
            passwordHash: c.4,
            disabled: c.5,
            createdMilliseconds: c.6,
            failedSignIns: Int(clamping: c.7),
            failedSignInsBeforeLastSignIn: Int(clamping: c.8),
            lastFailedSignInMilliseconds: c.9
        )
    }
}
#endif
