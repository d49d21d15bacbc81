import GRDB

/// The store's schema as append-only migrations: a landed migration is never edited, a change is
/// a new one appended below.
enum StoreSchema {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-readings-alerts-cursor") { db in
            // `seq` is the rowid with AUTOINCREMENT, so SQLite itself never hands out a number
            // again, even after the highest rows were evicted. The timestamp's boot id is
            // interned in `boots`; the payload is ReadingBodyCodec's compact form.
            try db.execute(
                sql: """
                    CREATE TABLE boots (id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL UNIQUE);
                    CREATE TABLE readings (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        synced INTEGER NOT NULL DEFAULT 0,
                        boot INTEGER NOT NULL,
                        mono_ns INTEGER NOT NULL,
                        wall_ms INTEGER,
                        body BLOB NOT NULL
                    );
                    CREATE TABLE alert_updates (
                        alert_id TEXT NOT NULL,
                        update_seq INTEGER NOT NULL,
                        boot INTEGER NOT NULL,
                        mono_ns INTEGER NOT NULL,
                        body BLOB NOT NULL,
                        delivered INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (alert_id, update_seq)
                    );
                    CREATE TABLE in_flight (
                        batch_seq INTEGER PRIMARY KEY,
                        latest INTEGER NOT NULL,
                        dropped INTEGER NOT NULL,
                        heartbeat BLOB,
                        seqs BLOB NOT NULL
                    );
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                    """)
        }
        return migrator
    }
}

/// Keys of the `meta` table.
enum MetaKey {
    /// The next batch number to hand out (never reused).
    static let nextBatchSequence = "next_batch_seq"
    /// Readings dropped by the budget and not yet attached to a batch.
    static let droppedUnreported = "dropped_unreported"
    /// Readings dropped by the budget over the store's life.
    static let droppedTotal = "dropped_total"
    /// The generation this file was created in (see `StoreGeneration`).
    static let generation = "generation"
    /// The highest update number of an alert that reached the server (see
    /// `ReadingStore.nextAlertUpdateSequence`).
    static func alertDelivered(_ alertID: String) -> String { "alert_delivered:\(alertID)" }
}
