#if PostgreSQL
import Logging
import PostgresNIO

/// The fleet room on PostgreSQL: rides on the hall store's connection pool; zones, taxis and
/// tokens are the hall store's own (the taxis' rows are written by intake's reports).
final class PostgresFleetStore: FleetStore {
    private let store: PostgresServerStore
    private let client: PostgresClient
    private let logger: Logger

    init(_ store: PostgresServerStore) {
        self.store = store
        client = store.client
        logger = store.logger
    }

    func insertZone(_ zone: FleetZone) async throws { try await store.insertZone(zone) }
    func zones() async throws -> [FleetZone] { try await store.zones() }
    func fleetTaxis() async throws -> [FleetTaxi] { try await store.fleetTaxis() }
    func insertOperatorToken(_ token: StoredToken, createdMilliseconds: Int64) async throws {
        try await store.insertToken(token, createdMilliseconds: createdMilliseconds)
    }

    func insertRide(_ ride: Ride) async throws {
        let body = try StoreJSON.encode(ride)
        try await client.query(
            """
            INSERT INTO fleet_rides (id, open, version, created_ms, ended_ms, body)
            VALUES (\(ride.id), \(ride.state.isOpen), \(ride.version), \(ride.createdMilliseconds), \(ride.endedMilliseconds), \(body))
            """,
            logger: logger
        )
    }

    func ride(id: String) async throws -> Ride? {
        try await bodies(client.query("SELECT body FROM fleet_rides WHERE id = \(id)", logger: logger)).first
    }

    func openRides() async throws -> [Ride] {
        try await bodies(client.query("SELECT body FROM fleet_rides WHERE open ORDER BY created_ms, id", logger: logger))
    }

    func rides(endedSince: Int64, after: (createdMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Ride] {
        // NULL parameters switch the cursor off: one statement for every page.
        let afterMilliseconds = after?.createdMilliseconds
        let afterID = after?.id
        return try await bodies(
            client.query(
                """
                SELECT body FROM fleet_rides WHERE (open OR ended_ms >= \(endedSince))
                    AND (\(afterMilliseconds)::BIGINT IS NULL OR created_ms < \(afterMilliseconds)
                        OR (created_ms = \(afterMilliseconds) AND id < \(afterID)::TEXT))
                ORDER BY created_ms DESC, id DESC LIMIT \(Int64(max(1, limit)))
                """,
                logger: logger
            )
        )
    }

    func saveRide(_ ride: Ride, replacing version: Int64, actions: [RideDispatch.Action], now: Int64) async throws -> Bool {
        let body = try StoreJSON.encode(ride)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let updated = try await connection.query(
                """
                UPDATE fleet_rides SET open = \(ride.state.isOpen), version = \(ride.version), ended_ms = \(ride.endedMilliseconds), body = \(body)
                WHERE id = \(ride.id) AND version = \(version) RETURNING 1
                """,
                logger: logger
            ).collect().count
            guard updated == 1 else { return false }
            for action in actions {
                switch action {
                case .requeue(let deviceID):
                    try await connection.query(
                        "UPDATE fleet_taxis SET queued_ms = \(now) WHERE device_id = \(deviceID) AND queued_ms IS NOT NULL",
                        logger: logger
                    )
                case .onRide(let deviceID):
                    try await connection.query(
                        "UPDATE fleet_taxis SET state = 'on_ride', queued_ms = NULL WHERE device_id = \(deviceID)",
                        logger: logger
                    )
                }
            }
            return true
        }
    }

    private func bodies(_ rows: PostgresRowSequence) async throws -> [Ride] {
        var rides: [Ride] = []
        for try await body in rows.decode(String.self) { rides.append(try StoreJSON.decode(body)) }
        return rides
    }
}
#endif
