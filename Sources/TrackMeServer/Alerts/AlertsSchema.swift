import GRDB

/// The alerts room's own migrations, one per backend, append-only.
///
/// - `alerts-1`: the feed's events carry the server's wall time of the change (`at_ms`), so a
///   resuming dispatcher is replayed a short window (`FeedReplay`) and not the feed's whole
///   history. Events from before this migration have none and are never replayed.
/// - `alert_updates_type`: an alert's page reads its few non-position updates and its newest
///   positions without walking every update of a long alert.
/// - `alerts-2`: `undispatched_alerts`, the rules' alerts of people not enrolled in
///   AutomatedSOS (`UndispatchedAlert`): one row per alert, its latest update, the body sealed.
enum AlertsSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("alerts-1") { db in
            try db.execute(
                sql: """
                    ALTER TABLE feed ADD COLUMN at_ms INTEGER;
                    CREATE INDEX feed_at ON feed (at_ms);
                    CREATE INDEX alert_updates_type ON alert_updates (alert_id, type, update_seq);
                    """
            )
        }
        migrator.registerMigration("alerts-2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE undispatched_alerts (
                        alert_id TEXT PRIMARY KEY,
                        device_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        reason TEXT,
                        state TEXT NOT NULL,
                        update_seq INTEGER NOT NULL,
                        body TEXT NOT NULL,
                        raised_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL
                    );
                    CREATE INDEX undispatched_alerts_device ON undispatched_alerts (device_id, raised_ms);
                    """
            )
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "alerts-1",
            [
                "ALTER TABLE feed ADD COLUMN at_ms BIGINT",
                "CREATE INDEX feed_at ON feed (at_ms)",
                "CREATE INDEX alert_updates_type ON alert_updates (alert_id, type, update_seq)",
            ]
        ),
        (
            "alerts-2",
            [
                """
                CREATE TABLE undispatched_alerts (
                    alert_id TEXT PRIMARY KEY, device_id TEXT NOT NULL, kind TEXT NOT NULL, reason TEXT, state TEXT NOT NULL,
                    update_seq BIGINT NOT NULL, body TEXT NOT NULL, raised_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL)
                """,
                "CREATE INDEX undispatched_alerts_device ON undispatched_alerts (device_id, raised_ms)",
            ]
        ),
    ]
}
