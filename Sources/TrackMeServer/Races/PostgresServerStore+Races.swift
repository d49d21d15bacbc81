#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    private typealias TaxiColumns = (String, String, String, String?, Int64?, Int64, Double?, Double?, Int64?)

    func insertZone(_ zone: FleetZone) async throws {
        let polygon = try StoreJSON.encode(zone.polygon)
        try await client.query(
            "INSERT INTO fleet_zones (id, name, polygon, created_ms) VALUES (\(zone.id), \(zone.name), \(polygon), \(zone.createdMilliseconds))",
            logger: logger
        )
    }

    func zones() async throws -> [FleetZone] {
        let rows = try await client.query("SELECT id, name, polygon, created_ms FROM fleet_zones ORDER BY created_ms, id", logger: logger)
        return try await collect(rows.decode((String, String, String, Int64).self)).compactMap { c in
            guard let polygon: [[Double]] = try? StoreJSON.decode(c.2) else { return nil }
            return FleetZone(id: c.0, name: c.1, polygon: polygon, createdMilliseconds: c.3)
        }
    }

    func fleetTaxi(deviceID: String) async throws -> FleetTaxi? {
        try await taxis(
            PostgresQuery(
                unsafeSQL:
                    "SELECT device_id, name, state, zone_id, queued_ms, last_report_ms, lat, lon, fix_ms FROM fleet_taxis WHERE device_id = $1",
                binds: binds(deviceID)
            )
        ).first
    }

    func saveFleetTaxi(_ taxi: FleetTaxi) async throws {
        try await client.query(
            """
            INSERT INTO fleet_taxis (device_id, name, state, zone_id, queued_ms, last_report_ms, lat, lon, fix_ms)
            VALUES (\(taxi.deviceID), \(taxi.name), \(taxi.state), \(taxi.zoneID), \(taxi.queuedMilliseconds), \(taxi.lastReportMilliseconds),
                \(taxi.latitude), \(taxi.longitude), \(taxi.fixMilliseconds))
            ON CONFLICT (device_id) DO UPDATE SET name = excluded.name, state = excluded.state, zone_id = excluded.zone_id,
                queued_ms = excluded.queued_ms, last_report_ms = excluded.last_report_ms, lat = excluded.lat, lon = excluded.lon,
                fix_ms = excluded.fix_ms
            """,
            logger: logger
        )
    }

    func fleetTaxis() async throws -> [FleetTaxi] {
        try await taxis(
            PostgresQuery(
                unsafeSQL: "SELECT device_id, name, state, zone_id, queued_ms, last_report_ms, lat, lon, fix_ms FROM fleet_taxis ORDER BY device_id"
            )
        )
    }

    private func taxis(_ query: PostgresQuery) async throws -> [FleetTaxi] {
        try await collect(client.query(query, logger: logger).decode(TaxiColumns.self)).map { c in
            FleetTaxi(
                deviceID: c.0,
                name: c.1,
                state: c.2,
                zoneID: c.3,
                queuedMilliseconds: c.4,
                lastReportMilliseconds: c.5,
                latitude: c.6,
                longitude: c.7,
                fixMilliseconds: c.8
            )
        }
    }

    private func binds(_ value: String) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(value)
        return bindings
    }
}
#endif
