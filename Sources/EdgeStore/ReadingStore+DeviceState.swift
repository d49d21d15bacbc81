public import Foundation
import GRDB

/// Small values the agent keeps across restarts beside its readings: the learned
/// resting heart rate (`RestingHeartRateEstimator`, as JSON) and whether the wearer paused
/// monitoring. One row per key, replaced on every write; never synced, never evicted.
extension ReadingStore {
    /// Keys the agent uses.
    public enum DeviceStateKey {
        public static let restingHeartRate = "resting_heart_rate_estimator"
        public static let monitoringPaused = "monitoring_paused"
        /// The wall-clock offsets learned per boot (`WallClockCorrection`, as JSON).
        public static let wallClockAnchors = "wall_clock_anchors"
        /// The device's bearer token, kept here only in an encrypted store: the agent
        /// takes it from its credential or token file and keeps it sealed, so that the file can
        /// be removed after the first start (STORE-KEY.md).
        public static let deviceToken = "device_token"
        /// The latest state of the last alert raised (`AlertRecord`, as JSON): delivered,
        /// acknowledged, resolved or cancelled since its raise was journaled, so that a restart
        /// restores what is still open and not what the wearer already cancelled.
        public static let alertState = "alert_state"
        /// The contacts the local fallback told of the last alert raised (`setContactsTold`).
        public static let contactsTold = "alert_contacts_told"
    }

    /// The value stored under `key`, or nil if there is none. In an encrypted store a value that
    /// fails authentication (altered, or moved from another key) is a `badRecord` error.
    public func deviceState(_ key: String) throws(StoreError) -> Data? {
        let stored = try read { db in try Data.fetchOne(db, sql: "SELECT value FROM device_state WHERE key = ?", arguments: [key]) }
        guard let stored else { return nil }
        return try deviceStateValue(stored, key: key)
    }

    /// Stores `value` under `key` (a durable commit of its own).
    public func setDeviceState(_ value: Data, for key: String) throws(StoreError) {
        do {
            let stored = try storedDeviceState(value, key: key)
            try write { db in
                try db.execute(
                    sql: "INSERT INTO device_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    arguments: [key, stored]
                )
            }
        } catch {
            throw Self.storeError(error, path: configuration.path)
        }
    }
}

/// The `device_state` table, in its own append-only migration.
enum DeviceStateSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v4-device-state") { db in
            try db.execute(sql: "CREATE TABLE device_state (key TEXT PRIMARY KEY, value BLOB NOT NULL)")
        }
    }
}
