#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    private typealias RunColumns = (String, String, String, String, Int64, Int64, Bool, String, Int64, Double?)
    private static let runColumns = "id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m"
    private typealias EntryColumns = (
        String, String, String, Bool, Int64, Int64?, Double?, Double?, Int64?, Double?, Int64?, Int64?, Double?, Double?, Int64?
    )
    private static let entryColumns =
        "run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms, finish_ms, held_lat, held_lon, held_ms"
    private typealias TaxiColumns = (String, String, String, String?, Int64?, Int64, Double?, Double?, Int64?)

    func insertRun(_ run: Run) async throws -> Bool {
        let path = try StoreJSON.encode(run.path.points)
        return try await client.query(
            """
            INSERT INTO runs (id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m)
            VALUES (\(run.id), \(run.code), \(run.name), \(run.organiserAccountID), \(run.startMilliseconds), \(run.endMilliseconds),
                \(run.enrolmentOpen), \(path), \(run.createdMilliseconds), \(run.distanceMetres))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func run(id: String) async throws -> Run? {
        try await runs(PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM runs WHERE id = $1", binds: binds(id))).first
    }

    func run(code: String) async throws -> Run? {
        try await runs(PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM runs WHERE code = $1", binds: binds(code))).first
    }

    func runs(organiserAccountID: String?) async throws -> [Run] {
        if let organiserAccountID {
            return try await runs(
                PostgresQuery(
                    unsafeSQL: "SELECT \(Self.runColumns) FROM runs WHERE organiser_id = $1 ORDER BY start_ms DESC",
                    binds: binds(organiserAccountID)
                )
            )
        }
        return try await runs(PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM runs ORDER BY start_ms DESC"))
    }

    private func runs(_ query: PostgresQuery) async throws -> [Run] {
        try await collect(client.query(query, logger: logger).decode(RunColumns.self)).compactMap { c in
            guard let points: [[Double]] = try? StoreJSON.decode(c.7), let path = try? RunPath(points: points) else { return nil }
            return Run(
                id: c.0,
                code: c.1,
                name: c.2,
                organiserAccountID: c.3,
                startMilliseconds: c.4,
                endMilliseconds: c.5,
                enrolmentOpen: c.6,
                path: path,
                createdMilliseconds: c.8,
                distanceMetres: c.9
            )
        }
    }

    func setEnrolmentOpen(runID: String, open: Bool) async throws -> Bool {
        try await client.query("UPDATE runs SET enrolment_open = \(open) WHERE id = \(runID) RETURNING 1", logger: logger).collect().count == 1
    }

    func runEntry(runID: String, deviceID: String) async throws -> RunEntry? {
        var b = PostgresBindings()
        b.append(runID)
        b.append(deviceID)
        return try await entries(
            PostgresQuery(unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE run_id = $1 AND device_id = $2", binds: b)
        ).first
    }

    func saveRunEntry(_ entry: RunEntry) async throws {
        try await client.query(
            """
            INSERT INTO run_entries (run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms,
                finish_ms, held_lat, held_lon, held_ms)
            VALUES (\(entry.runID), \(entry.deviceID), \(entry.name), \(entry.showToSpectators), \(entry.enrolledMilliseconds),
                \(entry.checkedInMilliseconds), \(entry.latitude), \(entry.longitude), \(entry.fixMilliseconds), \(entry.distanceMetres),
                \(entry.receivedMilliseconds), \(entry.finishMilliseconds), \(entry.held?.latitude), \(entry.held?.longitude),
                \(entry.held?.milliseconds))
            ON CONFLICT (run_id, device_id) DO UPDATE SET name = excluded.name, show = excluded.show,
                checked_in_ms = excluded.checked_in_ms, lat = excluded.lat, lon = excluded.lon, fix_ms = excluded.fix_ms,
                distance_m = excluded.distance_m, received_ms = excluded.received_ms, finish_ms = excluded.finish_ms,
                held_lat = excluded.held_lat, held_lon = excluded.held_lon, held_ms = excluded.held_ms
            """,
            logger: logger
        )
    }

    func runEntries(runID: String) async throws -> [RunEntry] {
        try await entries(
            PostgresQuery(
                unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE run_id = $1 ORDER BY enrolled_ms, device_id",
                binds: binds(runID)
            )
        )
    }

    func runEntries(deviceID: String) async throws -> [RunEntry] {
        try await entries(PostgresQuery(unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE device_id = $1", binds: binds(deviceID)))
    }

    private func entries(_ query: PostgresQuery) async throws -> [RunEntry] {
        try await collect(client.query(query, logger: logger).decode(EntryColumns.self)).map { c in
            RunEntry(
                runID: c.0,
                deviceID: c.1,
                name: c.2,
                showToSpectators: c.3,
                enrolledMilliseconds: c.4,
                checkedInMilliseconds: c.5,
                latitude: c.6,
                longitude: c.7,
                fixMilliseconds: c.8,
                distanceMetres: c.9,
                receivedMilliseconds: c.10,
                finishMilliseconds: c.11,
                held: RaceIngest.Fix.stored(milliseconds: c.14, latitude: c.12, longitude: c.13)
            )
        }
    }

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
