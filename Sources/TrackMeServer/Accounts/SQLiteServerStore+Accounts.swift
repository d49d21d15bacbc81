import GRDB

extension SQLiteServerStore {
    func insertAccount(_ account: Account) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO accounts (id, username, display_name, role, password_hash, disabled, created_ms, email, unverified)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    account.id, account.username, account.displayName, account.role.rawValue, account.passwordHash, account.disabled,
                    account.createdMilliseconds, account.email, account.unverified,
                ]
            )
            return db.changesCount == 1
        }
    }

    func account(id: String) async throws -> Account? {
        try await pool.read { db in try Self.account(db, where: "id = ?", id) }
    }

    func account(username: String) async throws -> Account? {
        try await pool.read { db in try Self.account(db, where: "username = ?", username) }
    }

    func accounts(after username: String?, limit: Int) async throws -> [Account] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM accounts WHERE ? IS NULL OR username > ? ORDER BY username LIMIT \(max(1, limit))",
                arguments: [username, username]
            ).compactMap(Self.account(from:))
        }
    }

    func setAccountDisabled(id: String, disabled: Bool) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE accounts SET disabled = ? WHERE id = ?", arguments: [disabled, id])
            guard db.changesCount == 1 else { return false }
            if disabled { try db.execute(sql: "DELETE FROM sessions WHERE account_id = ?", arguments: [id]) }
            return true
        }
    }

    @discardableResult
    func recordFailedSignIn(accountID: String, atMilliseconds: Int64) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE accounts SET failed_sign_ins = failed_sign_ins + 1, last_failed_sign_in_ms = ? WHERE id = ?",
                arguments: [atMilliseconds, accountID]
            )
            return try Int.fetchOne(db, sql: "SELECT failed_sign_ins FROM accounts WHERE id = ?", arguments: [accountID]) ?? 0
        }
    }

    func accounts(email: String) async throws -> [Account] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM accounts WHERE lower(email) = lower(?) ORDER BY username", arguments: [email])
                .compactMap(Self.account(from:))
        }
    }

    func setPassword(accountID: String, passwordHash: String, keepingSession: String?) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE accounts SET password_hash = ?, failed_sign_ins = 0, last_failed_sign_in_ms = NULL WHERE id = ?",
                arguments: [passwordHash, accountID]
            )
            guard db.changesCount == 1 else { return false }
            try db.execute(sql: "DELETE FROM sessions WHERE account_id = ? AND id <> ?", arguments: [accountID, keepingSession ?? ""])
            return true
        }
    }

    func deleteLapsedSignUp(username: String, createdBefore: Int64) async throws -> Bool {
        try await pool.write { db in
            guard
                let id = try String.fetchOne(
                    db,
                    sql: "SELECT id FROM accounts WHERE username = ? AND unverified AND created_ms < ?",
                    arguments: [username, createdBefore]
                )
            else { return false }
            try db.execute(sql: "DELETE FROM account_links WHERE account_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM accounts WHERE id = ?", arguments: [id])
            return true
        }
    }

    func insertAccountLink(_ link: StoredAccountLink) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO account_links (id, account_id, purpose, nonce_hash, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [link.id, link.accountID, link.purpose.rawValue, link.nonceHash, link.createdMilliseconds, link.expiresMilliseconds]
            )
        }
    }

    func accountLink(id: String) async throws -> StoredAccountLink? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM account_links WHERE id = ?", arguments: [id]),
                let purpose = AccountLinkPurpose(rawValue: try row.decode(forColumn: "purpose"))
            else { return nil }
            return StoredAccountLink(
                id: id,
                accountID: try row.decode(forColumn: "account_id"),
                purpose: purpose,
                nonceHash: try row.decode(forColumn: "nonce_hash"),
                createdMilliseconds: try row.decode(forColumn: "created_ms"),
                expiresMilliseconds: try row.decode(forColumn: "expires_ms"),
                usedMilliseconds: try row.decode(forColumn: "used_ms")
            )
        }
    }

    func useAccountLink(_ link: AccountLink, atMilliseconds now: Int64, newPasswordHash: String?) async throws -> AccountLinkUse {
        if link.purpose == .passwordReset, newPasswordHash == nil { return .unknown }
        return try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM account_links WHERE id = ?", arguments: [link.id]),
                try row.decode(forColumn: "account_id") as String == link.accountID,
                try row.decode(forColumn: "purpose") as String == link.purpose.rawValue,
                BearerToken.digestsEqual(try row.decode(forColumn: "nonce_hash"), link.nonceHash)
            else { return .unknown }
            let used: Int64? = try row.decode(forColumn: "used_ms")
            let expires: Int64 = try row.decode(forColumn: "expires_ms")
            if used != nil { return .used }
            if expires <= now { return .expired }
            try db.execute(
                sql: "UPDATE account_links SET used_ms = ? WHERE account_id = ? AND purpose = ? AND used_ms IS NULL",
                arguments: [now, link.accountID, link.purpose.rawValue]
            )
            switch link.purpose {
            case .verifyAccount:
                try db.execute(sql: "UPDATE accounts SET unverified = 0 WHERE id = ?", arguments: [link.accountID])
            case .passwordReset:
                try db.execute(
                    sql: """
                        UPDATE accounts SET password_hash = ?, failed_sign_ins = 0, last_failed_sign_in_ms = NULL, unverified = 0
                        WHERE id = ?
                        """,
                    arguments: [newPasswordHash, link.accountID]
                )
                try db.execute(sql: "DELETE FROM sessions WHERE account_id = ?", arguments: [link.accountID])
            }
            return .done
        }
    }

    func recordSignIn(accountID: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE accounts SET failed_sign_ins_before = failed_sign_ins, failed_sign_ins = 0 WHERE id = ? AND failed_sign_ins > 0",
                arguments: [accountID]
            )
        }
    }

    func insertSession(_ session: Session) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO sessions (id, secret_hash, account_id, csrf_token, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    session.id, session.secretHash, session.accountID, session.csrfToken, session.createdMilliseconds, session.expiresMilliseconds,
                ]
            )
        }
    }

    func session(id: String) async throws -> (Session, Account)? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM sessions WHERE id = ?", arguments: [id]),
                let account = try Self.account(db, where: "id = ?", try row.decode(forColumn: "account_id") as String)
            else { return nil }
            let session = Session(
                id: id,
                secretHash: try row.decode(forColumn: "secret_hash"),
                accountID: try row.decode(forColumn: "account_id"),
                csrfToken: try row.decode(forColumn: "csrf_token"),
                createdMilliseconds: try row.decode(forColumn: "created_ms"),
                expiresMilliseconds: try row.decode(forColumn: "expires_ms")
            )
            return (session, account)
        }
    }

    func deleteSession(id: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM sessions WHERE id = ?", arguments: [id]) }
    }

    func deleteExpiredSessions(now: Int64) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM sessions WHERE expires_ms <= ?", arguments: [now])
            return db.changesCount
        }
    }

    private static func account(_ db: Database, where condition: String, _ value: String) throws -> Account? {
        try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE \(condition)", arguments: [value]).flatMap(account(from:))
    }

    private static func account(from row: Row) throws -> Account? {
        guard let role = Role(rawValue: try row.decode(forColumn: "role")) else { return nil }
        return Account(
            id: try row.decode(forColumn: "id"),
            username: try row.decode(forColumn: "username"),
            displayName: try row.decode(forColumn: "display_name"),
            role: role,
            passwordHash: try row.decode(forColumn: "password_hash"),
            disabled: try row.decode(forColumn: "disabled"),
            createdMilliseconds: try row.decode(forColumn: "created_ms"),
            failedSignIns: try row.decode(forColumn: "failed_sign_ins"),
            failedSignInsBeforeLastSignIn: try row.decode(forColumn: "failed_sign_ins_before"),
            lastFailedSignInMilliseconds: try row.decode(forColumn: "last_failed_sign_in_ms"),
            email: try row.decode(forColumn: "email"),
            unverified: try row.decode(forColumn: "unverified")
        )
    }
}
