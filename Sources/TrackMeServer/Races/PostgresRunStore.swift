#if PostgreSQL
import Logging
import PostgresNIO

/// The runs room's store on PostgreSQL: the hall store's connection pool, and the hall's own
/// answers for what runs share with other rooms (a device's readings, an account's name, the
/// access log).
final class PostgresRunStore: RunStore {
    private let store: PostgresServerStore
    private let client: PostgresClient
    private let logger: Logger

    init(_ store: PostgresServerStore) {
        self.store = store
        client = store.client
        logger = store.logger
    }

    private typealias RunColumns = (String, String, String, String, Int64, Int64, Bool, String, Int64, Double?, String, Int?, Int64?)
    private static let runColumns =
        "id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m, place, cap, closed_ms"
    private typealias EntryColumns = (
        String, String, String, Bool, Int64, Int64?, Double?, Double?, Int64?, Double?, Int64?, Int64?, Double?, Double?, Int64?, Bool, Int64?,
        Int64?, Int64?
    )
    private static let entryColumns = """
        run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms, finish_ms, held_lat, held_lon, \
        held_ms, health, removed_ms, hr_seq, hr_ms
        """

    func insertRun(_ run: Run) async throws -> Bool {
        let path = try StoreJSON.encode(run.path.points)
        return try await client.query(
            """
            INSERT INTO runs (id, code, name, organiser_id, start_ms, end_ms, enrolment_open, path, created_ms, distance_m, place, cap, closed_ms)
            VALUES (\(run.id), \(run.code), \(run.name), \(run.organiserAccountID), \(run.startMilliseconds), \(run.endMilliseconds),
                \(run.enrolmentOpen), \(path), \(run.createdMilliseconds), \(run.distanceMetres), \(run.place), \(run.participantCap),
                \(run.closedMilliseconds))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func run(id: String) async throws -> Run? {
        try await runs(PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM runs WHERE id = $1", binds: binds([id]))).first
    }

    func run(code: String) async throws -> Run? {
        try await runs(PostgresQuery(unsafeSQL: "SELECT \(Self.runColumns) FROM runs WHERE code = $1", binds: binds([code]))).first
    }

    func runs(_ query: RunListQuery, after: (startMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Run] {
        var bindings = PostgresBindings()
        var conditions: [String] = []
        func bind(_ value: some PostgresNonThrowingEncodable) -> String {
            bindings.append(value)
            return "$\(bindings.count)"
        }
        if let organiser = query.organiserAccountID { conditions.append("organiser_id = \(bind(organiser))") }
        if let text = query.text, !text.isEmpty {
            // strpos on lowered text: a `%` or `_` typed in the search box is a character, not a wildcard.
            let lowered = bind(text.lowercased())
            conditions.append("(strpos(lower(name), \(lowered)) > 0 OR strpos(lower(place), \(lowered)) > 0)")
        }
        if let status = query.status {
            let now = bind(query.now)
            conditions.append("\(RunListQuery.statusSQL(now: now)) = \(bind(status.rawValue))")
        }
        if let after {
            let start = bind(after.startMilliseconds)
            conditions.append("(start_ms < \(start) OR (start_ms = \(start) AND id < \(bind(after.id))))")
        }
        var sql = "SELECT \(Self.runColumns) FROM runs"
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY start_ms DESC, id DESC LIMIT \(bind(Int64(max(1, limit))))"
        return try await runs(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }

    private func runs(_ query: PostgresQuery) async throws -> [Run] {
        try await collect(client.query(query, logger: logger).decode(RunColumns.self)).compactMap { c in
            guard let path = RunPath.stored(c.7) else { return nil }
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
                distanceMetres: c.9,
                place: c.10,
                participantCap: c.11,
                closedMilliseconds: c.12
            )
        }
    }

    func setEnrolmentOpen(runID: String, open: Bool) async throws -> Bool {
        try await client.query("UPDATE runs SET enrolment_open = \(open) WHERE id = \(runID) RETURNING 1", logger: logger).collect().count == 1
    }

    func closeRun(runID: String, atMilliseconds: Int64) async throws -> Bool {
        try await client.query(
            "UPDATE runs SET closed_ms = coalesce(closed_ms, \(atMilliseconds)), enrolment_open = FALSE WHERE id = \(runID) RETURNING 1",
            logger: logger
        ).collect().count == 1
    }

    func enrol(_ entry: RunEntry) async throws -> EnrolmentOutcome {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            // The run's row locked: two devices enrolling at once are counted one after the other.
            var cap: Int?
            var found = false
            for try await (value) in try await connection.query("SELECT cap FROM runs WHERE id = \(entry.runID) FOR UPDATE", logger: logger)
                .decode(Int?.self)
            {
                cap = value
                found = true
            }
            guard found else { return .full }
            for try await _ in try await connection.query(
                "SELECT 1 FROM run_entries WHERE run_id = \(entry.runID) AND device_id = \(entry.deviceID)",
                logger: logger
            ) {
                return .alreadyEntered
            }
            if let cap {
                var entered = 0
                for try await count in try await connection.query(
                    "SELECT count(*)::BIGINT FROM run_entries WHERE run_id = \(entry.runID) AND removed_ms IS NULL",
                    logger: logger
                ).decode(Int64.self) {
                    entered = Int(count)
                }
                if entered >= cap { return .full }
            }
            try await connection.query(Self.upsert(entry), logger: logger)
            return .enrolled
        }
    }

    func runEntry(runID: String, deviceID: String) async throws -> RunEntry? {
        try await entries(
            PostgresQuery(
                unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE run_id = $1 AND device_id = $2",
                binds: binds([runID, deviceID])
            )
        ).first
    }

    func saveRunEntry(_ entry: RunEntry) async throws {
        try await client.query(Self.upsert(entry), logger: logger)
    }

    private static func upsert(_ entry: RunEntry) -> PostgresQuery {
        """
        INSERT INTO run_entries (run_id, device_id, name, show, enrolled_ms, checked_in_ms, lat, lon, fix_ms, distance_m, received_ms,
            finish_ms, held_lat, held_lon, held_ms, health, removed_ms, hr_seq, hr_ms)
        VALUES (\(entry.runID), \(entry.deviceID), \(entry.name), \(entry.showToSpectators), \(entry.enrolledMilliseconds),
            \(entry.checkedInMilliseconds), \(entry.latitude), \(entry.longitude), \(entry.fixMilliseconds), \(entry.distanceMetres),
            \(entry.receivedMilliseconds), \(entry.finishMilliseconds), \(entry.held?.latitude), \(entry.held?.longitude),
            \(entry.held?.milliseconds), \(entry.shareHealth), \(entry.removedMilliseconds), \(entry.newestHeartRate?.sequence),
            \(entry.newestHeartRate?.placedMilliseconds))
        ON CONFLICT (run_id, device_id) DO UPDATE SET name = excluded.name, show = excluded.show,
            checked_in_ms = excluded.checked_in_ms, lat = excluded.lat, lon = excluded.lon, fix_ms = excluded.fix_ms,
            distance_m = excluded.distance_m, received_ms = excluded.received_ms, finish_ms = excluded.finish_ms,
            held_lat = excluded.held_lat, held_lon = excluded.held_lon, held_ms = excluded.held_ms, health = excluded.health,
            removed_ms = excluded.removed_ms, hr_seq = excluded.hr_seq, hr_ms = excluded.hr_ms
        """
    }

    func runEntries(runID: String) async throws -> [RunEntry] {
        try await entries(
            PostgresQuery(
                unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE run_id = $1 AND removed_ms IS NULL ORDER BY enrolled_ms, device_id",
                binds: binds([runID])
            )
        )
    }

    func runEntries(runID: String, after: RunStanding?, limit: Int) async throws -> [RunEntry] {
        var bindings = PostgresBindings()
        bindings.append(runID)
        var sql = "SELECT \(Self.entryColumns) FROM run_entries WHERE run_id = $1 AND removed_ms IS NULL"
        if let after {
            sql += " AND (\(RunStanding.keySQL)) > ($2, $3, $4, $5, $6)"
            bindings.append(after.unfinished)
            bindings.append(after.finishMilliseconds)
            bindings.append(after.negatedDistance)
            bindings.append(after.fixMilliseconds)
            bindings.append(after.deviceID)
        }
        bindings.append(Int64(max(1, limit)))
        sql += " ORDER BY \(RunStanding.keySQL) LIMIT $\(bindings.count)"
        return try await entries(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }

    func runnerCount(runID: String) async throws -> Int {
        let rows = try await client.query(
            "SELECT count(*)::BIGINT FROM run_entries WHERE run_id = \(runID) AND removed_ms IS NULL",
            logger: logger
        )
        return Int(try await collect(rows.decode(Int64.self)).first ?? 0)
    }

    func runEntries(deviceID: String) async throws -> [RunEntry] {
        try await entries(PostgresQuery(unsafeSQL: "SELECT \(Self.entryColumns) FROM run_entries WHERE device_id = $1", binds: binds([deviceID])))
    }

    func removeRunEntry(runID: String, deviceID: String, atMilliseconds: Int64) async throws -> RemovalOutcome {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            var checkedIn: Int64??
            for try await value in try await connection.query(
                "SELECT checked_in_ms FROM run_entries WHERE run_id = \(runID) AND device_id = \(deviceID) AND removed_ms IS NULL FOR UPDATE",
                logger: logger
            ).decode(Int64?.self) {
                checkedIn = .some(value)
            }
            guard let checkedIn else { return .notFound }
            guard checkedIn == nil else { return .checkedIn }
            try await connection.query(
                "UPDATE run_entries SET removed_ms = \(atMilliseconds) WHERE run_id = \(runID) AND device_id = \(deviceID)",
                logger: logger
            )
            return .removed
        }
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
                held: RaceIngest.Fix.stored(milliseconds: c.14, latitude: c.12, longitude: c.13),
                newestHeartRate: StoredReadingReference.stored(sequence: c.17, placedMilliseconds: c.18),
                shareHealth: c.15,
                removedMilliseconds: c.16
            )
        }
    }

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        try await store.readings(query)
    }

    func heartRate(deviceID: String, sequence: Int64) async throws -> Int? {
        let rows = try await client.query(
            "SELECT body FROM readings WHERE device_id = \(deviceID) AND seq = \(sequence) AND kind = 'hr'",
            logger: logger
        )
        for try await sealed in rows.decode(String.self) {
            return Self.bpm(ofBody: try await store.personKeys.openBody(sealed, owner: deviceID, sequence: sequence))
        }
        return nil
    }

    func accountName(id: String) async throws -> String? {
        try await store.account(id: id)?.displayName
    }

    func appendAccessLog(_ entry: AccessLogEntry) async throws {
        try await store.appendAccessLog(entry)
    }

    private func binds(_ values: [String]) -> PostgresBindings {
        var bindings = PostgresBindings()
        for value in values { bindings.append(value) }
        return bindings
    }
}
#endif
