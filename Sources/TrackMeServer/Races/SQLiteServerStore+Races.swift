import Foundation
import GRDB

extension SQLiteServerStore {
    func insertRun(_ run: Run) async throws -> Bool {
        let path = try StoreJSON.encode(run.path.points)
        return try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO runs (id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    run.id, run.code, run.name, run.organiserAccountID, run.startMilliseconds, run.endMilliseconds, run.enrolmentOpen, path,
                    run.createdMilliseconds, run.distanceMetres,
                ]
            )
            return db.changesCount == 1
        }
    }

    func run(id: String) async throws -> Run? {
        // The mapping inside the closure: chained after it, the synchronous `read` would be
        // chosen and block a thread of the cooperative pool.
        try await pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM runs WHERE id = ?", arguments: [id]).flatMap(Self.run(from:)) }
    }

    func run(code: String) async throws -> Run? {
        try await pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM runs WHERE code = ?", arguments: [code]).flatMap(Self.run(from:)) }
    }

    func runs(organiserAccountID: String?) async throws -> [Run] {
        try await pool.read { db in
            if let organiserAccountID {
                return try Row.fetchAll(db, sql: "SELECT * FROM runs WHERE organiser_id = ? ORDER BY start_ms DESC", arguments: [organiserAccountID])
                    .compactMap(Self.run(from:))
            }
            return try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY start_ms DESC").compactMap(Self.run(from:))
        }
    }

    func setEnrolmentOpen(runID: String, open: Bool) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE runs SET enrolment_open = ? WHERE id = ?", arguments: [open, runID])
            return db.changesCount == 1
        }
    }

    func runEntry(runID: String, deviceID: String) async throws -> RunEntry? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM run_entries WHERE run_id = ? AND device_id = ?", arguments: [runID, deviceID]).map(
                Self.entry(from:)
            )
        }
    }

    func saveRunEntry(_ entry: RunEntry) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO run_entries (run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms,
                        finish_ms, held_lat, held_lon, held_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (run_id, device_id) DO UPDATE SET name = excluded.name, show = excluded.show,
                        checked_in_ms = excluded.checked_in_ms, lat = excluded.lat, lon = excluded.lon, fix_ms = excluded.fix_ms,
                        distance_m = excluded.distance_m, received_ms = excluded.received_ms, finish_ms = excluded.finish_ms,
                        held_lat = excluded.held_lat, held_lon = excluded.held_lon, held_ms = excluded.held_ms
                    """,
                arguments: [
                    entry.runID, entry.deviceID, entry.name, entry.showToSpectators, entry.enrolledMilliseconds, entry.checkedInMilliseconds,
                    entry.latitude, entry.longitude, entry.fixMilliseconds, entry.distanceMetres, entry.receivedMilliseconds,
                    entry.finishMilliseconds,
                    entry.held?.latitude, entry.held?.longitude, entry.held?.milliseconds,
                ]
            )
        }
    }

    func runEntries(runID: String) async throws -> [RunEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM run_entries WHERE run_id = ? ORDER BY enrolled_ms, device_id", arguments: [runID]).map(
                Self.entry(from:)
            )
        }
    }

    func runEntries(deviceID: String) async throws -> [RunEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM run_entries WHERE device_id = ?", arguments: [deviceID]).map(Self.entry(from:))
        }
    }

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
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM fleet_zones ORDER BY created_ms, id").compactMap { row in
                guard let polygon: [[Double]] = try? StoreJSON.decode(try row.decode(forColumn: "polygon")) else { return nil }
                return FleetZone(
                    id: try row.decode(forColumn: "id"),
                    name: try row.decode(forColumn: "name"),
                    polygon: polygon,
                    createdMilliseconds: try row.decode(forColumn: "created_ms")
                )
            }
        }
    }

    func fleetTaxi(deviceID: String) async throws -> FleetTaxi? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM fleet_taxis WHERE device_id = ?", arguments: [deviceID]).map(Self.taxi(from:))
        }
    }

    func saveFleetTaxi(_ taxi: FleetTaxi) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO fleet_taxis (device_id, name, state, zone_id, queued_ms, last_report_ms, lat, lon, fix_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (device_id) DO UPDATE SET name = excluded.name, state = excluded.state, zone_id = excluded.zone_id,
                        queued_ms = excluded.queued_ms, last_report_ms = excluded.last_report_ms, lat = excluded.lat, lon = excluded.lon,
                        fix_ms = excluded.fix_ms
                    """,
                arguments: [
                    taxi.deviceID, taxi.name, taxi.state, taxi.zoneID, taxi.queuedMilliseconds, taxi.lastReportMilliseconds, taxi.latitude,
                    taxi.longitude, taxi.fixMilliseconds,
                ]
            )
        }
    }

    func fleetTaxis() async throws -> [FleetTaxi] {
        try await pool.read { db in try Row.fetchAll(db, sql: "SELECT * FROM fleet_taxis ORDER BY device_id").map(Self.taxi(from:)) }
    }

    private static func run(from row: Row) throws -> Run? {
        guard let points: [[Double]] = try? StoreJSON.decode(try row.decode(forColumn: "path")),
            let path = try? RunPath(points: points)
        else { return nil }
        return Run(
            id: try row.decode(forColumn: "id"),
            code: try row.decode(forColumn: "code"),
            name: try row.decode(forColumn: "name"),
            organiserAccountID: try row.decode(forColumn: "organiser_id"),
            startMilliseconds: try row.decode(forColumn: "start_ms"),
            endMilliseconds: try row.decode(forColumn: "end_ms"),
            enrolmentOpen: try row.decode(forColumn: "enrolment_open"),
            path: path,
            createdMilliseconds: try row.decode(forColumn: "created_ms"),
            distanceMetres: try row.decode(forColumn: "distance_m")
        )
    }

    private static func entry(from row: Row) throws -> RunEntry {
        RunEntry(
            runID: try row.decode(forColumn: "run_id"),
            deviceID: try row.decode(forColumn: "device_id"),
            name: try row.decode(forColumn: "name"),
            showToSpectators: try row.decode(forColumn: "show"),
            enrolledMilliseconds: try row.decode(forColumn: "enrolled_ms"),
            checkedInMilliseconds: try row.decode(forColumn: "checked_in_ms"),
            latitude: try row.decode(forColumn: "lat"),
            longitude: try row.decode(forColumn: "lon"),
            fixMilliseconds: try row.decode(forColumn: "fix_ms"),
            distanceMetres: try row.decode(forColumn: "distance_m"),
            receivedMilliseconds: try row.decode(forColumn: "received_ms"),
            finishMilliseconds: try row.decode(forColumn: "finish_ms"),
            held: RaceIngest.Fix.stored(
                milliseconds: try row.decode(forColumn: "held_ms"),
                latitude: try row.decode(forColumn: "held_lat"),
                longitude: try row.decode(forColumn: "held_lon")
            )
        )
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
