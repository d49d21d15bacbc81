import GRDB

/// What accounts people manage themselves add to the accounts table (an address to reach the
/// owner, and whether the owner has verified it), and the links sent to owners. Migrations per
/// backend named `accounts-N`; append-only like the rest. Accounts made before this (by an
/// admin) count as verified.
enum AccountSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("accounts-1-self-service") { db in
            try db.execute(sql: "ALTER TABLE accounts ADD COLUMN email TEXT")
            try db.execute(sql: "ALTER TABLE accounts ADD COLUMN unverified INTEGER NOT NULL DEFAULT 0")
            for statement in links { try db.execute(sql: statement) }
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "accounts-1-self-service",
            [
                "ALTER TABLE accounts ADD COLUMN email TEXT",
                "ALTER TABLE accounts ADD COLUMN unverified BOOLEAN NOT NULL DEFAULT FALSE",
            ] + links
        )
    ]

    /// One row per link sent: only the SHA-256 of its secret nonce is kept, so a copy of the
    /// database does not hold working links. `used_ms` is set by the first use (single-use).
    static let links = [
        """
        CREATE TABLE account_links (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            purpose TEXT NOT NULL,
            nonce_hash TEXT NOT NULL,
            created_ms BIGINT NOT NULL,
            expires_ms BIGINT NOT NULL,
            used_ms BIGINT
        )
        """,
        "CREATE INDEX account_links_account ON account_links (account_id)",
    ]
}
