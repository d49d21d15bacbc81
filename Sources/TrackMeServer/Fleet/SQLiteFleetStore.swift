import GRDB

/// The fleet room on the SQLite file: rides on the hall store's `DatabasePool`; zones, taxis and
/// tokens are the hall store's own (the taxis' rows are written by intake's reports).
final class SQLiteFleetStore: FleetStore {
    private let store: SQLiteServerStore
    private let pool: DatabasePool

    init(_ store: SQLiteServerStore) {
        self.store = store
        pool = store.pool
    }

    func insertZone(_ zone: FleetZone) async throws { try await store.insertZone(zone) }
    func zones() async throws -> [FleetZone] { try await store.zones() }
    func fleetTaxis() async throws -> [FleetTaxi] { try await store.fleetTaxis() }
    func insertOperatorToken(_ token: StoredToken, createdMilliseconds: Int64) async throws {
        try await store.insertToken(token, createdMilliseconds: createdMilliseconds)
    }

    func insertRide(_ ride: Ride) async throws {
        let body = try StoreJSON.encode(ride)
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO fleet_rides (id, open, version, created_ms, ended_ms, body) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [ride.id, ride.state.isOpen, ride.version, ride.createdMilliseconds, ride.endedMilliseconds, body]
            )
        }
    }

    func ride(id: String) async throws -> Ride? {
        try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT body FROM fleet_rides WHERE id = ?", arguments: [id]).map { try StoreJSON.decode($0) }
        }
    }

    func openRides() async throws -> [Ride] {
        try await pool.read { db in
            try String.fetchAll(db.cachedStatement(sql: "SELECT body FROM fleet_rides WHERE open = 1 ORDER BY created_ms, id")).map {
                try StoreJSON.decode($0)
            }
        }
    }

    func rides(endedSince: Int64, after: (createdMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Ride] {
        var sql = "SELECT body FROM fleet_rides WHERE (open = 1 OR ended_ms >= ?)"
        var arguments: StatementArguments = [endedSince]
        SQLiteKeysetPage(time: "created_ms", id: "id", newestFirst: true)
            .append(to: &sql, &arguments, after: after.map { ($0.createdMilliseconds, $0.id) }, limit: limit, filtered: true)
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in try String.fetchAll(db, sql: finalSQL, arguments: finalArguments).map { try StoreJSON.decode($0) } }
    }

    func saveRide(_ ride: Ride, replacing version: Int64, actions: [RideDispatch.Action], now: Int64) async throws -> Bool {
        let body = try StoreJSON.encode(ride)
        return try await pool.write { db in
            try db.execute(
                sql: "UPDATE fleet_rides SET open = ?, version = ?, ended_ms = ?, body = ? WHERE id = ? AND version = ?",
                arguments: [ride.state.isOpen, ride.version, ride.endedMilliseconds, body, ride.id, version]
            )
            guard db.changesCount == 1 else { return false }
            for action in actions {
                switch action {
                case .requeue(let deviceID):
                    try db.execute(
                        sql: "UPDATE fleet_taxis SET queued_ms = ? WHERE device_id = ? AND queued_ms IS NOT NULL",
                        arguments: [now, deviceID]
                    )
                case .onRide(let deviceID):
                    try db.execute(
                        sql: "UPDATE fleet_taxis SET state = ?, queued_ms = NULL WHERE device_id = ?",
                        arguments: ["on_ride", deviceID]
                    )
                }
            }
            return true
        }
    }
}
