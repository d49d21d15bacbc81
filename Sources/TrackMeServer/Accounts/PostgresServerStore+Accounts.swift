#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    private typealias AccountColumns = (String, String, String, String, String, Bool, Int64, Int64, Int64, Int64?, String?, Bool)

    func insertAccount(_ account: Account) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO accounts (id, username, display_name, role, password_hash, disabled, created_ms, email, unverified)
            VALUES (\(account.id), \(account.username), \(account.displayName), \(account.role.rawValue), \(account.passwordHash),
                \(account.disabled), \(account.createdMilliseconds), \(account.email), \(account.unverified))
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

    func accounts(after username: String?, limit: Int) async throws -> [Account] {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE (\(username)::TEXT IS NULL OR username > \(username))
            ORDER BY username LIMIT \(Int64(max(1, limit)))
            """,
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
        "id, username, display_name, role, password_hash, disabled, created_ms, failed_sign_ins, failed_sign_ins_before, last_failed_sign_in_ms, email, unverified"

    @discardableResult
    func recordFailedSignIn(accountID: String, atMilliseconds: Int64) async throws -> Int {
        let rows = try await client.query(
            """
            UPDATE accounts SET failed_sign_ins = failed_sign_ins + 1, last_failed_sign_in_ms = \(atMilliseconds) WHERE id = \(accountID)
            RETURNING failed_sign_ins
            """,
            logger: logger
        )
        return try await collect(rows.decode(Int64.self)).first.map { Int(clamping: $0) } ?? 0
    }

    func recordSignIn(accountID: String) async throws {
        try await client.query(
            "UPDATE accounts SET failed_sign_ins_before = failed_sign_ins, failed_sign_ins = 0 WHERE id = \(accountID) AND failed_sign_ins > 0",
            logger: logger
        )
    }

    func accounts(email: String) async throws -> [Account] {
        let rows = try await client.query(
            "SELECT \(unescaped: Self.accountColumns) FROM accounts WHERE lower(email) = lower(\(email)) ORDER BY username",
            logger: logger
        )
        return try await collect(rows.decode(AccountColumns.self)).compactMap(Self.account(from:))
    }

    func setPassword(accountID: String, passwordHash: String, keepingSession: String?) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let changed = try await connection.query(
                """
                UPDATE accounts SET password_hash = \(passwordHash), failed_sign_ins = 0, last_failed_sign_in_ms = NULL
                WHERE id = \(accountID) RETURNING 1
                """,
                logger: logger
            ).collect().count
            guard changed == 1 else { return false }
            try await connection.query(
                "DELETE FROM sessions WHERE account_id = \(accountID) AND id <> \(keepingSession ?? "")",
                logger: logger
            )
            return true
        }
    }

    func deleteLapsedSignUp(username: String, createdBefore: Int64) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "DELETE FROM accounts WHERE username = \(username) AND unverified AND created_ms < \(createdBefore) RETURNING id",
                logger: logger
            )
            guard let id = try await collect(rows.decode(String.self)).first else { return false }
            try await connection.query("DELETE FROM account_links WHERE account_id = \(id)", logger: logger)
            return true
        }
    }

    func insertAccountLink(_ link: StoredAccountLink) async throws {
        try await client.query(
            """
            INSERT INTO account_links (id, account_id, purpose, nonce_hash, created_ms, expires_ms)
            VALUES (\(link.id), \(link.accountID), \(link.purpose.rawValue), \(link.nonceHash), \(link.createdMilliseconds),
                \(link.expiresMilliseconds))
            """,
            logger: logger
        )
    }

    func accountLink(id: String) async throws -> StoredAccountLink? {
        let rows = try await client.query(
            "SELECT account_id, purpose, nonce_hash, created_ms, expires_ms, used_ms FROM account_links WHERE id = \(id)",
            logger: logger
        )
        for try await (account, purpose, hash, created, expires, used) in rows.decode((String, String, String, Int64, Int64, Int64?).self) {
            guard let purpose = AccountLinkPurpose(rawValue: purpose) else { return nil }
            return StoredAccountLink(
                id: id,
                accountID: account,
                purpose: purpose,
                nonceHash: hash,
                createdMilliseconds: created,
                expiresMilliseconds: expires,
                usedMilliseconds: used
            )
        }
        return nil
    }

    func useAccountLink(_ link: AccountLink, atMilliseconds now: Int64, newPasswordHash: String?) async throws -> AccountLinkUse {
        let logger = self.logger
        if link.purpose == .passwordReset, newPasswordHash == nil { return .unknown }
        return try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                "SELECT account_id, purpose, nonce_hash, expires_ms, used_ms FROM account_links WHERE id = \(link.id) FOR UPDATE",
                logger: logger
            )
            guard let row = try await collect(rows.decode((String, String, String, Int64, Int64?).self)).first,
                row.0 == link.accountID, row.1 == link.purpose.rawValue, BearerToken.digestsEqual(row.2, link.nonceHash)
            else { return .unknown }
            if row.4 != nil { return .used }
            if row.3 <= now { return .expired }
            let account = row.0
            let purpose = row.1
            try await connection.query(
                """
                UPDATE account_links SET used_ms = \(now)
                WHERE account_id = \(account) AND purpose = \(purpose) AND used_ms IS NULL
                """,
                logger: logger
            )
            switch link.purpose {
            case .verifyAccount:
                try await connection.query("UPDATE accounts SET unverified = FALSE WHERE id = \(account)", logger: logger)
            case .passwordReset:
                try await connection.query(
                    """
                    UPDATE accounts SET password_hash = \(newPasswordHash ?? ""), failed_sign_ins = 0, last_failed_sign_in_ms = NULL,
                        unverified = FALSE
                    WHERE id = \(account)
                    """,
                    logger: logger
                )
                try await connection.query("DELETE FROM sessions WHERE account_id = \(account)", logger: logger)
            }
            return .done
        }
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
            lastFailedSignInMilliseconds: c.9,
            email: c.10,
            unverified: c.11
        )
    }
}
#endif
