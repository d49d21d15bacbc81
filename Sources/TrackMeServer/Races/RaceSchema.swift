import GRDB

/// The tables of runs (Track4Run) and the taxi fleet, one migration per backend, named
/// `race-N` so they never meet another room's. Append-only: a change is a new migration.
enum RaceSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("race-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE runs (
                        id TEXT PRIMARY KEY,
                        code TEXT NOT NULL UNIQUE,
                        name TEXT NOT NULL,
                        organiser_id TEXT NOT NULL,
                        start_ms INTEGER NOT NULL,
                        end_ms INTEGER NOT NULL,
                        enrolment_open INTEGER NOT NULL DEFAULT 0,
                        path TEXT NOT NULL,
                        created_ms INTEGER NOT NULL
                    );
                    CREATE INDEX runs_organiser ON runs (organiser_id);
                    CREATE TABLE run_entries (
                        run_id TEXT NOT NULL REFERENCES runs (id),
                        device_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        show INTEGER NOT NULL,
                        enrolled_ms INTEGER NOT NULL,
                        checked_in_ms INTEGER,
                        lat REAL,
                        lon REAL,
                        fix_ms INTEGER,
                        distance_m REAL,
                        received_ms INTEGER,
                        PRIMARY KEY (run_id, device_id)
                    );
                    CREATE INDEX run_entries_device ON run_entries (device_id);
                    CREATE TABLE fleet_zones (
                        id TEXT PRIMARY KEY,
                        name TEXT NOT NULL,
                        polygon TEXT NOT NULL,
                        created_ms INTEGER NOT NULL
                    );
                    CREATE TABLE fleet_taxis (
                        device_id TEXT PRIMARY KEY,
                        name TEXT NOT NULL,
                        state TEXT NOT NULL,
                        zone_id TEXT,
                        queued_ms INTEGER,
                        last_report_ms INTEGER NOT NULL,
                        lat REAL,
                        lon REAL,
                        fix_ms INTEGER
                    );
                    """
            )
        }
        // The race distance of a run, and what counting along a runner's own fixes keeps
        // between them: the finish and a fix held back as a possible jump.
        migrator.registerMigration("race-2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE runs ADD COLUMN distance_m REAL;
                    ALTER TABLE run_entries ADD COLUMN finish_ms INTEGER;
                    ALTER TABLE run_entries ADD COLUMN held_lat REAL;
                    ALTER TABLE run_entries ADD COLUMN held_lon REAL;
                    ALTER TABLE run_entries ADD COLUMN held_ms INTEGER;
                    """
            )
        }
        // Where a run is, its participant cap and its close; a runner's health consent and
        // their removal by the organiser.
        migrator.registerMigration("race-3") { db in
            try db.execute(
                sql: """
                    ALTER TABLE runs ADD COLUMN place TEXT NOT NULL DEFAULT '';
                    ALTER TABLE runs ADD COLUMN cap INTEGER;
                    ALTER TABLE runs ADD COLUMN closed_ms INTEGER;
                    ALTER TABLE run_entries ADD COLUMN health INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE run_entries ADD COLUMN removed_ms INTEGER;
                    """
            )
        }
        // The lists of runs page newest start first: each page is a range of an index, not a
        // sort of every run.
        migrator.registerMigration("race-4-list-order") { db in
            try db.execute(
                sql: """
                    CREATE INDEX runs_start ON runs (start_ms, id);
                    CREATE INDEX runs_organiser_start ON runs (organiser_id, start_ms, id);
                    """
            )
        }
        // Which stored reading is a runner's newest heart rate: the organiser's view opens that
        // one row, where a search of the device's readings by time scanned all of them.
        migrator.registerMigration("race-5-newest-heart-rate") { db in
            try db.execute(
                sql: """
                    ALTER TABLE run_entries ADD COLUMN hr_seq INTEGER;
                    ALTER TABLE run_entries ADD COLUMN hr_ms INTEGER;
                    """
            )
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "race-1",
            [
                """
                CREATE TABLE runs (
                    id TEXT PRIMARY KEY, code TEXT NOT NULL UNIQUE, name TEXT NOT NULL, organiser_id TEXT NOT NULL,
                    start_ms BIGINT NOT NULL, end_ms BIGINT NOT NULL, enrolment_open BOOLEAN NOT NULL DEFAULT FALSE, path TEXT NOT NULL,
                    created_ms BIGINT NOT NULL)
                """,
                "CREATE INDEX runs_organiser ON runs (organiser_id)",
                """
                CREATE TABLE run_entries (
                    run_id TEXT NOT NULL REFERENCES runs (id), device_id TEXT NOT NULL, name TEXT NOT NULL, show BOOLEAN NOT NULL,
                    enrolled_ms BIGINT NOT NULL, checked_in_ms BIGINT, lat DOUBLE PRECISION, lon DOUBLE PRECISION, fix_ms BIGINT,
                    distance_m DOUBLE PRECISION, received_ms BIGINT, PRIMARY KEY (run_id, device_id))
                """,
                "CREATE INDEX run_entries_device ON run_entries (device_id)",
                "CREATE TABLE fleet_zones (id TEXT PRIMARY KEY, name TEXT NOT NULL, polygon TEXT NOT NULL, created_ms BIGINT NOT NULL)",
                """
                CREATE TABLE fleet_taxis (
                    device_id TEXT PRIMARY KEY, name TEXT NOT NULL, state TEXT NOT NULL, zone_id TEXT, queued_ms BIGINT,
                    last_report_ms BIGINT NOT NULL, lat DOUBLE PRECISION, lon DOUBLE PRECISION, fix_ms BIGINT)
                """,
            ]
        ),
        (
            "race-2",
            [
                "ALTER TABLE runs ADD COLUMN distance_m DOUBLE PRECISION",
                """
                ALTER TABLE run_entries ADD COLUMN finish_ms BIGINT, ADD COLUMN held_lat DOUBLE PRECISION, ADD COLUMN held_lon DOUBLE PRECISION,
                    ADD COLUMN held_ms BIGINT
                """,
            ]
        ),
        (
            "race-3",
            [
                "ALTER TABLE runs ADD COLUMN place TEXT NOT NULL DEFAULT '', ADD COLUMN cap BIGINT, ADD COLUMN closed_ms BIGINT",
                "ALTER TABLE run_entries ADD COLUMN health BOOLEAN NOT NULL DEFAULT FALSE, ADD COLUMN removed_ms BIGINT",
            ]
        ),
        (
            "race-4-list-order",
            [
                "CREATE INDEX runs_start ON runs (start_ms, id)",
                "CREATE INDEX runs_organiser_start ON runs (organiser_id, start_ms, id)",
            ]
        ),
        (
            "race-5-newest-heart-rate",
            ["ALTER TABLE run_entries ADD COLUMN hr_seq BIGINT, ADD COLUMN hr_ms BIGINT"]
        ),
    ]
}
