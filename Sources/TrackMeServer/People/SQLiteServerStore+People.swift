import GRDB

extension SQLiteServerStore {
    func linkDevice(accountID: String, deviceID: String, atMilliseconds: Int64) async throws -> LinkOutcome {
        try await pool.write { db in
            if let existing = try String.fetchOne(db, sql: "SELECT account_id FROM wearer_devices WHERE device_id = ?", arguments: [deviceID]) {
                return existing == accountID ? .alreadyLinked : .linkedToAnother
            }
            try db.execute(
                sql: "INSERT INTO wearer_devices (account_id, device_id, linked_ms) VALUES (?, ?, ?)",
                arguments: [accountID, deviceID, atMilliseconds]
            )
            return .linked
        }
    }

    func linkedDevices(accountID: String) async throws -> [String] {
        try await pool.read { db in
            try String.fetchAll(db, sql: "SELECT device_id FROM wearer_devices WHERE account_id = ? ORDER BY device_id", arguments: [accountID])
        }
    }

    func wearerAccount(deviceID: String) async throws -> String? {
        try await pool.read { db in try String.fetchOne(db, sql: "SELECT account_id FROM wearer_devices WHERE device_id = ?", arguments: [deviceID]) }
    }

    func alertIDs(deviceIDs: [String]) async throws -> [String] {
        guard !deviceIDs.isEmpty else { return [] }
        return try await pool.read { db in
            try String.fetchAll(
                db,
                sql: "SELECT alert_id FROM alerts WHERE device_id IN (\(deviceIDs.map { _ in "?" }.joined(separator: ","))) ORDER BY created_ms DESC",
                arguments: StatementArguments(deviceIDs)
            )
        }
    }

    func latestReadingSequence(deviceID: String) async throws -> Int64 {
        try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM readings WHERE device_id = ?", arguments: [deviceID]) ?? 0 }
    }

    private static let requestColumns =
        "id, organisation_id, person_id, kinds, days, data_from_ms, purpose, status, requested_ms, answered_ms, granted_from_ms, expires_ms, ended_ms, ended_by"

    func insertAccessRequest(_ request: AccessRequest) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO access_requests (\(Self.requestColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: Self.arguments(request)
            )
        }
    }

    func accessRequest(id: String) async throws -> AccessRequest? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT \(Self.requestColumns) FROM access_requests WHERE id = ?", arguments: [id]).flatMap(Self.request(from:))
        }
    }

    func accessRequests(personID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest] {
        try await requests(column: "person_id", value: personID, before: before, limit: limit)
    }

    func accessRequests(organisationID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest] {
        try await requests(column: "organisation_id", value: organisationID, before: before, limit: limit)
    }

    /// One person's or one organisation's requests, newest first (the id breaking ties).
    private func requests(
        column: String,
        value: String,
        before: (requestedMilliseconds: Int64, id: String)?,
        limit: Int?
    ) async throws
        -> [AccessRequest]
    {
        var sql = "SELECT \(Self.requestColumns) FROM access_requests WHERE \(column) = ?"
        var arguments: StatementArguments = [value]
        SQLiteKeysetPage(time: "requested_ms", id: "id", newestFirst: true)
            .append(to: &sql, &arguments, after: before.map { ($0.requestedMilliseconds, $0.id) }, limit: limit, filtered: true)
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).compactMap(Self.request(from:)) }
    }

    func updateAccessRequest(_ request: AccessRequest, expected: AccessRequest.Status) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE access_requests SET status = ?, answered_ms = ?, granted_from_ms = ?, expires_ms = ?, ended_ms = ?, ended_by = ?
                    WHERE id = ? AND status = ?
                    """,
                arguments: [
                    request.status.rawValue, request.answeredMilliseconds, request.grantedFromMilliseconds, request.expiresMilliseconds,
                    request.endedMilliseconds, request.endedBy, request.id, expected.rawValue,
                ]
            )
            return db.changesCount == 1
        }
    }

    private static func arguments(_ r: AccessRequest) -> StatementArguments {
        [
            r.id, r.organisationID, r.personID, r.kinds.map(\.rawValue).sorted().joined(separator: ","), r.days, r.dataFromMilliseconds, r.purpose,
            r.status.rawValue, r.requestedMilliseconds, r.answeredMilliseconds, r.grantedFromMilliseconds, r.expiresMilliseconds,
            r.endedMilliseconds, r.endedBy,
        ]
    }

    private static func request(from row: Row) throws -> AccessRequest? {
        guard let status = AccessRequest.Status(rawValue: try row.decode(forColumn: "status")) else { return nil }
        let kinds: String = try row.decode(forColumn: "kinds")
        return AccessRequest(
            id: try row.decode(forColumn: "id"),
            organisationID: try row.decode(forColumn: "organisation_id"),
            personID: try row.decode(forColumn: "person_id"),
            kinds: Set(kinds.split(separator: ",").compactMap { PersonDataKind(rawValue: String($0)) }),
            days: try row.decode(forColumn: "days"),
            dataFromMilliseconds: try row.decode(forColumn: "data_from_ms"),
            purpose: try row.decode(forColumn: "purpose"),
            status: status,
            requestedMilliseconds: try row.decode(forColumn: "requested_ms"),
            answeredMilliseconds: try row.decode(forColumn: "answered_ms"),
            grantedFromMilliseconds: try row.decode(forColumn: "granted_from_ms"),
            expiresMilliseconds: try row.decode(forColumn: "expires_ms"),
            endedMilliseconds: try row.decode(forColumn: "ended_ms"),
            endedBy: try row.decode(forColumn: "ended_by")
        )
    }

    func appendAccessLog(_ entry: AccessLogEntry) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO access_log (subject, reader_id, reader_name, reader_role, reason, what, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [entry.subject, entry.readerID, entry.readerName, entry.readerRole, entry.reason, entry.what, entry.atMilliseconds]
            )
        }
    }

    func accessLog(subjects: [String], beforeID: Int64?, limit: Int) async throws -> [AccessLogEntry] {
        guard !subjects.isEmpty else { return [] }
        return try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, subject, reader_id, reader_name, reader_role, reason, what, at_ms FROM access_log
                    WHERE subject IN (\(subjects.map { _ in "?" }.joined(separator: ","))) AND id < ?
                    ORDER BY id DESC LIMIT \(max(1, limit))
                    """,
                arguments: StatementArguments(subjects) + [beforeID ?? Int64.max]
            ).map {
                AccessLogEntry(
                    id: try $0.decode(forColumn: "id"),
                    subject: try $0.decode(forColumn: "subject"),
                    readerID: try $0.decode(forColumn: "reader_id"),
                    readerName: try $0.decode(forColumn: "reader_name"),
                    readerRole: try $0.decode(forColumn: "reader_role"),
                    reason: try $0.decode(forColumn: "reason"),
                    what: try $0.decode(forColumn: "what"),
                    atMilliseconds: try $0.decode(forColumn: "at_ms")
                )
            }
        }
    }

    private static var personDayColumns: [String] {
        ["person_key", "day", "age_band", "cell_lat", "cell_lon", "hr_count", "hr_sum"] + PeopleSchema.binColumns + PeopleSchema.alertColumns
    }

    func upsertPersonDays(_ days: [PersonDay]) async throws {
        let columns = Self.personDayColumns
        try await pool.write { db in
            let statement = try db.makeStatement(
                sql:
                    "INSERT OR REPLACE INTO person_days (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
            )
            for day in days {
                var values: [(any DatabaseValueConvertible)?] = [
                    day.personKey, day.day, day.ageBand, day.cellLatitude, day.cellLongitude, day.heartRateCount, day.heartRateSum,
                ]
                values += day.bins.map { $0 as (any DatabaseValueConvertible)? }
                values += day.alerts.map { $0 as (any DatabaseValueConvertible)? }
                try statement.execute(arguments: StatementArguments(values))
            }
        }
    }

    func rollupThroughDay() async throws -> Int? {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT through_day FROM people_rollup WHERE id = 1") }
    }

    func setRollupThroughDay(_ day: Int) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO people_rollup (id, through_day) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET through_day = excluded.through_day",
                arguments: [day]
            )
        }
    }

    func devicesForRollup() async throws -> [(deviceID: String, person: String, wearer: String?)] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT d.device_id, d.person, w.account_id FROM devices d LEFT JOIN wearer_devices w ON w.device_id = d.device_id ORDER BY d.device_id"
            ).map { row -> (deviceID: String, person: String, wearer: String?) in
                let deviceID: String = try row.decode(forColumn: "device_id")
                let person: String = try row.decode(forColumn: "person")
                let wearer: String? = try row.decode(forColumn: "account_id")
                return (deviceID: deviceID, person: person, wearer: wearer)
            }
        }
    }

    private static func condition(_ cell: GroupFigures.Cell) -> String {
        // Integers of our own making, never text from a request: safe to inline.
        """
        age_band BETWEEN \(cell.ageBandFrom) AND \(cell.ageBandTo) AND day BETWEEN \(cell.dayFrom) AND \(cell.dayTo) \
        AND cell_lat BETWEEN \(cell.south) AND \(cell.north) AND cell_lon BETWEEN \(cell.west) AND \(cell.east)
        """
    }

    func groupTotals(_ cell: GroupFigures.Cell) async throws -> GroupFigures.Totals {
        try await pool.read(Self.groupTotals(cell))
    }

    func groupRows(in cell: GroupFigures.Cell, atMost: Int64) async throws -> Int64 {
        try await pool.read(Self.groupRows(in: cell, atMost: atMost))
    }

    func groupPeople(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) async throws -> Int {
        try await pool.read(Self.groupPeople(in: cell, notIn: other))
    }

    func groupTotalsOnThisThread(_ cell: GroupFigures.Cell) throws -> GroupFigures.Totals {
        try pool.read(Self.groupTotals(cell))
    }

    func groupRowsOnThisThread(in cell: GroupFigures.Cell, atMost: Int64) throws -> Int64 {
        try pool.read(Self.groupRows(in: cell, atMost: atMost))
    }

    func groupPeopleOnThisThread(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) throws -> Int {
        try pool.read(Self.groupPeople(in: cell, notIn: other))
    }

    static func groupTotals(_ cell: GroupFigures.Cell) -> @Sendable (Database) throws -> GroupFigures.Totals {
        let sums = (["hr_count", "hr_sum"] + PeopleSchema.binColumns + PeopleSchema.alertColumns).map { "COALESCE(SUM(\($0)), 0)" }
        let sql = "SELECT COUNT(DISTINCT person_key), \(sums.joined(separator: ", ")) FROM person_days WHERE \(Self.condition(cell))"
        return { db in
            guard let row = try Row.fetchOne(db, sql: sql) else {
                return GroupFigures.Totals(people: 0, readings: 0, heartRateSum: 0, bins: [], alerts: [])
            }
            let bins = try (0..<PeopleSchema.binCount).map { try row.decode(atIndex: 3 + $0) as Int64 }
            let alerts = try (0..<GroupFigures.alertKinds.count).map { try row.decode(atIndex: 3 + PeopleSchema.binCount + $0) as Int64 }
            return GroupFigures.Totals(
                people: try row.decode(atIndex: 0),
                readings: try row.decode(atIndex: 1),
                heartRateSum: try row.decode(atIndex: 2),
                bins: bins,
                alerts: alerts
            )
        }
    }

    static func groupRows(in cell: GroupFigures.Cell, atMost: Int64) -> @Sendable (Database) throws -> Int64 {
        // The inner LIMIT stops the count at the ceiling: counting never reads more than the
        // budget could admit.
        let sql = "SELECT COUNT(*) FROM (SELECT 1 FROM person_days WHERE \(Self.condition(cell)) LIMIT ?)"
        return { db in try Int64.fetchOne(db, sql: sql, arguments: [max(1, atMost)]) ?? 0 }
    }

    static func groupPeople(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) -> @Sendable (Database) throws -> Int {
        let sql = "SELECT COUNT(DISTINCT person_key) FROM person_days WHERE \(Self.condition(cell)) AND NOT (\(Self.condition(other)))"
        return { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }

    func answeredGroups() async throws -> [AnsweredGroup] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT organisation_id, age_from, age_to, south, west, north, east, day_from, day_to, people, at_ms FROM group_queries ORDER BY id"
            ).map {
                AnsweredGroup(
                    organisationID: try $0.decode(forColumn: "organisation_id"),
                    cell: GroupFigures.Cell(
                        ageBandFrom: try $0.decode(forColumn: "age_from"),
                        ageBandTo: try $0.decode(forColumn: "age_to"),
                        south: try $0.decode(forColumn: "south"),
                        west: try $0.decode(forColumn: "west"),
                        north: try $0.decode(forColumn: "north"),
                        east: try $0.decode(forColumn: "east"),
                        dayFrom: try $0.decode(forColumn: "day_from"),
                        dayTo: try $0.decode(forColumn: "day_to")
                    ),
                    people: try $0.decode(forColumn: "people"),
                    atMilliseconds: try $0.decode(forColumn: "at_ms")
                )
            }
        }
    }

    func recordAnsweredGroup(_ group: AnsweredGroup) async throws {
        let c = group.cell
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO group_queries (organisation_id, age_from, age_to, south, west, north, east, day_from, day_to, people, at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    group.organisationID, c.ageBandFrom, c.ageBandTo, c.south, c.west, c.north, c.east, c.dayFrom, c.dayTo, group.people,
                    group.atMilliseconds,
                ]
            )
        }
    }

    func plainGroupAggregate(_ cell: GroupFigures.Cell) async throws -> (people: Int, readings: Int64, sum: Int64) {
        try await pool.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT COUNT(DISTINCT person_key), COALESCE(SUM(hr_count), 0), COALESCE(SUM(hr_sum), 0) FROM person_days WHERE \(Self.condition(cell))"
                )
            else { return (0, 0, 0) }
            return (try row.decode(atIndex: 0), try row.decode(atIndex: 1), try row.decode(atIndex: 2))
        }
    }

    func seedPersonDays(people: Int, days: Int, firstDay: Int) async throws {
        let sql = """
            WITH RECURSIVE p(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM p WHERE i + 1 < \(people)),
            d(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM d WHERE j + 1 < \(days)),
            s AS (SELECT i, j, 1000 + (i * 7 + j * 13) % 500 AS cnt, 55 + (i * 31 + j * 17) % 50 AS mean FROM p, d)
            INSERT INTO person_days (\(Self.personDayColumns.joined(separator: ", ")))
            SELECT 'sim-' || i, \(firstDay) + j, (i / 400) % 10, 450 + i % 20, 90 + (i / 20) % 20, cnt, cnt * mean,
            \(PeopleSchema.binColumns.indices.map { "CASE WHEN MIN(\(PeopleSchema.binCount - 1), MAX(0, (mean - 40) / 10)) = \($0) THEN cnt ELSE 0 END" }.joined(separator: ", ")),
            \(PeopleSchema.alertColumns.indices.map { "CASE WHEN (i + j * 7 + \($0)) % 97 = 0 THEN 1 ELSE 0 END" }.joined(separator: ", "))
            FROM s
            """
        try await pool.write { db in try db.execute(sql: sql) }
    }

    func deviceDays(day: Int) async throws -> [(deviceID: String, day: DeviceDay)] {
        let sql = "SELECT device_id, \(DeviceDay.columns.joined(separator: ", ")) FROM device_days WHERE day = ?"
        return try await pool.read { db in
            try Row.fetchAll(db, sql: sql, arguments: [day]).compactMap { row -> (deviceID: String, day: DeviceDay)? in
                let values = try DeviceDay.columns.indices.map { try row.decode(Int64.self, atIndex: $0 + 1) }
                guard let counters = DeviceDay(day: day, values: values) else { return nil }
                return (try row.decode(String.self, atIndex: 0), counters)
            }
        }
    }

    func seedDeviceDays(devices: Int, days: Int, firstDay: Int) async throws {
        let sql = """
            WITH RECURSIVE p(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM p WHERE i + 1 < \(devices)),
            d(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM d WHERE j + 1 < \(days)),
            s AS (SELECT i, j, 40000 + (i * 7 + j * 13) % 40000 AS cnt, 55 + (i * 31 + j * 17) % 50 AS mean FROM p, d)
            INSERT INTO device_days (device_id, day, \(DeviceDay.columns.joined(separator: ", ")))
            SELECT 'sim-' || i, \(firstDay) + j, cnt, cnt * mean,
            \(PeopleSchema.binColumns.indices.map { "CASE WHEN MIN(\(PeopleSchema.binCount - 1), MAX(0, (mean - 40) / 10)) = \($0) THEN cnt ELSE 0 END" }.joined(separator: ", ")),
            cnt / 5, (cnt / 5) * (450 + i % 20), (cnt / 5) * (90 + (i / 20) % 20)
            FROM s
            """
        try await pool.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE p(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM p WHERE i + 1 < \(devices))
                    INSERT INTO devices (device_id, person, enrolled_ms) SELECT 'sim-' || i, '{"name":"Sim","age":' || (20 + i % 70) || '}', 0 FROM p
                    """
            )
            try db.execute(sql: sql)
        }
    }
}
