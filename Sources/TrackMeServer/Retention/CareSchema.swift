import GRDB

/// The tables of retention, erasure and care settings, one migration per backend (append-only).
///
/// - `feed_marks`: the highest feed id at each retention pass's time (the feed has no time
///   column), so feed events can be aged.
/// - `wipe_orders`: one row per erased device, keyed by a digest of its token (never the device
///   id, the person or the token's own hash), so the erased device is still told to wipe its
///   store at its next sync; aged with `retired_people`.
/// - `care_settings`: the person's thresholds, rule switches and contacts per device, versioned.
enum CareSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("care-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE feed_marks (at_ms INTEGER NOT NULL, max_id INTEGER NOT NULL);
                    CREATE TABLE wipe_orders (token_digest TEXT PRIMARY KEY, ordered_ms INTEGER NOT NULL);
                    CREATE TABLE care_settings (
                        device_id TEXT PRIMARY KEY,
                        version INTEGER NOT NULL,
                        settings TEXT NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        updated_by TEXT NOT NULL
                    );
                    CREATE INDEX alert_updates_received ON alert_updates (received_ms);
                    """
            )
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "care-1",
            [
                "CREATE TABLE feed_marks (at_ms BIGINT NOT NULL, max_id BIGINT NOT NULL)",
                "CREATE TABLE wipe_orders (token_digest TEXT PRIMARY KEY, ordered_ms BIGINT NOT NULL)",
                """
                CREATE TABLE care_settings (
                    device_id TEXT PRIMARY KEY, version BIGINT NOT NULL, settings TEXT NOT NULL, updated_ms BIGINT NOT NULL,
                    updated_by TEXT NOT NULL)
                """,
                "CREATE INDEX alert_updates_received ON alert_updates (received_ms)",
            ]
        )
    ]
}
