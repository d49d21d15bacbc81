import EdgeBenchmarks
import EdgeStore
import EdgeSync
import Foundation
import GzipCodec
import ServerTestSupport
import Synchronization
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench drain`: time to drain a 24-hour backlog (86,400 heart-rate readings and
/// 86,400 fixes) from the store to the real server on loopback (`TrackMeServer` in-process,
/// SQLite, so the figure is the real server's), and bytes sent per reading
/// after gzip; next to a baseline measured in the same run: POSTing the same batches, encoded and
/// compressed beforehand, to a fresh server over the same transport (the network and server share
/// of the time, without the store, the cursor and the encoding).
public enum DrainBenchmark {
    /// The HTTP client both the drain and the baseline send through.
    public enum Transport: String, CaseIterable, Sendable {
        /// The agent's `CurlTransport` (kept-alive connections).
        case curl
        /// `CurlTransport` keeping no connection: a new connection per batch, to show what reuse saves.
        case curlNoReuse = "curl-no-reuse"
    }

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
        public var transport: String
        /// Baseline time per POST, in milliseconds (the transport's and the server's share).
        public var baselineMillisecondsPerBatch: Double

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
            case transport
            case baselineMillisecondsPerBatch = "baseline_ms_per_batch"
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    static func transport(_ kind: Transport, _ baseURL: URL) -> any HTTPTransport {
        switch kind {
        case .curl: CurlTransport(baseURL: baseURL, timeout: .seconds(30))
        case .curlNoReuse: CurlTransport(baseURL: baseURL, timeout: .seconds(30), keptConnections: 0)
        }
    }

    public static func run(hours: Int = 24, batchReadings: Int = 1000, transport kind: Transport = .curl) async throws -> Result {
        let dir = NSTemporaryDirectory() + "trackme-bench-drain-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let count = hours * 3600 * 2
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir + "/store.sqlite", diskBudgetBytes: 1 << 40))
        defer { store.close() }
        for start in stride(from: 0, to: count, by: 5000) {
            try store.append(
                (start..<min(start + 5000, count)).map { i in
                    let (t, p) = SyntheticReadings.reading(i)
                    return NewReading(timestamp: t, payload: p)
                }
            )
        }

        let (elapsed, compressed, uncompressed, batches) = try await InProcessServer.with { (server) async throws -> (Duration, Int, Int, Int) in
            let token = try await server.enrol("pi-bench")
            let configuration = SyncConfiguration(deviceID: "pi-bench", token: token, maxBatchReadings: batchReadings, latestFirst: false)
            let acknowledged = Atomic<Int>(0)
            let engine = SyncEngine(
                store: store,
                transport: transport(kind, server.baseURL),
                configuration: configuration,
                clock: ContinuousClock(),
                onEvent: { event in
                    if case .batchAcknowledged = event { acknowledged.add(1, ordering: .relaxed) }
                }
            )
            let start = ContinuousClock.now
            try await engine.drain()
            let elapsed = ContinuousClock.now - start
            let stored = try await server.server.storedReadingCount()
            guard stored == count else { throw Failure(description: "server holds \(stored) of \(count) readings") }
            return (elapsed, await engine.bodyBytesSent, await engine.uncompressedBytesSent, acknowledged.load(ordering: .relaxed))
        }

        // Baseline: the same batches, prepared beforehand, POSTed in turn to a fresh server.
        let all = try store.allReadings().map(\.reading)
        var bodies: [(key: String, body: [UInt8])] = []
        for (n, startIndex) in stride(from: 0, to: all.count, by: batchReadings).enumerated() {
            let batch = SyncBatch(
                deviceID: "pi-bench",
                batchSequence: Int64(n + 1),
                readings: Array(all[startIndex..<min(startIndex + batchReadings, all.count)])
            )
            bodies.append((batch.idempotencyKey, try Gzip.compress(Array(try WireCodec.encode(batch)))))
        }
        let baselineElapsed = try await InProcessServer.with { (server) async throws -> Duration in
            let token = try await server.enrol("pi-bench")
            let transport = transport(kind, server.baseURL)
            let baselineStart = ContinuousClock.now
            for (key, body) in bodies {
                let response = try await transport.post(
                    path: "/v1/batches",
                    headers: [
                        "Authorization": "Bearer \(token)", "Idempotency-Key": key, "Content-Type": "application/json", "Content-Encoding": "gzip",
                    ],
                    body: body
                )
                guard response.status == 200 else { throw Failure(description: "baseline batch answered \(response.status)") }
            }
            return ContinuousClock.now - baselineStart
        }

        let drainSeconds = StoreBenchmark.seconds(elapsed)
        let baselineSeconds = StoreBenchmark.seconds(baselineElapsed)
        return Result(
            readings: count,
            batchReadings: batchReadings,
            batches: batches,
            drainSeconds: drainSeconds,
            readingsPerSecond: Double(count) / drainSeconds,
            compressedBytesPerReading: Double(compressed) / Double(count),
            uncompressedBytesPerReading: Double(uncompressed) / Double(count),
            compressionRatio: Double(uncompressed) / Double(compressed),
            baselineSeconds: baselineSeconds,
            ratio: drainSeconds / baselineSeconds,
            transport: kind.rawValue,
            baselineMillisecondsPerBatch: baselineSeconds * 1000 / Double(bodies.count)
        )
    }
}
