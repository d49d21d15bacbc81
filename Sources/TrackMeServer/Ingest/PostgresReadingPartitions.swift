#if PostgreSQL
import Foundation
import Logging
import PostgresNIO
import TrackMeCore

/// One partition of `readings` as the catalogue describes it.
struct ReadingPartition: Hashable, Sendable {
    var name: String
    /// Inclusive lower bound of `placed_ms`; nil for MINVALUE.
    var from: Int64?
    /// Exclusive upper bound; nil for the default partition.
    var to: Int64?
    var isDefault: Bool { to == nil }

    /// Reads `FOR VALUES FROM ('1') TO ('2')`, `FROM (MINVALUE) TO ('2')` or `DEFAULT`.
    init?(name: String, bound: String) {
        self.name = name
        if bound.uppercased() == "DEFAULT" {
            from = nil
            to = nil
            return
        }
        func number(after marker: String) -> Int64?? {
            guard let range = bound.range(of: marker) else { return nil }
            let rest = bound[range.upperBound...].prefix { $0 != ")" }
            if rest.uppercased().contains("MINVALUE") { return .some(nil) }
            let digits = rest.filter { $0.isNumber || $0 == "-" }
            guard let value = Int64(digits) else { return nil }
            return .some(value)
        }
        guard let lower = number(after: "FROM ("), let upper = number(after: "TO ("), let upper else { return nil }
        from = lower
        to = upper
    }
}

/// Day partitions of `readings` (see `PostgresIngestSchema`): created a week ahead, dropped
/// whole by retention.
extension PostgresServerStore {
    static let dayMilliseconds = CivilDate.dayMilliseconds
    /// Days of partitions kept ready ahead of today.
    static let partitionDaysAhead: Int64 = 7

    func readingPartitions() async throws -> [ReadingPartition] {
        let rows = try await client.query(
            """
            SELECT c.relname::TEXT, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'readings'::regclass ORDER BY c.relname
            """,
            logger: logger
        )
        var partitions: [ReadingPartition] = []
        for try await (name, bound) in rows.decode((String, String).self) {
            guard let partition = ReadingPartition(name: name, bound: bound) else {
                throw StoreError(code: .inconsistent, message: "cannot read the bound of readings partition \(name): \(bound)")
            }
            partitions.append(partition)
        }
        return partitions
    }

    /// Creates day partitions from the end of the last one up to `partitionDaysAhead` days after
    /// the database's today (a gap of more than a day, after a long stop, becomes one partition).
    /// Runs at start (`migrate`) and with each retention pass; under the migration lock, so
    /// instances starting together create each partition once. Returns the names created.
    @discardableResult
    func ensureReadingPartitions() async throws -> [String] {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            // Creating a partition locks the parent; ingest must not wait long behind it.
            try await connection.query("SET LOCAL lock_timeout = '5s'", logger: logger)
            var now: Int64 = 0
            for try await value in try await connection.query(
                "SELECT (extract(epoch FROM now()) * 1000)::BIGINT",
                logger: logger
            ).decode(Int64.self) {
                now = value
            }
            let partitions = try await self.readingPartitions()
            let today = CivilDate.days(containing: now) * Self.dayMilliseconds
            let last = today + Self.partitionDaysAhead * Self.dayMilliseconds
            var start = partitions.compactMap(\.to).max() ?? today
            var created: [String] = []
            if start < today {
                let name = "readings_until_\(Self.dayName(today))"
                try await connection.query(
                    PostgresQuery(unsafeSQL: "CREATE TABLE \(name) PARTITION OF readings FOR VALUES FROM (\(start)) TO (\(today))"),
                    logger: logger
                )
                created.append(name)
                start = today
            }
            while start <= last {
                let name = "readings_d\(Self.dayName(start))"
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: "CREATE TABLE \(name) PARTITION OF readings FOR VALUES FROM (\(start)) TO (\(start + Self.dayMilliseconds))"
                    ),
                    logger: logger
                )
                created.append(name)
                start += Self.dayMilliseconds
            }
            return created
        }
    }

    /// Readings retention: drops every partition wholly before the cutoff (its rows counted
    /// first: exactly when PostgreSQL estimates under a million, else that estimate), then
    /// deletes the rows before the cutoff from the partitions that straddle it (the day the
    /// cutoff falls in, the default partition, a partition from before partitioning).
    func deleteReadings(placedBefore cutoff: Int64) async throws -> Int {
        try await ensureReadingPartitions()
        let logger = self.logger
        let expired = try await readingPartitions().filter { partition in
            guard let to = partition.to else { return false }
            return to <= cutoff
        }
        var deleted = 0
        for partition in expired {
            deleted += try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SET LOCAL lock_timeout = '5s'", logger: logger)
                var estimate: Double = 0
                for try await value in try await connection.query(
                    "SELECT reltuples::FLOAT8 FROM pg_class WHERE relname = \(partition.name)",
                    logger: logger
                ).decode(Double.self) {
                    estimate = value
                }
                var count = Int(max(0, estimate))
                if estimate < 1_000_000 {
                    for try await value in try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(partition.name)"),
                        logger: logger
                    ).decode(Int64.self) {
                        count = Int(value)
                    }
                }
                try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE \(partition.name)"), logger: logger)
                return count
            }
            logger.info("retention dropped a readings partition", metadata: ["server.partition": "\(partition.name)"])
        }
        deleted += try await client.query("DELETE FROM readings WHERE placed_ms < \(cutoff) RETURNING 1", logger: logger).collect().count
        // The day summaries go with their readings, the cut-off's own day too (part of it went).
        let cutoffDay = HeartRateDays.day(cutoff)
        try await client.query("DELETE FROM heart_rate_days WHERE day <= \(cutoffDay)", logger: logger)
        return deleted
    }

    /// `YYYYMMDD` of the UTC day holding `milliseconds`.
    static func dayName(_ milliseconds: Int64) -> String {
        CivilDate(containing: milliseconds).compact
    }
}

#endif
