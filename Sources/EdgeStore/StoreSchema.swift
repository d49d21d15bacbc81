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
                    """
            )
        }
        migrator.registerMigration("v2-alert-window-index") { db in
            // Budget eviction asks, per reading, whether an alert's first critical observation
            // lies within the alert window of it (same boot): an index lookup, so eviction costs
            // the same after a year of alerts as after one.
            try db.execute(sql: "CREATE INDEX alert_updates_window ON alert_updates (boot, mono_ns)")
        }
        migrator.registerMigration("v3-epoch-checksum-quarantine") { db in
            // `store_epoch`: chosen once when this file is created (SQLite's random(), 64 bits
            // from the OS), sent with every batch so that the server can tell a store that
            // started its numbering over (a wiped directory, a re-flash) from a resend (WIRE.md).
            // `crc`: CRC-32 of each reading's columns (`ReadingChecksum`), checked on every read;
            // NULL on rows written before this migration, which are read unchecked.
            // `quarantine`: rows that failed their check, kept byte for byte for recovery.
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO meta (key, value) VALUES ('store_epoch', random());
                    ALTER TABLE readings ADD COLUMN crc INTEGER;
                    CREATE TABLE quarantine (
                        seq INTEGER NOT NULL,
                        synced INTEGER NOT NULL,
                        boot INTEGER,
                        mono_ns INTEGER,
                        wall_ms INTEGER,
                        body BLOB,
                        crc INTEGER,
                        reason TEXT NOT NULL
                    );
                    CREATE TABLE salvage (
                        path TEXT PRIMARY KEY,
                        salvaged INTEGER NOT NULL,
                        unreadable INTEGER NOT NULL,
                        note TEXT
                    );
                    """
            )
        }
        DeviceStateSchema.register(in: &migrator)
        migrator.registerMigration("v5-alert-quarantine") { db in
            // Alert journal rows that fail to open (authentication under the store key)
            // or to decode, kept byte for byte with the reason, as `quarantine` keeps readings.
            try db.execute(
                sql: """
                    CREATE TABLE alert_quarantine (
                        alert_id TEXT NOT NULL,
                        update_seq INTEGER NOT NULL,
                        boot INTEGER,
                        mono_ns INTEGER,
                        body BLOB,
                        delivered INTEGER,
                        reason TEXT NOT NULL
                    )
                    """
            )
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
    /// This file's epoch (see the v3 migration and WIRE.md).
    static let storeEpoch = "store_epoch"
    /// Readings moved to `quarantine` over the file's life.
    static let quarantinedTotal = "quarantined_total"
    /// Readings salvaged from moved-aside files into this one.
    static let salvagedTotal = "salvaged_total"
    /// Rows of moved-aside files that could not be read during salvage.
    static let unsalvageableTotal = "unsalvageable_total"
    /// The fingerprint (`StoreKey.id`, as a signed 64-bit value) of the key whose ChaCha20-Poly1305
    /// seals this file's row bodies; absent in a store in clear. Never the key itself.
    static let storeKeyID = "store_key_id"
    /// Alert journal rows moved to `alert_quarantine` over the file's life.
    static let alertQuarantinedTotal = "alert_quarantined_total"
    /// The highest update number of an alert that reached the server (see
    /// `ReadingStore.nextAlertUpdateSequence`).
    static func alertDelivered(_ alertID: String) -> String { "alert_delivered:\(alertID)" }
}
