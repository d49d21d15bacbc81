import GRDB
import TrackMeCore

extension SQLiteServerStore {
    func heartRateDays(deviceID: String, days: ClosedRange<Int64>) async throws -> [HeartRateDayRow] {
        let rows = try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT day, computed_ms, limit_min, limit_max, summary, late_ms FROM heart_rate_days
                    WHERE device_id = ? AND day BETWEEN ? AND ? ORDER BY day
                    """,
                arguments: [deviceID, days.lowerBound, days.upperBound]
            ).map { row in
                HeartRateDayRow(
                    day: try row.decode(forColumn: "day"),
                    computedMilliseconds: try row.decode(forColumn: "computed_ms"),
                    limitMinimum: try row.decode(forColumn: "limit_min"),
                    limitMaximum: try row.decode(forColumn: "limit_max"),
                    summary: try row.decode(forColumn: "summary"),
                    lateMilliseconds: try row.decode(forColumn: "late_ms")
                )
            }
        }
        var opened: [HeartRateDayRow] = []
        for var row in rows {
            if let summary = row.summary { row.summary = try? await personKeys.openHeartRateDay(summary, owner: deviceID, day: row.day) }
            opened.append(row)
        }
        return opened
    }

    func saveHeartRateDays(deviceID: String, _ summaries: [Int64: String], limits: HeartRateLimits, computedMilliseconds: Int64) async throws {
        var sealing: [(Int64, String)] = []
        for (day, summary) in summaries.sorted(by: { $0.key < $1.key }) {
            sealing.append((day, try await personKeys.sealHeartRateDay(summary, owner: deviceID, day: day)))
        }
        let sealed = sealing
        try await pool.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO heart_rate_days (device_id, day, computed_ms, limit_min, limit_max, summary, late_ms)
                    VALUES (?, ?, ?, ?, ?, ?, 0)
                    ON CONFLICT (device_id, day) DO UPDATE SET computed_ms = excluded.computed_ms, limit_min = excluded.limit_min,
                        limit_max = excluded.limit_max, summary = excluded.summary
                    """
            )
            for (day, summary) in sealed {
                try statement.execute(arguments: [deviceID, day, computedMilliseconds, limits.minimum, limits.maximum, summary])
            }
        }
    }

    func markHeartRateDaysLate(deviceID: String, days: Set<Int64>, receivedMilliseconds: Int64) async throws {
        guard !days.isEmpty else { return }
        try await pool.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO heart_rate_days (device_id, day, late_ms) VALUES (?, ?, ?)
                    ON CONFLICT (device_id, day) DO UPDATE SET late_ms = MAX(late_ms, excluded.late_ms)
                    """
            )
            for day in days.sorted() { try statement.execute(arguments: [deviceID, day, receivedMilliseconds]) }
        }
    }
}
