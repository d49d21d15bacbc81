import Foundation
import GRDB

/// The runs room's store on the SQLite file: the hall store's `DatabasePool` (one writer for
/// the file), and the hall's own answers for what runs share with other rooms (a device's
/// readings, an account's name, the access log).
final class SQLiteRunStore: RunStore {
    private let store: SQLiteServerStore
    private let pool: DatabasePool

    init(_ store: SQLiteServerStore) {
        self.store = store
        pool = store.pool
    }

    func insertRun(_ run: Run) async throws -> Bool {
        let path = try StoreJSON.encode(run.path.points)
        return try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO runs (id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m, place, cap,
                        closed_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    run.id, run.code, run.name, run.organiserAccountID, run.startMilliseconds, run.endMilliseconds, run.enrolmentOpen, path,
                    run.createdMilliseconds, run.distanceMetres, run.place, run.participantCap, run.closedMilliseconds,
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

    func runs(_ query: RunListQuery, after: (startMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Run] {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let organiser = query.organiserAccountID {
            conditions.append("organiser_id = ?")
            arguments += [organiser]
        }
        if let text = query.text, !text.isEmpty {
            // instr on lowered text: a `%` or `_` typed in the search box is a character, not a wildcard.
            conditions.append("(instr(lower(name), ?) > 0 OR instr(lower(place), ?) > 0)")
            arguments += [text.lowercased(), text.lowercased()]
        }
        if let status = query.status {
            conditions.append("\(RunListQuery.statusSQL(now: "?")) = ?")
            arguments += [query.now, query.now, status.rawValue]
        }
        var sql = "SELECT * FROM runs"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        SQLiteKeysetPage(time: "start_ms", id: "id", newestFirst: true)
            .append(to: &sql, &arguments, after: after.map { ($0.startMilliseconds, $0.id) }, limit: limit, filtered: !conditions.isEmpty)
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).compactMap(Self.run(from:)) }
    }

    func setEnrolmentOpen(runID: String, open: Bool) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE runs SET enrolment_open = ? WHERE id = ?", arguments: [open, runID])
            return db.changesCount == 1
        }
    }

    func closeRun(runID: String, atMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE runs SET closed_ms = coalesce(closed_ms, ?), enrolment_open = 0 WHERE id = ?",
                arguments: [atMilliseconds, runID]
            )
            return db.changesCount == 1
        }
    }

    func enrol(_ entry: RunEntry) async throws -> EnrolmentOutcome {
        try await pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM run_entries WHERE run_id = ? AND device_id = ?", arguments: [entry.runID, entry.deviceID])
                != nil
            {
                return .alreadyEntered
            }
            let cap = try Int?.fetchOne(db, sql: "SELECT cap FROM runs WHERE id = ?", arguments: [entry.runID]) ?? nil
            if let cap {
                let entered =
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM run_entries WHERE run_id = ? AND removed_ms IS NULL", arguments: [entry.runID])
                    ?? 0
                if entered >= cap { return .full }
            }
            try Self.upsert(entry, db)
            return .enrolled
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
        try await pool.write { db in try Self.upsert(entry, db) }
    }

    func runEntries(runID: String) async throws -> [RunEntry] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT * FROM run_entries WHERE run_id = ? AND removed_ms IS NULL ORDER BY enrolled_ms, device_id",
                arguments: [runID]
            ).map(Self.entry(from:))
        }
    }

    func runEntries(runID: String, after: RunStanding?, limit: Int) async throws -> [RunEntry] {
        var sql = "SELECT * FROM run_entries WHERE run_id = ? AND removed_ms IS NULL"
        var arguments: StatementArguments = [runID]
        if let after {
            sql += " AND (\(RunStanding.keySQL)) > (?, ?, ?, ?, ?)"
            arguments += [after.unfinished, after.finishMilliseconds, after.negatedDistance, after.fixMilliseconds, after.deviceID]
        }
        sql += " ORDER BY \(RunStanding.keySQL) LIMIT ?"
        arguments += [max(1, limit)]
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map(Self.entry(from:)) }
    }

    func runnerCount(runID: String) async throws -> Int {
        try await pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM run_entries WHERE run_id = ? AND removed_ms IS NULL", arguments: [runID]) ?? 0
        }
    }

    func runEntries(deviceID: String) async throws -> [RunEntry] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM run_entries WHERE device_id = ?", arguments: [deviceID]).map(Self.entry(from:))
        }
    }

    func removeRunEntry(runID: String, deviceID: String, atMilliseconds: Int64) async throws -> RemovalOutcome {
        try await pool.write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT checked_in_ms FROM run_entries WHERE run_id = ? AND device_id = ? AND removed_ms IS NULL",
                    arguments: [runID, deviceID]
                )
            else { return .notFound }
            let checkedIn: Int64? = try row.decode(forColumn: "checked_in_ms")
            guard checkedIn == nil else { return .checkedIn }
            try db.execute(
                sql: "UPDATE run_entries SET removed_ms = ? WHERE run_id = ? AND device_id = ?",
                arguments: [atMilliseconds, runID, deviceID]
            )
            return .removed
        }
    }

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        try await store.readings(query)
    }

    func heartRate(deviceID: String, sequence: Int64) async throws -> Int? {
        let sealed = try await pool.read { db in
            try String.fetchOne(
                db,
                sql: "SELECT body FROM readings WHERE device_id = ? AND seq = ? AND kind = 'hr'",
                arguments: [deviceID, sequence]
            )
        }
        guard let sealed else { return nil }
        return Self.bpm(ofBody: try await store.personKeys.openBody(sealed, owner: deviceID, sequence: sequence))
    }

    func accountName(id: String) async throws -> String? {
        try await store.account(id: id)?.displayName
    }

    func appendAccessLog(_ entry: AccessLogEntry) async throws {
        try await store.appendAccessLog(entry)
    }

    private static func upsert(_ entry: RunEntry, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO run_entries (run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms,
                    finish_ms, held_lat, held_lon, held_ms, health, removed_ms, hr_seq, hr_ms)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (run_id, device_id) DO UPDATE SET name = excluded.name, show = excluded.show,
                    checked_in_ms = excluded.checked_in_ms, lat = excluded.lat, lon = excluded.lon, fix_ms = excluded.fix_ms,
                    distance_m = excluded.distance_m, received_ms = excluded.received_ms, finish_ms = excluded.finish_ms,
                    held_lat = excluded.held_lat, held_lon = excluded.held_lon, held_ms = excluded.held_ms, health = excluded.health,
                    removed_ms = excluded.removed_ms, hr_seq = excluded.hr_seq, hr_ms = excluded.hr_ms
                """,
            arguments: [
                entry.runID, entry.deviceID, entry.name, entry.showToSpectators, entry.enrolledMilliseconds, entry.checkedInMilliseconds,
                entry.latitude, entry.longitude, entry.fixMilliseconds, entry.distanceMetres, entry.receivedMilliseconds,
                entry.finishMilliseconds, entry.held?.latitude, entry.held?.longitude, entry.held?.milliseconds, entry.shareHealth,
                entry.removedMilliseconds, entry.newestHeartRate?.sequence, entry.newestHeartRate?.placedMilliseconds,
            ]
        )
    }

    private static func run(from row: Row) throws -> Run? {
        guard let path = RunPath.stored(try row.decode(forColumn: "path")) else { return nil }
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
            distanceMetres: try row.decode(forColumn: "distance_m"),
            place: try row.decode(forColumn: "place"),
            participantCap: try row.decode(forColumn: "cap"),
            closedMilliseconds: try row.decode(forColumn: "closed_ms")
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
            ),
            newestHeartRate: StoredReadingReference.stored(
                sequence: try row.decode(forColumn: "hr_seq"),
                placedMilliseconds: try row.decode(forColumn: "hr_ms")
            ),
            shareHealth: try row.decode(forColumn: "health"),
            removedMilliseconds: try row.decode(forColumn: "removed_ms")
        )
    }
}
