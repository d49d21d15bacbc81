import Foundation
import GRDB

extension SQLiteServerStore {
    func insertZone(_ zone: FleetZone) async throws {
        let polygon = try StoreJSON.encode(zone.polygon)
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO fleet_zones (id, name, polygon, created_ms) VALUES (?, ?, ?, ?)",
                arguments: [zone.id, zone.name, polygon, zone.createdMilliseconds]
            )
        }
    }

    func zones() async throws -> [FleetZone] {
        try await pool.read(Self.zones(_:))
    }

    func fleetTaxiAndZones(deviceID: String) async throws -> (taxi: FleetTaxi?, zones: [FleetZone]) {
        try await pool.read { db in (try Self.fleetTaxi(db, deviceID: deviceID), try Self.zones(db)) }
    }

    private static func zones(_ db: Database) throws -> [FleetZone] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM fleet_zones ORDER BY created_ms, id")).compactMap { row in
            guard let polygon: [[Double]] = try? StoreJSON.decode(try row.decode(forColumn: "polygon")) else { return nil }
            return FleetZone(
                id: try row.decode(forColumn: "id"),
                name: try row.decode(forColumn: "name"),
                polygon: polygon,
                createdMilliseconds: try row.decode(forColumn: "created_ms")
            )
        }
    }

    func fleetTaxi(deviceID: String) async throws -> FleetTaxi? {
        try await pool.read { db in try Self.fleetTaxi(db, deviceID: deviceID) }
    }

    private static func fleetTaxi(_ db: Database, deviceID: String) throws -> FleetTaxi? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM fleet_taxis WHERE device_id = ?"), arguments: [deviceID]).map(taxi(from:))
    }

    func saveFleetTaxi(_ taxi: FleetTaxi) async throws {
        try await pool.write { db in
            try db.cachedStatement(
                sql: """
                    INSERT INTO fleet_taxis (device_id, name, state, zone_id, queued_ms, last_report_ms, lat, lon, fix_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (device_id) DO UPDATE SET name = excluded.name, state = excluded.state, zone_id = excluded.zone_id,
                        queued_ms = excluded.queued_ms, last_report_ms = excluded.last_report_ms, lat = excluded.lat, lon = excluded.lon,
                        fix_ms = excluded.fix_ms
                    """
            ).execute(
                arguments: [
                    taxi.deviceID, taxi.name, taxi.state, taxi.zoneID, taxi.queuedMilliseconds, taxi.lastReportMilliseconds, taxi.latitude,
                    taxi.longitude, taxi.fixMilliseconds,
                ]
            )
        }
    }

    func fleetTaxis() async throws -> [FleetTaxi] {
        try await pool.read { db in try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM fleet_taxis ORDER BY device_id")).map(Self.taxi(from:)) }
    }

    private static func taxi(from row: Row) throws -> FleetTaxi {
        FleetTaxi(
            deviceID: try row.decode(forColumn: "device_id"),
            name: try row.decode(forColumn: "name"),
            state: try row.decode(forColumn: "state"),
            zoneID: try row.decode(forColumn: "zone_id"),
            queuedMilliseconds: try row.decode(forColumn: "queued_ms"),
            lastReportMilliseconds: try row.decode(forColumn: "last_report_ms"),
            latitude: try row.decode(forColumn: "lat"),
            longitude: try row.decode(forColumn: "lon"),
            fixMilliseconds: try row.decode(forColumn: "fix_ms")
        )
    }
}
