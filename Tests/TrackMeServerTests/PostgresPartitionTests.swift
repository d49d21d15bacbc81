import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO

/// Readings partitioned by day on PostgreSQL (issue 22): where rows land, retention dropping
/// whole partitions, exactly-once across partitions, and the migration of an existing table.
@Suite("PostgreSQL readings partitions", .serialized)
struct PostgresPartitionTests {
    static let day = PostgresServerStore.dayMilliseconds
    static var todayStart: Int64 {
        let now = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        return now - now % day
    }

    static func batch(_ deviceID: String, seq: Int64, readings: [(Int64, Int64)], received: Int64) -> IncomingBatch {
        let rows = readings.map { sequence, placed in
            ReadingRow(
                sequence: sequence,
                kind: .heartRate,
                placedMilliseconds: placed,
                wallMilliseconds: nil,
                timeFlag: .untrustedClock,
                body: #"{"seq":\#(sequence)}"#
            )
        }
        return IncomingBatch(
            deviceID: deviceID,
            batchSequence: seq,
            droppedByBudget: 0,
            heartbeatJSON: nil,
            readings: rows,
            receivedMilliseconds: received,
            digest: BatchDigest.digest(readings: rows, droppedByBudget: 0)
        )
    }

    /// `seq -> partition` for the device's readings.
    static func placement(_ store: PostgresServerStore, _ deviceID: String) async throws -> [Int64: String] {
        let rows = try await store.client.query(
            "SELECT seq, tableoid::regclass::TEXT FROM readings WHERE device_id = \(deviceID)",
            logger: store.logger
        )
        var result: [Int64: String] = [:]
        for try await (seq, partition) in rows.decode((Int64, String).self) {
            #expect(result[seq] == nil, "seq \(seq) stored twice")
            result[seq] = partition
        }
        return result
    }

    @Test("readings land in their day's partition, a week of partitions is ready, retention drops a whole day")
    func landAndDrop() async throws {
        try await TestServer.with(.postgres) { s in
            let store = try #require(s.server.store as? PostgresServerStore)
            let ingest = s.server.ingestStore
            let today = Self.todayStart
            let names = Set(try await store.readingPartitions().map(\.name))
            for offset in 0...PostgresServerStore.partitionDaysAhead {
                #expect(names.contains("readings_d\(PostgresServerStore.dayName(today + offset * Self.day))"), "\(names.sorted())")
            }
            #expect(names.contains("readings_default"))
            _ = try await s.enrol("pi-part")
            let todayName = "readings_d\(PostgresServerStore.dayName(today))"
            let tomorrowName = "readings_d\(PostgresServerStore.dayName(today + Self.day))"
            let result = try await ingest.ingest(
                Self.batch(
                    "pi-part",
                    seq: 1,
                    readings: (1...10).map { ($0, $0 <= 5 ? today + 3_600_000 : today + Self.day + 3_600_000) },
                    received: today + 3_600_000
                )
            )
            #expect(result.stored == 10)
            let placed = try await Self.placement(store, "pi-part")
            #expect(Set((1...5).compactMap { placed[$0] }) == [todayName])
            #expect(Set((6...10).compactMap { placed[$0] }) == [tomorrowName])

            let deleted = try await store.deleteReadings(placedBefore: today + Self.day)
            #expect(deleted == 5)
            let after = Set(try await store.readingPartitions().map(\.name))
            #expect(!after.contains(todayName), "today's partition should have been dropped whole")
            #expect(after.contains(tomorrowName))
            #expect(Set(try await Self.placement(store, "pi-part").keys) == Set(6...10))
        }
    }

    @Test("a reading sent again and filed on another day (untrusted clock: filed at receipt) is a duplicate, stored once")
    func exactlyOnceAcrossPartitions() async throws {
        try await TestServer.with(.postgres) { s in
            let store = try #require(s.server.store as? PostgresServerStore)
            let ingest = s.server.ingestStore
            let today = Self.todayStart
            _ = try await s.enrol("pi-dup")
            let first = try await ingest.ingest(
                Self.batch("pi-dup", seq: 1, readings: [(1, today + 1000), (2, today + 2000)], received: today + 2000)
            )
            #expect(first.stored == 2)
            // After a crash the device re-batches seq 2 with a new one, under a new batch number;
            // the server files it at the new receipt time, the next day.
            let tomorrow = today + Self.day + 5000
            let again = try await ingest.ingest(Self.batch("pi-dup", seq: 2, readings: [(2, tomorrow), (3, tomorrow)], received: tomorrow))
            #expect(again.stored == 1)
            #expect(again.duplicates == 1)
            let placed = try await Self.placement(store, "pi-dup")
            #expect(placed.count == 3)
            #expect(placed[2] == "readings_d\(PostgresServerStore.dayName(today))")
            // Side by side: the same reading from two batches at once is stored once.
            let racing = try await withThrowingTaskGroup(of: IngestResult.self) { group in
                for seq in Int64(3)...6 {
                    group.addTask {
                        try await ingest.ingest(Self.batch("pi-dup", seq: seq, readings: [(10, today + seq * Self.day)], received: today))
                    }
                }
                return try await group.reduce(into: [IngestResult]()) { $0.append($1) }
            }
            #expect(racing.map(\.stored).reduce(0, +) == 1)
            #expect(try await Self.placement(store, "pi-dup").count == 4)
        }
    }

    @Test("the migration moves an existing unpartitioned readings table under the partitioned one, rows kept where they are")
    func migratesExistingTable() async throws {
        let url = try await PostgresFixture.shared.createDatabase()
        var logger = Logger(label: "test.partitions")
        logger.logLevel = .warning
        let store = try await PostgresServerStore(url: url, logger: logger)
        let ingest = PostgresIngestStore(store)
        // The schema as it was before partitioning (migrations v1-v3), with readings in it.
        try await store.client.query("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY)", logger: logger)
        for (name, statements) in PostgresServerStore.migrations.prefix(while: { $0.0 != "v4-readings-partitioned" }) {
            for statement in statements { try await store.client.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
            try await store.client.query("INSERT INTO schema_migrations (name) VALUES (\(name))", logger: logger)
        }
        let today = Self.todayStart
        try await store.client.query(
            "INSERT INTO devices (device_id, person, enrolled_ms) VALUES ('pi-old', '{\"name\":\"O\",\"age\":70}', \(today - 9 * Self.day))",
            logger: logger
        )
        for seq in Int64(1)...3 {
            try await store.client.query(
                """
                INSERT INTO readings (device_id, seq, kind, placed_ms, received_ms, body)
                VALUES ('pi-old', \(seq), 'hr', \(today - (4 - seq) * Self.day), \(today - (4 - seq) * Self.day), '{}')
                """,
                logger: logger
            )
        }
        try await store.migrate()
        let placed = try await Self.placement(store, "pi-old")
        #expect(placed == [1: "readings_before_partitioning", 2: "readings_before_partitioning", 3: "readings_before_partitioning"])
        var key = ""
        for try await definition in try await store.client.query(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'readings'::regclass AND contype = 'p'",
            logger: logger
        ).decode(String.self) {
            key = definition
        }
        #expect(key == "PRIMARY KEY (device_id, seq, placed_ms)")
        // New readings from tomorrow on go to day partitions; an old seq sent again is a duplicate.
        let tomorrow = today + Self.day + 1000
        let result = try await ingest.ingest(Self.batch("pi-old", seq: 1, readings: [(3, tomorrow), (4, tomorrow)], received: tomorrow))
        #expect(result.stored == 1)
        #expect(result.duplicates == 1)
        #expect(try await Self.placement(store, "pi-old")[4] == "readings_d\(PostgresServerStore.dayName(today + Self.day))")
        // Retention past the old table's bound drops it whole.
        let deleted = try await store.deleteReadings(placedBefore: today + Self.day)
        #expect(deleted == 3)
        #expect(!(try await store.readingPartitions().map(\.name)).contains("readings_before_partitioning"))
        #expect(Set(try await Self.placement(store, "pi-old").keys) == [4])
        try await store.close()
    }

    @Test(
        "day names are UTC dates",
        arguments: [(0, "19700101"), (951_782_400_000, "20000229"), (1_795_000_000_000, "20261118"), (-1, "19691231")] as [(Int64, String)]
    )
    func dayNames(milliseconds: Int64, name: String) {
        #expect(PostgresServerStore.dayName(milliseconds) == name)
    }
}
#endif
