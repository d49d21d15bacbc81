import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ServiceLifecycle
import TrackMeCore
import TrackMeServer
import TrackMeSimulation
import TrackMeSystem

/// `trackme-sim bench server [--devices 1000] [--batches 10] [--readings 20] [--db ...] [--json]`:
/// a `TrackMeServer` in this process on loopback, and many simulated devices, each on its own
/// keep-alive connection, sending batches concurrently. Reports readings stored per second and
/// the p99 batch latency, next to the same server's `GET /health` rate with the same
/// connections and concurrency in the same run (the baseline), and their ratio.
struct ServerBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "Batch ingest throughput and p99 latency of trackme-server against its /health rate."
    )

    @Option(help: "Simulated devices, each with its own connection, all concurrent.")
    var devices = 1000

    @Option(help: "Batches each device sends, one after the other.")
    var batches = 10

    @Option(help: "Heart-rate readings per batch.")
    var readings = 20

    @Option(help: "GET /health requests each device sends for the baseline.")
    var healthRequests = 20

    @Option(help: "sqlite:PATH or postgres://... (default: a SQLite file in a temp dir).")
    var db: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    @Flag(help: "Serve HTTPS (a certificate made with openssl for this run) and connect over TLS.")
    var tls = false

    func run() async throws {
        let result = try await ServerBenchmark(
            devices: devices,
            batchesPerDevice: batches,
            readingsPerBatch: readings,
            healthRequestsPerDevice: healthRequests,
            storage: db.map(StorageLocation.init(argument:)),
            tls: tls
        ).run()
        if json {
            print(String(decoding: try result.jsonData(), as: UTF8.self))
        } else {
            print(result.text)
        }
    }
}

/// The figures of one run.
struct ServerBenchmarkResult: Encodable {
    struct Baseline: Encodable {
        var healthRequests: Int
        var healthRequestsPerSecond: Double
        var healthP99Milliseconds: Double
        enum CodingKeys: String, CodingKey {
            case healthRequests = "health_requests"
            case healthRequestsPerSecond = "health_requests_per_second"
            case healthP99Milliseconds = "health_p99_ms"
        }
    }

    var benchmark = "server"
    var store: String
    var devices: Int
    var batches: Int
    var readingsPerBatch: Int
    var readingsStored: Int64
    var seconds: Double
    var readingsPerSecond: Double
    var batchesPerSecond: Double
    var batchP50Milliseconds: Double
    var batchP99Milliseconds: Double
    var baseline: Baseline
    /// Batches per second over /health requests per second: the share of the bare HTTP request
    /// rate that ingest keeps.
    var ratio: Double

    enum CodingKeys: String, CodingKey {
        case benchmark, store, devices, batches
        case readingsPerBatch = "readings_per_batch"
        case readingsStored = "readings_stored"
        case seconds
        case readingsPerSecond = "readings_per_second"
        case batchesPerSecond = "batches_per_second"
        case batchP50Milliseconds = "batch_p50_ms"
        case batchP99Milliseconds = "batch_p99_ms"
        case baseline, ratio
    }

    func jsonData() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }

    var text: String {
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        return """
            server benchmark (\(store)): \(devices) devices x \(batches / max(devices, 1)) batches x \(readingsPerBatch) readings
              ingest:   \(readingsStored) readings stored in \(f(seconds)) s = \(f(readingsPerSecond)) readings/s, \(f(batchesPerSecond)) batches/s
                        batch latency p50 \(f(batchP50Milliseconds)) ms, p99 \(f(batchP99Milliseconds)) ms
              baseline: GET /health \(f(baseline.healthRequestsPerSecond)) requests/s, p99 \(f(baseline.healthP99Milliseconds)) ms
              ratio:    batches/s over /health requests/s = \(String(format: "%.3f", ratio))
            """
    }
}

struct ServerBenchmark {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    var devices: Int
    var batchesPerDevice: Int
    var readingsPerBatch: Int
    var healthRequestsPerDevice: Int
    var storage: StorageLocation?
    var tls = false

    /// The production timeouts; every device on one loopback address, so no rate limits and a
    /// connection cap that admits them all.
    var benchLimits: ServerLimits {
        var limits = ServerLimits.withoutRateLimits
        limits.maxConnectionsPerAddress = devices + 64
        limits.maxConnections = max(limits.maxConnections, devices + 64)
        return limits
    }

    func run() async throws -> ServerBenchmarkResult {
        var logger = Logger(label: "trackme-sim.bench.server")
        logger.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = self.storage ?? .sqlite(path: directory.appendingPathComponent("server.sqlite").path)
        let certificate = tls ? try BenchCertificate.make(in: directory) : nil
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: 0,
                storage: storage,
                silenceThreshold: .seconds(3600),
                maxPageSize: 1000,
                limits: benchLimits,
                tls: certificate.map { ServerTLS(certificateChainPath: $0.certificate, privateKeyPath: $0.key) }
            ),
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        return try await withThrowingTaskGroup(of: ServerBenchmarkResult?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                let port = try await server.boundPort()
                let client = try certificate.map { try BenchCertificate.clientContext(trusting: $0.certificate) }
                let result = try await measure(server: server, port: port, storeName: storage.description, tls: client)
                await group.triggerGracefulShutdown()
                for try await _ in tasks {}
                return result
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
        }
    }

    private func measure(server: TrackMeServer, port: Int, storeName: String, tls: NIOSSLContext?) async throws -> ServerBenchmarkResult {
        // Enrolment and encoding happen before the clock starts.
        let runID = UUID().uuidString.prefix(8)
        var plans: [DevicePlan] = []
        let now = ServerConfiguration.systemWallClock()
        for index in 0..<devices {
            let deviceID = "bench-\(runID)-\(index)"
            let credentials = try await server.enrolDevice(deviceID: deviceID, person: PersonProfile(name: "Bench \(index)", age: 70))
            var bodies: [ByteBuffer] = []
            var seq: Int64 = 0
            for batchNumber in 1...max(batchesPerDevice, 1) where batchesPerDevice > 0 {
                var batchReadings: [WireReading] = []
                for _ in 0..<readingsPerBatch {
                    seq += 1
                    batchReadings.append(
                        WireReading(
                            sequence: seq,
                            timestamp: ReadingTimestamp(
                                monotonicNanoseconds: UInt64(seq) * 1_000_000_000,
                                bootID: "bench-boot",
                                wallClockMilliseconds: now + seq * 1000,
                                wallClockTrusted: true
                            ),
                            payload: .heartRate(HeartRateReading(bpm: 60 + Int(seq % 40), contact: .detected, rrIntervals: [843, 829]))
                        )
                    )
                }
                let batch = SyncBatch(
                    deviceID: deviceID,
                    batchSequence: Int64(batchNumber),
                    heartbeat: DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: readingsPerBatch, storeBytes: 65536),
                    readings: batchReadings
                )
                bodies.append(ByteBuffer(bytes: try WireCodec.encode(batch)))
            }
            plans.append(DevicePlan(deviceID: deviceID, token: credentials.token, batches: bodies))
        }

        let clock = ContinuousClock()
        // Baseline: the same number of connections, each sending GET /health back to back.
        let healthStart = clock.now
        let healthLatencies = try await runAll(plans, port: port, tls: tls) { plan, connection in
            var latencies: [Duration] = []
            for _ in 0..<healthRequestsPerDevice {
                latencies.append(try await connection.request(method: .GET, uri: "/health", headers: [], body: nil, expect: 200))
            }
            return latencies
        }
        let healthSeconds = seconds(healthStart.duration(to: clock.now))

        let ingestStart = clock.now
        let batchLatencies = try await runAll(plans, port: port, tls: tls) { plan, connection in
            var latencies: [Duration] = []
            for (index, body) in plan.batches.enumerated() {
                let headers = [
                    ("Authorization", "Bearer \(plan.token)"), ("Content-Type", "application/json"),
                    ("Idempotency-Key", "\(plan.deviceID):\(index + 1)"),
                ]
                latencies.append(try await connection.request(method: .POST, uri: "/v1/batches", headers: headers, body: body, expect: 200))
            }
            return latencies
        }
        let ingestSeconds = seconds(ingestStart.duration(to: clock.now))

        let stored = try await server.storedReadingCount()
        let expected = Int64(devices * batchesPerDevice * readingsPerBatch)
        guard stored >= expected else { throw Failure(description: "stored \(stored) readings, expected \(expected)") }
        let healthRate = Double(healthLatencies.count) / max(healthSeconds, 1e-9)
        let batchRate = Double(batchLatencies.count) / max(ingestSeconds, 1e-9)
        return ServerBenchmarkResult(
            store: storeName.hasPrefix("sqlite") ? "sqlite" : "postgres",
            devices: devices,
            batches: batchLatencies.count,
            readingsPerBatch: readingsPerBatch,
            readingsStored: expected,
            seconds: ingestSeconds,
            readingsPerSecond: Double(expected) / max(ingestSeconds, 1e-9),
            batchesPerSecond: batchRate,
            batchP50Milliseconds: percentile(batchLatencies, 0.50),
            batchP99Milliseconds: percentile(batchLatencies, 0.99),
            baseline: .init(
                healthRequests: healthLatencies.count,
                healthRequestsPerSecond: healthRate,
                healthP99Milliseconds: percentile(healthLatencies, 0.99)
            ),
            ratio: batchRate / max(healthRate, 1e-9)
        )
    }

    struct DevicePlan: Sendable {
        var deviceID: String
        var token: String
        var batches: [ByteBuffer]
    }

    /// Runs `body` for every device at once, each on a connection of its own.
    private func runAll(
        _ plans: [DevicePlan],
        port: Int,
        tls: NIOSSLContext?,
        _ body: @escaping @Sendable (DevicePlan, BenchHTTPConnection) async throws -> [Duration]
    ) async throws -> [Duration] {
        try await withThrowingTaskGroup(of: [Duration].self) { group in
            for plan in plans {
                group.addTask {
                    try await BenchHTTPConnection.with(port: port, tls: tls) { connection in try await body(plan, connection) }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    private func seconds(_ d: Duration) -> Double { BenchFigures.seconds(d) }

    private func percentile(_ values: [Duration], _ p: Double) -> Double { BenchFigures.percentile(values, p) }
}

/// A self-signed certificate for `localhost`/127.0.0.1 made with Debian's openssl for one
/// benchmark run, and a client context that trusts exactly it.
enum BenchCertificate {
    static func make(in directory: URL) throws -> (certificate: String, key: String) {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("bench.pem").path
        let key = directory.appendingPathComponent("bench.key").path
        let ending = try? SpawnedProcess.launch(
            "/usr/bin/openssl",
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", certificate,
            ]
        ).waitUntilExit()
        guard ending == .exited(0) else {
            throw ServerBenchmark.Failure(description: "openssl could not make the benchmark certificate (apt-get install openssl)")
        }
        return (certificate, key)
    }

    static func clientContext(trusting certificate: String) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(certificate)
        configuration.certificateVerification = .fullVerification
        return try NIOSSLContext(configuration: configuration)
    }
}
