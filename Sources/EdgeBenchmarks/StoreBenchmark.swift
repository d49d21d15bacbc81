public import EdgeStore
import Foundation
import GRDB
import TrackMeCore

/// `trackme-sim bench store`: durable readings per second through `GroupCommitter` and
/// `ReadingStore`, next to a raw batched insert of the same rows into a table of the same shape
/// with the same pragmas (WAL, synchronous=FULL), measured in the same run.
public enum StoreBenchmark {
    public struct Result: Codable, Hashable, Sendable {
        public var readings: Int
        public var groupSize: Int
        public var storeSeconds: Double
        public var storeReadingsPerSecond: Double
        public var baselineSeconds: Double
        public var baselineReadingsPerSecond: Double
        /// store / baseline readings per second (1.0 = no overhead over raw SQLite).
        public var ratio: Double
        /// Live database bytes per reading (rows, b-tree and page overhead included).
        public var bytesPerReading: Double
        /// What a week of 1 Hz heart rate + 1 Hz GPS would take at that rate, in MiB.
        public var weekMebibytes: Double
        public var synchronous: String
        /// Opening a store found corrupt (the benchmark's own store, scribbled over): quick_check,
        /// moving it aside and creating a fresh one, in milliseconds. Must stay under a second.
        public var corruptRecoveryMilliseconds: Double
        /// Opening the same store when healthy (quick_check included), in milliseconds.
        public var healthyOpenMilliseconds: Double
        /// Whether the store sealed its rows (ChaCha20-Poly1305). The baseline never does.
        public var encrypted: Bool

        enum CodingKeys: String, CodingKey {
            case readings
            case groupSize = "group_size"
            case storeSeconds = "store_seconds"
            case storeReadingsPerSecond = "store_readings_per_second"
            case baselineSeconds = "baseline_seconds"
            case baselineReadingsPerSecond = "baseline_readings_per_second"
            case ratio
            case bytesPerReading = "bytes_per_reading"
            case weekMebibytes = "week_mib"
            case synchronous
            case corruptRecoveryMilliseconds = "corrupt_recovery_ms"
            case healthyOpenMilliseconds = "healthy_open_ms"
            case encrypted
        }
    }

    /// - encryptionKey: seal the store's rows under this key (`--encryption on`); nil: in clear.
    public static func run(
        readings: Int = 100_000,
        groupSize: Int = 500,
        directory: String? = nil,
        encryptionKey: StoreKey? = nil
    ) async throws -> Result {
        let dir = directory ?? NSTemporaryDirectory() + "trackme-bench-store-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: dir) } }
        let inputs = (0..<readings).map { SyntheticReadings.reading($0) }

        // Through the store: append, group commits of `groupSize`, a final flush.
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: dir + "/store.sqlite", diskBudgetBytes: 1 << 40, encryptionKey: encryptionKey)
        )
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600), maxGroupSize: groupSize)
        let storeStart = ContinuousClock.now
        for (timestamp, payload) in inputs { committer.append(payload, at: timestamp) }
        committer.flush()
        let storeElapsed = ContinuousClock.now - storeStart
        let used = try store.usedBytes()
        store.close()

        // Baseline: the same rows (bodies encoded beforehand), prepared INSERT, one transaction
        // per group, same pragmas.
        var config = Configuration()
        config.journalMode = .wal
        config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        let queue = try DatabaseQueue(path: dir + "/baseline.sqlite", configuration: config)
        try await queue.write { db in
            try db.execute(
                sql:
                    "CREATE TABLE readings (seq INTEGER PRIMARY KEY AUTOINCREMENT, synced INTEGER NOT NULL DEFAULT 0, boot INTEGER NOT NULL, mono_ns INTEGER NOT NULL, wall_ms INTEGER, body BLOB NOT NULL)"
            )
        }
        let rows: [[any DatabaseValueConvertible & Sendable]] = inputs.map { t, p in
            [
                Int64(1), Int64(bitPattern: t.monotonicNanoseconds), t.wallClockMilliseconds ?? 0,
                Data(ReadingBodyCodec.encode(p, wallClockTrusted: t.wallClockTrusted)),
            ]
        }
        let baselineStart = ContinuousClock.now
        for start in stride(from: 0, to: rows.count, by: groupSize) {
            let group = Array(rows[start..<min(start + groupSize, rows.count)])
            try await queue.write { db in
                let statement = try db.cachedStatement(sql: "INSERT INTO readings (boot, mono_ns, wall_ms, body) VALUES (?, ?, ?, ?)")
                for row in group { try statement.execute(arguments: StatementArguments(row)) }
            }
        }
        let baselineElapsed = ContinuousClock.now - baselineStart
        try queue.close()

        // Start-up on the full store, healthy and then corrupt.
        let storePath = dir + "/store.sqlite"
        let healthy = try ReadingStore(configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 1 << 40, encryptionKey: encryptionKey))
        let healthyOpen = healthy.openReport.openDuration
        healthy.close()
        if let handle = FileHandle(forWritingAtPath: storePath) {
            try handle.seek(toOffset: 8192)
            handle.write(Data(repeating: 0xA5, count: 65_536))
            try handle.close()
        }
        let recovered = try ReadingStore(configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 1 << 40, encryptionKey: encryptionKey))
        let recovery = recovered.openReport.openDuration
        guard recovered.openReport.movedAsidePath != nil else { throw BenchmarkFailure(description: "the scribbled store was not detected") }
        recovered.close()

        let storeSeconds = seconds(storeElapsed)
        let baselineSeconds = seconds(baselineElapsed)
        let perReading = Double(used) / Double(readings)
        return Result(
            readings: readings,
            groupSize: groupSize,
            storeSeconds: storeSeconds,
            storeReadingsPerSecond: Double(readings) / storeSeconds,
            baselineSeconds: baselineSeconds,
            baselineReadingsPerSecond: Double(readings) / baselineSeconds,
            ratio: baselineSeconds / storeSeconds,
            bytesPerReading: perReading,
            weekMebibytes: perReading * 2 * 7 * 86_400 / 1_048_576,
            synchronous: "FULL",
            corruptRecoveryMilliseconds: seconds(recovery) * 1000,
            healthyOpenMilliseconds: seconds(healthyOpen) * 1000,
            encrypted: encryptionKey != nil
        )
    }

    struct BenchmarkFailure: Error, CustomStringConvertible {
        var description: String
    }

    public static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
