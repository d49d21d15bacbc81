#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    func linkDevice(accountID: String, deviceID: String, atMilliseconds: Int64) async throws -> LinkOutcome {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO wearer_devices (account_id, device_id, linked_ms) VALUES (\(accountID), \(deviceID), \(atMilliseconds))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).collect().count
            if inserted == 1 { return .linked }
            let owners = try await collect(
                connection.query("SELECT account_id FROM wearer_devices WHERE device_id = \(deviceID)", logger: logger).decode(String.self)
            )
            return owners.first == accountID ? .alreadyLinked : .linkedToAnother
        }
    }

    func linkedDevices(accountID: String) async throws -> [String] {
        try await collect(
            client.query("SELECT device_id FROM wearer_devices WHERE account_id = \(accountID) ORDER BY device_id", logger: logger).decode(
                String.self
            )
        )
    }

    func wearerAccount(deviceID: String) async throws -> String? {
        try await collect(client.query("SELECT account_id FROM wearer_devices WHERE device_id = \(deviceID)", logger: logger).decode(String.self))
            .first
    }

    func alertIDs(deviceIDs: [String]) async throws -> [String] {
        guard !deviceIDs.isEmpty else { return [] }
        return try await collect(
            client.query("SELECT alert_id FROM alerts WHERE device_id = ANY(\(deviceIDs)) ORDER BY created_ms DESC", logger: logger).decode(
                String.self
            )
        )
    }

    func latestReadingSequence(deviceID: String) async throws -> Int64 {
        (try await collect(client.query("SELECT MAX(seq) FROM readings WHERE device_id = \(deviceID)", logger: logger).decode(Int64?.self)).first
            ?? nil) ?? 0
    }

    private typealias RequestColumns = (
        String, String, String, String, Int, Int64?, String, String, Int64, Int64?, Int64?, Int64?, Int64?, String?
    )
    private static let requestColumns =
        "id, organisation_id, person_id, kinds, days, data_from_ms, purpose, status, requested_ms, answered_ms, granted_from_ms, expires_ms, ended_ms, ended_by"

    func insertAccessRequest(_ r: AccessRequest) async throws {
        let kinds = r.kinds.map(\.rawValue).sorted().joined(separator: ",")
        try await client.query(
            """
            INSERT INTO access_requests (id, organisation_id, person_id, kinds, days, data_from_ms, purpose, status, requested_ms, answered_ms,
                granted_from_ms, expires_ms, ended_ms, ended_by)
            VALUES (\(r.id), \(r.organisationID), \(r.personID), \(kinds), \(r.days), \(r.dataFromMilliseconds), \(r.purpose), \(r.status.rawValue),
                \(r.requestedMilliseconds), \(r.answeredMilliseconds), \(r.grantedFromMilliseconds), \(r.expiresMilliseconds), \(r.endedMilliseconds),
                \(r.endedBy))
            """,
            logger: logger
        )
    }

    func accessRequest(id: String) async throws -> AccessRequest? {
        try await requests(PostgresQuery(unsafeSQL: "SELECT \(Self.requestColumns) FROM access_requests WHERE id = $1", binds: binds([id]))).first
    }

    func accessRequests(personID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest] {
        try await requests(column: "person_id", value: personID, before: before, limit: limit)
    }

    func accessRequests(organisationID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest] {
        try await requests(column: "organisation_id", value: organisationID, before: before, limit: limit)
    }

    /// One person's or one organisation's requests, newest first (the id breaking ties); NULL
    /// parameters switch the cursor and the bound off.
    private func requests(
        column: String,
        value: String,
        before: (requestedMilliseconds: Int64, id: String)?,
        limit: Int?
    ) async throws
        -> [AccessRequest]
    {
        var bindings = PostgresBindings()
        bindings.append(value)
        bindings.append(before?.requestedMilliseconds)
        bindings.append(before?.id)
        bindings.append(limit.map { Int64(max(1, $0)) })
        return try await requests(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(Self.requestColumns) FROM access_requests WHERE \(column) = $1
                        AND ($2::BIGINT IS NULL OR requested_ms < $2 OR (requested_ms = $2 AND id < $3::TEXT))
                    ORDER BY requested_ms DESC, id DESC LIMIT $4
                    """,
                binds: bindings
            )
        )
    }

    private func binds(_ values: [String]) -> PostgresBindings {
        var bindings = PostgresBindings()
        for value in values { bindings.append(value) }
        return bindings
    }

    private func requests(_ query: PostgresQuery) async throws -> [AccessRequest] {
        try await collect(client.query(query, logger: logger).decode(RequestColumns.self)).compactMap { c in
            guard let status = AccessRequest.Status(rawValue: c.7) else { return nil }
            return AccessRequest(
                id: c.0,
                organisationID: c.1,
                personID: c.2,
                kinds: Set(c.3.split(separator: ",").compactMap { PersonDataKind(rawValue: String($0)) }),
                days: c.4,
                dataFromMilliseconds: c.5,
                purpose: c.6,
                status: status,
                requestedMilliseconds: c.8,
                answeredMilliseconds: c.9,
                grantedFromMilliseconds: c.10,
                expiresMilliseconds: c.11,
                endedMilliseconds: c.12,
                endedBy: c.13
            )
        }
    }

    func updateAccessRequest(_ r: AccessRequest, expected: AccessRequest.Status) async throws -> Bool {
        try await client.query(
            """
            UPDATE access_requests SET status = \(r.status.rawValue), answered_ms = \(r.answeredMilliseconds), granted_from_ms = \(r.grantedFromMilliseconds),
                expires_ms = \(r.expiresMilliseconds), ended_ms = \(r.endedMilliseconds), ended_by = \(r.endedBy)
            WHERE id = \(r.id) AND status = \(expected.rawValue) RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func appendAccessLog(_ e: AccessLogEntry) async throws {
        try await client.query(
            """
            INSERT INTO access_log (subject, reader_id, reader_name, reader_role, reason, what, at_ms)
            VALUES (\(e.subject), \(e.readerID), \(e.readerName), \(e.readerRole), \(e.reason), \(e.what), \(e.atMilliseconds))
            """,
            logger: logger
        )
    }

    func accessLog(subjects: [String], beforeID: Int64?, limit: Int) async throws -> [AccessLogEntry] {
        guard !subjects.isEmpty else { return [] }
        let limit = max(1, limit)
        let before = beforeID ?? Int64.max
        let rows = try await client.query(
            """
            SELECT id, subject, reader_id, reader_name, reader_role, reason, what, at_ms FROM access_log
            WHERE subject = ANY(\(subjects)) AND id < \(before) ORDER BY id DESC LIMIT \(limit)
            """,
            logger: logger
        )
        return try await collect(rows.decode((Int64, String, String, String, String, String, String, Int64).self)).map {
            AccessLogEntry(
                id: $0.0,
                subject: $0.1,
                readerID: $0.2,
                readerName: $0.3,
                readerRole: $0.4,
                reason: $0.5,
                what: $0.6,
                atMilliseconds: $0.7
            )
        }
    }

    private static var personDayColumns: [String] {
        ["person_key", "day", "age_band", "cell_lat", "cell_lon", "hr_count", "hr_sum"] + PeopleSchema.binColumns + PeopleSchema.alertColumns
    }

    func upsertPersonDays(_ days: [PersonDay]) async throws {
        guard !days.isEmpty else { return }
        let columns = Self.personDayColumns
        let updates = columns.dropFirst(2).map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        for chunk in stride(from: 0, to: days.count, by: 500).map({ Array(days[$0..<min(days.count, $0 + 500)]) }) {
            var bindings = PostgresBindings()
            var tuples: [String] = []
            var index = 0
            for day in chunk {
                var placeholders: [String] = []
                func add(_ value: some PostgresThrowingDynamicTypeEncodable) throws {
                    index += 1
                    try bindings.append(value)
                    placeholders.append("$\(index)")
                }
                func addOptional(_ value: Int?) {
                    index += 1
                    bindings.append(value)
                    placeholders.append("$\(index)")
                }
                try add(day.personKey)
                try add(day.day)
                try add(day.ageBand)
                addOptional(day.cellLatitude)
                addOptional(day.cellLongitude)
                try add(day.heartRateCount)
                try add(day.heartRateSum)
                for value in day.bins { try add(value) }
                for value in day.alerts { try add(value) }
                tuples.append("(" + placeholders.joined(separator: ", ") + ")")
            }
            try await client.query(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO person_days (\(columns.joined(separator: ", "))) VALUES \(tuples.joined(separator: ", "))
                        ON CONFLICT (person_key, day) DO UPDATE SET \(updates)
                        """,
                    binds: bindings
                ),
                logger: logger
            )
        }
    }

    func rollupThroughDay() async throws -> Int? {
        try await collect(client.query("SELECT through_day FROM people_rollup WHERE id = 1", logger: logger).decode(Int.self)).first
    }

    func setRollupThroughDay(_ day: Int) async throws {
        try await client.query(
            "INSERT INTO people_rollup (id, through_day) VALUES (1, \(day)) ON CONFLICT (id) DO UPDATE SET through_day = EXCLUDED.through_day",
            logger: logger
        )
    }

    func devicesForRollup() async throws -> [(deviceID: String, person: String, wearer: String?)] {
        let rows = try await client.query(
            "SELECT d.device_id, d.person, w.account_id FROM devices d LEFT JOIN wearer_devices w ON w.device_id = d.device_id ORDER BY d.device_id",
            logger: logger
        )
        return try await collect(rows.decode((String, String, String?).self)).map { (deviceID: $0.0, person: $0.1, wearer: $0.2) }
    }

    private static func condition(_ cell: GroupFigures.Cell) -> String {
        // Integers of our own making, never text from a request: safe to inline.
        """
        age_band BETWEEN \(cell.ageBandFrom) AND \(cell.ageBandTo) AND day BETWEEN \(cell.dayFrom) AND \(cell.dayTo) \
        AND cell_lat BETWEEN \(cell.south) AND \(cell.north) AND cell_lon BETWEEN \(cell.west) AND \(cell.east)
        """
    }

    func groupTotals(_ cell: GroupFigures.Cell) async throws -> GroupFigures.Totals {
        let sums = (["hr_count", "hr_sum"] + PeopleSchema.binColumns + PeopleSchema.alertColumns).map { "COALESCE(SUM(\($0)), 0)::BIGINT" }
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: "SELECT COUNT(DISTINCT person_key), \(sums.joined(separator: ", ")) FROM person_days WHERE \(Self.condition(cell))"
            ),
            logger: logger
        )
        for try await row in rows {
            var values: [Int64] = []
            for cell in row { values.append(try cell.decode(Int64.self)) }
            guard values.count == 3 + PeopleSchema.binCount + GroupFigures.alertKinds.count else { break }
            return GroupFigures.Totals(
                people: Int(values[0]),
                readings: values[1],
                heartRateSum: values[2],
                bins: Array(values[3..<(3 + PeopleSchema.binCount)]),
                alerts: Array(values[(3 + PeopleSchema.binCount)...])
            )
        }
        return GroupFigures.Totals(people: 0, readings: 0, heartRateSum: 0, bins: [], alerts: [])
    }

    func groupRows(in cell: GroupFigures.Cell, atMost: Int64) async throws -> Int64 {
        // The inner LIMIT stops the count at the ceiling: counting never reads more than the
        // budget could admit.
        var bindings = PostgresBindings()
        bindings.append(max(1, atMost))
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: "SELECT COUNT(*)::BIGINT FROM (SELECT 1 FROM person_days WHERE \(Self.condition(cell)) LIMIT $1) AS rows_in_cell",
                binds: bindings
            ),
            logger: logger
        )
        return try await collect(rows.decode(Int64.self)).first ?? 0
    }

    func groupPeople(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) async throws -> Int {
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: "SELECT COUNT(DISTINCT person_key) FROM person_days WHERE \(Self.condition(cell)) AND NOT (\(Self.condition(other)))"
            ),
            logger: logger
        )
        return Int(try await collect(rows.decode(Int64.self)).first ?? 0)
    }

    func answeredGroups() async throws -> [AnsweredGroup] {
        let rows = try await client.query(
            "SELECT organisation_id, age_from, age_to, south, west, north, east, day_from, day_to, people, at_ms FROM group_queries ORDER BY id",
            logger: logger
        )
        return try await collect(rows.decode((String, Int, Int, Int, Int, Int, Int, Int, Int, Int64, Int64).self)).map {
            AnsweredGroup(
                organisationID: $0.0,
                cell: GroupFigures.Cell(
                    ageBandFrom: $0.1,
                    ageBandTo: $0.2,
                    south: $0.3,
                    west: $0.4,
                    north: $0.5,
                    east: $0.6,
                    dayFrom: $0.7,
                    dayTo: $0.8
                ),
                people: Int($0.9),
                atMilliseconds: $0.10
            )
        }
    }

    func recordAnsweredGroup(_ group: AnsweredGroup) async throws {
        let c = group.cell
        try await client.query(
            """
            INSERT INTO group_queries (organisation_id, age_from, age_to, south, west, north, east, day_from, day_to, people, at_ms)
            VALUES (\(group.organisationID), \(c.ageBandFrom), \(c.ageBandTo), \(c.south), \(c.west), \(c.north), \(c.east), \(c.dayFrom), \(c.dayTo),
                \(Int64(group.people)), \(group.atMilliseconds))
            """,
            logger: logger
        )
    }

    func plainGroupAggregate(_ cell: GroupFigures.Cell) async throws -> (people: Int, readings: Int64, sum: Int64) {
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL:
                    "SELECT COUNT(DISTINCT person_key), COALESCE(SUM(hr_count), 0)::BIGINT, COALESCE(SUM(hr_sum), 0)::BIGINT FROM person_days WHERE \(Self.condition(cell))"
            ),
            logger: logger
        )
        guard let row = try await collect(rows.decode((Int64, Int64, Int64).self)).first else { return (0, 0, 0) }
        return (Int(row.0), row.1, row.2)
    }

    func seedPersonDays(people: Int, days: Int, firstDay: Int) async throws {
        let sql = """
            INSERT INTO person_days (\(Self.personDayColumns.joined(separator: ", ")))
            SELECT 'sim-' || i, \(firstDay) + j, (i / 400) % 10, 450 + i % 20, 90 + (i / 20) % 20, cnt, cnt * mean,
            \(PeopleSchema.binColumns.indices.map { "CASE WHEN LEAST(\(PeopleSchema.binCount - 1), GREATEST(0, (mean - 40) / 10)) = \($0) THEN cnt ELSE 0 END" }.joined(separator: ", ")),
            \(PeopleSchema.alertColumns.indices.map { "CASE WHEN (i + j * 7 + \($0)) % 97 = 0 THEN 1 ELSE 0 END" }.joined(separator: ", "))
            FROM (SELECT i, j, 1000 + (i * 7 + j * 13) % 500 AS cnt, 55 + (i * 31 + j * 17) % 50 AS mean
                  FROM generate_series(0, \(people - 1)) i, generate_series(0, \(days - 1)) j) s
            """
        try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        try await client.query("ANALYZE person_days", logger: logger)
    }

    func deviceDays(day: Int) async throws -> [(deviceID: String, day: DeviceDay)] {
        var bindings = PostgresBindings()
        bindings.append(Int64(day))
        let rows = try await client.query(
            PostgresQuery(
                unsafeSQL: "SELECT device_id, ARRAY[\(DeviceDay.columns.joined(separator: ", "))]::BIGINT[] FROM device_days WHERE day = $1",
                binds: bindings
            ),
            logger: logger
        )
        return try await collect(rows.decode((String, [Int64]).self)).compactMap { deviceID, values in
            DeviceDay(day: day, values: values).map { (deviceID, $0) }
        }
    }

    func seedDeviceDays(devices: Int, days: Int, firstDay: Int) async throws {
        try await client.query(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO devices (device_id, person, enrolled_ms)
                    SELECT 'sim-' || i, '{"name":"Sim","age":' || (20 + i % 70) || '}', 0 FROM generate_series(0, \(devices - 1)) i
                    """
            ),
            logger: logger
        )
        let sql = """
            INSERT INTO device_days (device_id, day, \(DeviceDay.columns.joined(separator: ", ")))
            SELECT 'sim-' || i, \(firstDay) + j, cnt, cnt * mean,
            \(PeopleSchema.binColumns.indices.map { "CASE WHEN LEAST(\(PeopleSchema.binCount - 1), GREATEST(0, (mean - 40) / 10)) = \($0) THEN cnt ELSE 0 END" }.joined(separator: ", ")),
            cnt / 5, (cnt / 5) * (450 + i % 20), (cnt / 5) * (90 + (i / 20) % 20)
            FROM (SELECT i, j, 40000 + (i * 7 + j * 13) % 40000 AS cnt, 55 + (i * 31 + j * 17) % 50 AS mean
                  FROM generate_series(0, \(devices - 1)) i, generate_series(0, \(days - 1)) j) s
            """
        try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }
}
#endif
