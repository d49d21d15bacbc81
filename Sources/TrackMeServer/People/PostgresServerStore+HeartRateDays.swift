#if PostgreSQL
import PostgresNIO
import TrackMeCore

extension PostgresServerStore {
    func heartRateDays(deviceID: String, days: ClosedRange<Int64>) async throws -> [HeartRateDayRow] {
        let rows = try await client.query(
            """
            SELECT day, computed_ms, limit_min, limit_max, summary, late_ms FROM heart_rate_days
            WHERE device_id = \(deviceID) AND day BETWEEN \(days.lowerBound) AND \(days.upperBound) ORDER BY day
            """,
            logger: logger
        )
        var opened: [HeartRateDayRow] = []
        for try await (day, computed, limitMinimum, limitMaximum, summary, late) in rows.decode(
            (Int64, Int64?, Int32?, Int32?, String?, Int64).self
        ) {
            var row = HeartRateDayRow(
                day: day,
                computedMilliseconds: computed,
                limitMinimum: limitMinimum.map(Int.init),
                limitMaximum: limitMaximum.map(Int.init),
                summary: summary,
                lateMilliseconds: late
            )
            if let summary { row.summary = try? await personKeys.openHeartRateDay(summary, owner: deviceID, day: day) }
            opened.append(row)
        }
        return opened
    }

    func saveHeartRateDays(deviceID: String, _ summaries: [Int64: String], limits: HeartRateLimits, computedMilliseconds: Int64) async throws {
        guard !summaries.isEmpty else { return }
        var days: [Int64] = []
        var sealed: [String] = []
        for (day, summary) in summaries.sorted(by: { $0.key < $1.key }) {
            days.append(day)
            sealed.append(try await personKeys.sealHeartRateDay(summary, owner: deviceID, day: day))
        }
        let limitMinimum = Int32(clamping: limits.minimum)
        let limitMaximum = Int32(clamping: limits.maximum)
        try await client.query(
            """
            INSERT INTO heart_rate_days (device_id, day, computed_ms, limit_min, limit_max, summary, late_ms)
            SELECT \(deviceID), d.day, \(computedMilliseconds), \(limitMinimum), \(limitMaximum), d.summary, 0
            FROM unnest(\(days)::BIGINT[], \(sealed)::TEXT[]) AS d(day, summary)
            ON CONFLICT (device_id, day) DO UPDATE SET computed_ms = EXCLUDED.computed_ms, limit_min = EXCLUDED.limit_min,
                limit_max = EXCLUDED.limit_max, summary = EXCLUDED.summary
            """,
            logger: logger
        )
    }

    func markHeartRateDaysLate(deviceID: String, days: Set<Int64>, receivedMilliseconds: Int64) async throws {
        guard !days.isEmpty else { return }
        let sorted = days.sorted()
        try await client.query(
            """
            INSERT INTO heart_rate_days (device_id, day, late_ms)
            SELECT \(deviceID), d, \(receivedMilliseconds) FROM unnest(\(sorted)::BIGINT[]) AS d
            ON CONFLICT (device_id, day) DO UPDATE SET late_ms = GREATEST(heart_rate_days.late_ms, EXCLUDED.late_ms)
            """,
            logger: logger
        )
    }
}
#endif
