import GRDB
import TrackMeCore

/// The tables of people's data (Data4Help): wearer accounts linked to devices, third parties'
/// access requests (consents), the log of who read whose data, and the daily per-person
/// summaries and answered queries of the anonymised group figures; the carers a person linked
/// (`people-2`). Migrations per backend, append-only like the rest.
enum PeopleSchema {
    /// Heart-rate bins of the daily summaries: below 50, 50-59, ..., 140-149, 150 and above.
    static let binCount = 12

    static var binColumns: [String] { (0..<binCount).map { "h\($0)" } }
    static var alertColumns: [String] { GroupFigures.alertKinds.map { "a_\($0.rawValue)" } }

    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("people-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE wearer_devices (
                        account_id TEXT NOT NULL,
                        device_id TEXT NOT NULL PRIMARY KEY,
                        linked_ms INTEGER NOT NULL
                    );
                    CREATE INDEX wearer_devices_account ON wearer_devices (account_id);
                    CREATE TABLE access_requests (
                        id TEXT PRIMARY KEY,
                        organisation_id TEXT NOT NULL,
                        person_id TEXT NOT NULL,
                        kinds TEXT NOT NULL,
                        days INTEGER NOT NULL,
                        data_from_ms INTEGER,
                        purpose TEXT NOT NULL,
                        status TEXT NOT NULL,
                        requested_ms INTEGER NOT NULL,
                        answered_ms INTEGER,
                        granted_from_ms INTEGER,
                        expires_ms INTEGER,
                        ended_ms INTEGER,
                        ended_by TEXT
                    );
                    CREATE INDEX access_requests_person ON access_requests (person_id);
                    CREATE INDEX access_requests_organisation ON access_requests (organisation_id);
                    CREATE TABLE access_log (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        subject TEXT NOT NULL,
                        reader_id TEXT NOT NULL,
                        reader_name TEXT NOT NULL,
                        reader_role TEXT NOT NULL,
                        reason TEXT NOT NULL,
                        what TEXT NOT NULL,
                        at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX access_log_subject ON access_log (subject, at_ms);
                    CREATE TABLE person_days (
                        person_key TEXT NOT NULL,
                        day INTEGER NOT NULL,
                        age_band INTEGER NOT NULL,
                        cell_lat INTEGER,
                        cell_lon INTEGER,
                        hr_count INTEGER NOT NULL,
                        hr_sum INTEGER NOT NULL,
                        \(binColumns.map { "\($0) INTEGER NOT NULL DEFAULT 0" }.joined(separator: ",\n"))
                        ,
                        \(alertColumns.map { "\($0) INTEGER NOT NULL DEFAULT 0" }.joined(separator: ",\n")),
                        PRIMARY KEY (person_key, day)
                    );
                    CREATE INDEX person_days_group ON person_days (age_band, day, cell_lat, cell_lon);
                    CREATE TABLE group_queries (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        organisation_id TEXT NOT NULL,
                        age_from INTEGER NOT NULL,
                        age_to INTEGER NOT NULL,
                        south INTEGER NOT NULL,
                        west INTEGER NOT NULL,
                        north INTEGER NOT NULL,
                        east INTEGER NOT NULL,
                        day_from INTEGER NOT NULL,
                        day_to INTEGER NOT NULL,
                        people INTEGER NOT NULL,
                        at_ms INTEGER NOT NULL
                    );
                    CREATE TABLE people_rollup (id INTEGER PRIMARY KEY CHECK (id = 1), through_day INTEGER NOT NULL);
                    """
            )
        }
        // Carers: a person links other accounts as their carers (`CarerLink`).
        // `wearer_devices` says whose a device is (one account per device); a carer is linked to
        // the person, not to a device, and acts on all of the person's devices.
        migrator.registerMigration("people-2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE carer_links (
                        person_id TEXT NOT NULL,
                        carer_id TEXT NOT NULL,
                        may_export INTEGER NOT NULL,
                        granted_ms INTEGER NOT NULL,
                        granted_by TEXT NOT NULL,
                        PRIMARY KEY (person_id, carer_id)
                    );
                    CREATE INDEX carer_links_carer ON carer_links (carer_id);
                    """
            )
        }
        // The statistics' day summaries (`HeartRateDays`): one device's whole UTC day of
        // heart-rate counters, or only a late mark (`late_ms`) until a request summarises it.
        migrator.registerMigration("people-3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE heart_rate_days (
                        device_id TEXT NOT NULL,
                        day INTEGER NOT NULL,
                        computed_ms INTEGER,
                        limit_min INTEGER,
                        limit_max INTEGER,
                        summary TEXT,
                        late_ms INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (device_id, day)
                    );
                    """
            )
        }
        // The group figures' counters of each device's day (`DeviceDay`), added at intake.
        migrator.registerMigration("people-4") { db in
            try db.execute(
                sql: """
                    CREATE TABLE device_days (
                        device_id TEXT NOT NULL,
                        day INTEGER NOT NULL,
                        \(DeviceDay.columns.map { "\($0) INTEGER NOT NULL DEFAULT 0" }.joined(separator: ",\n"))
                        ,
                        PRIMARY KEY (device_id, day)
                    );
                    CREATE INDEX device_days_day ON device_days (day);
                    """
            )
        }
    }

    static var postgres: [(String, [String])] {
        [
            (
                "people-1",
                [
                    "CREATE TABLE wearer_devices (account_id TEXT NOT NULL, device_id TEXT NOT NULL PRIMARY KEY, linked_ms BIGINT NOT NULL)",
                    "CREATE INDEX wearer_devices_account ON wearer_devices (account_id)",
                    """
                    CREATE TABLE access_requests (
                        id TEXT PRIMARY KEY, organisation_id TEXT NOT NULL, person_id TEXT NOT NULL, kinds TEXT NOT NULL, days INTEGER NOT NULL,
                        data_from_ms BIGINT, purpose TEXT NOT NULL, status TEXT NOT NULL, requested_ms BIGINT NOT NULL, answered_ms BIGINT,
                        granted_from_ms BIGINT, expires_ms BIGINT, ended_ms BIGINT, ended_by TEXT)
                    """,
                    "CREATE INDEX access_requests_person ON access_requests (person_id)",
                    "CREATE INDEX access_requests_organisation ON access_requests (organisation_id)",
                    """
                    CREATE TABLE access_log (
                        id BIGSERIAL PRIMARY KEY, subject TEXT NOT NULL, reader_id TEXT NOT NULL, reader_name TEXT NOT NULL,
                        reader_role TEXT NOT NULL, reason TEXT NOT NULL, what TEXT NOT NULL, at_ms BIGINT NOT NULL)
                    """,
                    "CREATE INDEX access_log_subject ON access_log (subject, at_ms)",
                    """
                    CREATE TABLE person_days (
                        person_key TEXT NOT NULL, day INTEGER NOT NULL, age_band INTEGER NOT NULL, cell_lat INTEGER, cell_lon INTEGER,
                        hr_count BIGINT NOT NULL, hr_sum BIGINT NOT NULL,
                        \((binColumns + alertColumns).map { "\($0) BIGINT NOT NULL DEFAULT 0" }.joined(separator: ", ")),
                        PRIMARY KEY (person_key, day))
                    """,
                    "CREATE INDEX person_days_group ON person_days (age_band, day, cell_lat, cell_lon)",
                    """
                    CREATE TABLE group_queries (
                        id BIGSERIAL PRIMARY KEY, organisation_id TEXT NOT NULL, age_from INTEGER NOT NULL, age_to INTEGER NOT NULL,
                        south INTEGER NOT NULL, west INTEGER NOT NULL, north INTEGER NOT NULL, east INTEGER NOT NULL,
                        day_from INTEGER NOT NULL, day_to INTEGER NOT NULL, people BIGINT NOT NULL, at_ms BIGINT NOT NULL)
                    """,
                    "CREATE TABLE people_rollup (id INTEGER PRIMARY KEY CHECK (id = 1), through_day INTEGER NOT NULL)",
                ]
            ),
            (
                "people-2",
                [
                    """
                    CREATE TABLE carer_links (
                        person_id TEXT NOT NULL, carer_id TEXT NOT NULL, may_export INTEGER NOT NULL, granted_ms BIGINT NOT NULL,
                        granted_by TEXT NOT NULL, PRIMARY KEY (person_id, carer_id))
                    """,
                    "CREATE INDEX carer_links_carer ON carer_links (carer_id)",
                ]
            ),
            (
                "people-3",
                [
                    """
                    CREATE TABLE heart_rate_days (
                        device_id TEXT NOT NULL, day BIGINT NOT NULL, computed_ms BIGINT, limit_min INTEGER, limit_max INTEGER,
                        summary TEXT, late_ms BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (device_id, day))
                    """
                ]
            ),
            (
                "people-4",
                [
                    """
                    CREATE TABLE device_days (
                        device_id TEXT NOT NULL, day BIGINT NOT NULL,
                        \(DeviceDay.columns.map { "\($0) BIGINT NOT NULL DEFAULT 0" }.joined(separator: ", ")),
                        PRIMARY KEY (device_id, day))
                    """,
                    "CREATE INDEX device_days_day ON device_days (day)",
                ]
            ),
        ]
    }
}
