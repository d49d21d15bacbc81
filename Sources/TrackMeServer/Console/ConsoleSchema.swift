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
                    """
            )
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
                    """
            )
        }
        migrator.registerMigration("console-3-sign-in-failures") { db in
            try db.execute(
                sql: """
                    ALTER TABLE accounts ADD COLUMN failed_sign_ins INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE accounts ADD COLUMN failed_sign_ins_before INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE accounts ADD COLUMN last_failed_sign_in_ms INTEGER;
                    """
            )
        }
        migrator.registerMigration("console-4-contact-attempts") { db in
            for statement in contactAttempts { try db.execute(sql: statement) }
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
        ("console-4-contact-attempts", contactAttempts),
    ]

    /// Each run of the contact notifier: claimed by inserting the row (one instance runs attempt
    /// N), finished with its result (`told`, `failed`, `timed_out`, `not_started`); a row never
    /// finished is an attempt cut short by a stop or crash. `purpose` is why the contact is told
    /// (`escalation`, `raised`, `closed`). Same SQL on both backends: INTEGER is 64-bit in SQLite
    /// and only indexes and small values are stored in the 32-bit ones on PostgreSQL. A contact
    /// told before attempts were recorded counts as told once, so an upgrade tells nobody twice.
    static let contactAttempts = [
        """
        CREATE TABLE contact_attempts (
            alert_id TEXT NOT NULL,
            contact_index INTEGER NOT NULL,
            purpose TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            started_ms BIGINT NOT NULL,
            finished_ms BIGINT,
            result TEXT,
            exit_status INTEGER,
            detail TEXT,
            PRIMARY KEY (alert_id, contact_index, purpose, attempt)
        )
        """,
        """
        INSERT INTO contact_attempts (alert_id, contact_index, purpose, attempt, started_ms, finished_ms, result, detail)
        SELECT alert_id, contact_index, 'escalation', 1, created_ms, created_ms, 'told', 'run before attempts were recorded'
        FROM contact_notifications
        """,
    ]
}
