import GRDB

/// The tables of accounts, sessions and the alert desk (notes, resolution), one migration per
/// backend. Append-only like the rest: a change is a new migration.
enum ConsoleSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("console-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE accounts (
                        id TEXT PRIMARY KEY,
                        username TEXT NOT NULL UNIQUE,
                        display_name TEXT NOT NULL,
                        role TEXT NOT NULL,
                        password_hash TEXT NOT NULL,
                        disabled INTEGER NOT NULL DEFAULT 0,
                        created_ms INTEGER NOT NULL
                    );
                    CREATE TABLE sessions (
                        id TEXT PRIMARY KEY,
                        secret_hash TEXT NOT NULL,
                        account_id TEXT NOT NULL REFERENCES accounts (id),
                        csrf_token TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        expires_ms INTEGER NOT NULL
                    );
                    CREATE INDEX sessions_account ON sessions (account_id);
                    CREATE TABLE alert_notes (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        alert_id TEXT NOT NULL,
                        author TEXT NOT NULL,
                        text TEXT NOT NULL,
                        created_ms INTEGER NOT NULL
                    );
                    CREATE INDEX alert_notes_alert ON alert_notes (alert_id);
                    ALTER TABLE alerts ADD COLUMN outcome TEXT;
                    ALTER TABLE alerts ADD COLUMN resolved_ms INTEGER;
                    ALTER TABLE alerts ADD COLUMN resolved_by TEXT;
                    CREATE INDEX alerts_device ON alerts (device_id);
                    """)
        }
        migrator.registerMigration("console-2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE contact_notifications (
                        alert_id TEXT NOT NULL,
                        contact_index INTEGER NOT NULL,
                        nonce TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        expires_ms INTEGER NOT NULL,
                        confirmed_ms INTEGER,
                        PRIMARY KEY (alert_id, contact_index)
                    );
                    """)
        }
        migrator.registerMigration("console-3-sign-in-failures") { db in
            try db.execute(
                sql: """
                    ALTER TABLE accounts ADD COLUMN failed_sign_ins INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE accounts ADD COLUMN failed_sign_ins_before INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE accounts ADD COLUMN last_failed_sign_in_ms INTEGER;
                    """)
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "console-1",
            [
                """
                CREATE TABLE accounts (
                    id TEXT PRIMARY KEY, username TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL, role TEXT NOT NULL,
                    password_hash TEXT NOT NULL, disabled BOOLEAN NOT NULL DEFAULT FALSE, created_ms BIGINT NOT NULL)
                """,
                """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, account_id TEXT NOT NULL REFERENCES accounts (id),
                    csrf_token TEXT NOT NULL, created_ms BIGINT NOT NULL, expires_ms BIGINT NOT NULL)
                """,
                "CREATE INDEX sessions_account ON sessions (account_id)",
                """
                CREATE TABLE alert_notes (
                    id BIGSERIAL PRIMARY KEY, alert_id TEXT NOT NULL, author TEXT NOT NULL, text TEXT NOT NULL, created_ms BIGINT NOT NULL)
                """,
                "CREATE INDEX alert_notes_alert ON alert_notes (alert_id)",
                "ALTER TABLE alerts ADD COLUMN outcome TEXT",
                "ALTER TABLE alerts ADD COLUMN resolved_ms BIGINT",
                "ALTER TABLE alerts ADD COLUMN resolved_by TEXT",
                "CREATE INDEX alerts_device ON alerts (device_id)",
            ]
        ),
        (
            "console-2",
            [
                """
                CREATE TABLE contact_notifications (
                    alert_id TEXT NOT NULL, contact_index INTEGER NOT NULL, nonce TEXT NOT NULL, created_ms BIGINT NOT NULL,
                    expires_ms BIGINT NOT NULL, confirmed_ms BIGINT, PRIMARY KEY (alert_id, contact_index))
                """
            ]
        ),
        (
            "console-3-sign-in-failures",
            [
                "ALTER TABLE accounts ADD COLUMN failed_sign_ins BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE accounts ADD COLUMN failed_sign_ins_before BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE accounts ADD COLUMN last_failed_sign_in_ms BIGINT",
            ]
        ),
    ]
}
