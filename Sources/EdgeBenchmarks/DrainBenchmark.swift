// Data path, step 6 (benchmarks of steps 4-5): store and sync measured against a baseline.

import Foundation
import EdgeLoopbackServer
import EdgeStore
import EdgeSync
import GzipCodec
import TrackMeCore

/// `trackme-sim bench drain`: time to drain a 24-hour backlog (86,400 heart-rate readings and
/// 86,400 fixes) from the store to a local server, and bytes sent per reading after gzip; next
/// to a baseline measured in the same run: POSTing the same batches, encoded and compressed
/// beforehand, to a fresh server over the same transport (the network and server share of the
/// time, without the store, the cursor and the encoding).
public enum DrainBenchmark {
    public struct Result: Codable, Hashable, Sendable {
        public var readings: Int
        public var batchReadings: Int
        public var batches: Int
        public var drainSeconds: Double
        public var readingsPerSecond: Double
        public var compressedBytesPerReading: Double
        public var uncompressedBytesPerReading: Double
        public var compressionRatio: Double
        public var baselineSeconds: Double
        /// drain time / baseline time (1.0 = the agent adds nothing over sending bytes).
        public var ratio: Double

        enum CodingKeys: String, CodingKey {
            case readings
            case batchReadings = "batch_readings"
            case batches
            case drainSeconds = "drain_seconds"
            case readingsPerSecond = "readings_per_second"
            case compressedBytesPerReading = "compressed_bytes_per_reading"
            case uncompressedBytesPerReading = "uncompressed_bytes_per_reading"
            case compressionRatio = "compression_ratio"
            case baselineSeconds = "baseline_seconds"
            case ratio
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func run(hours: Int = 24, batchReadings: Int = 1000) async throws -> Result {
        let dir = NSTemporaryDirectory() + "trackme-bench-drain-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let count = hours * 3600 * 2
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir + "/store.sqlite", diskBudgetBytes: 1 << 40))
        defer { store.close() }
        for start in stride(from: 0, to: count, by: 5000) {
            try store.append((start..<min(start + 5000, count)).map { i in
                let (t, p) = SyntheticReadings.reading(i)
                return NewReading(timestamp: t, payload: p)
            })
        }

        let server = try LoopbackSyncServer(token: "bench")
        defer { server.shutdown() }
        let configuration = SyncConfiguration(deviceID: "pi-bench", token: "bench", maxBatchReadings: batchReadings, latestFirst: false)
        let engine = SyncEngine(
            store: store, transport: URLSessionTransport(baseURL: server.baseURL, timeout: .seconds(30)), configuration: configuration,
            clock: ContinuousClock())
        let start = ContinuousClock.now
        try await engine.drain()
        let elapsed = ContinuousClock.now - start
        guard server.readings(deviceID: "pi-bench").count == count else {
            throw Failure(description: "server holds \(server.readings(deviceID: "pi-bench").count) of \(count) readings")
        }
        let compressed = await engine.bodyBytesSent
        let uncompressed = await engine.uncompressedBytesSent
        let batches = server.batches.count

        // Baseline: the same batches, prepared beforehand, POSTed in turn to a fresh server.
        let all = try store.allReadings().map(\.reading)
        var bodies: [(key: String, body: [UInt8])] = []
        for (n, startIndex) in stride(from: 0, to: all.count, by: batchReadings).enumerated() {
            let batch = SyncBatch(
                deviceID: "pi-bench", batchSequence: Int64(n + 1), readings: Array(all[startIndex..<min(startIndex + batchReadings, all.count)]))
            bodies.append((batch.idempotencyKey, try Gzip.compress(Array(try WireCodec.encode(batch)))))
        }
        let baselineServer = try LoopbackSyncServer(token: "bench")
        defer { baselineServer.shutdown() }
        let transport = URLSessionTransport(baseURL: baselineServer.baseURL, timeout: .seconds(30))
        let baselineStart = ContinuousClock.now
        for (key, body) in bodies {
            let response = try await transport.post(
                path: "/v1/batches",
                headers: ["Authorization": "Bearer bench", "Idempotency-Key": key, "Content-Type": "application/json", "Content-Encoding": "gzip"],
                body: body)
            guard response.status == 200 else { throw Failure(description: "baseline batch answered \(response.status)") }
        }
        let baselineElapsed = ContinuousClock.now - baselineStart

        let drainSeconds = StoreBenchmark.seconds(elapsed)
        let baselineSeconds = StoreBenchmark.seconds(baselineElapsed)
        return Result(
            readings: count, batchReadings: batchReadings, batches: batches, drainSeconds: drainSeconds,
            readingsPerSecond: Double(count) / drainSeconds, compressedBytesPerReading: Double(compressed) / Double(count),
            uncompressedBytesPerReading: Double(uncompressed) / Double(count), compressionRatio: Double(uncompressed) / Double(compressed),
            baselineSeconds: baselineSeconds, ratio: drainSeconds / baselineSeconds)
    }
}
