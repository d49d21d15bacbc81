import GRDB

/// The fleet room's own table: rides, each stored whole as JSON (`Ride`) beside the columns the
/// room selects by. Append-only like the rest: a change is a new migration.
enum FleetSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("fleet-1-rides") { db in
            try db.execute(
                sql: """
                    CREATE TABLE fleet_rides (
                        id TEXT PRIMARY KEY, open INTEGER NOT NULL, version INTEGER NOT NULL, created_ms INTEGER NOT NULL,
                        ended_ms INTEGER, body TEXT NOT NULL);
                    CREATE INDEX fleet_rides_open ON fleet_rides (open, created_ms);
                    """
            )
        }
        // The rides list pages newest first: each page is a range of an index, not a sort of
        // every ride.
        migrator.registerMigration("fleet-2-ride-order") { db in
            try db.execute(sql: "CREATE INDEX fleet_rides_created ON fleet_rides (created_ms, id)")
        }
    }

    static let postgres: [(String, [String])] = [
        (
            "fleet-1-rides",
            [
                """
                CREATE TABLE fleet_rides (
                    id TEXT PRIMARY KEY, open BOOLEAN NOT NULL, version BIGINT NOT NULL, created_ms BIGINT NOT NULL,
                    ended_ms BIGINT, body TEXT NOT NULL)
                """,
                "CREATE INDEX fleet_rides_open ON fleet_rides (open, created_ms)",
            ]
        ),
        ("fleet-2-ride-order", ["CREATE INDEX fleet_rides_created ON fleet_rides (created_ms, id)"]),
    ]
}
