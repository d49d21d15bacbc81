// Data path, step 6 (simulation): the server's device intake measured while people load it.

import AsyncHTTPClient
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench intake-under-load`: how long a new SOS takes to be accepted
/// (`POST /v1/alerts`, `update_seq` 0, over real HTTP to a real `TrackMeServer` on loopback,
/// SQLite) while a sign-in flood runs beside it — `flood` connections, each posting sign-ins
/// with unknown usernames back to back (each costs a full bcrypt at the server's cost, the
/// decoy hash, and no per-account throttle applies), with the per-address sign-in limit off, as
/// a flood from many addresses would be. The baseline is the same alerts against the same
/// server with nothing beside them, measured first in the same run; the figure is the ratio of
/// the p99s (goal: under 2).
public enum IntakeUnderLoadBenchmark {
    public struct Result: Codable, Sendable {
        public var samples: Int
        public var floodConnections: Int
        public var bcryptCost: Int
        public var hashThreads: Int
        public var quietP50Milliseconds: Double
        public var quietP99Milliseconds: Double
        public var floodP50Milliseconds: Double
        public var floodP99Milliseconds: Double
        public var ratioP99: Double
        /// What the flood's sign-ins got: 401 (hashed and refused), 503 (the hashing queue full).
        public var floodAnswers: [String: Int]

        enum CodingKeys: String, CodingKey {
            case samples
            case floodConnections = "flood_connections"
            case bcryptCost = "bcrypt_cost"
            case hashThreads = "hash_threads"
            case quietP50Milliseconds = "quiet_p50_ms"
            case quietP99Milliseconds = "quiet_p99_ms"
            case floodP50Milliseconds = "flood_p50_ms"
            case floodP99Milliseconds = "flood_p99_ms"
            case ratioP99 = "ratio_p99"
            case floodAnswers = "flood_answers"
        }
    }

    /// `hashThreads`: the server's password-hashing threads (nil: its default, half the cores);
    /// as many as the flood's connections is what an unbounded pool amounts to.
    public static func run(samples: Int, floodConnections: Int, bcryptCost: UInt8, hashThreads: Int?, directory: URL) async throws -> Result {
        let logger = Logger(label: "trackme.bench.intake", factory: { _ in SwiftLogNoOpLogHandler() })
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: 0,
            storage: .sqlite(path: directory.appendingPathComponent("server.sqlite").path)
        )
        configuration.console.bcryptCost = bcryptCost
        // Alerts back to back from one device, and a flood from "many addresses": the limits that
        // would refuse either are off, so that what is measured is the capacity, not a 429.
        configuration.limits.alertRaisesPerDevice = nil
        configuration.limits.requestsPerToken = nil
        configuration.limits.requestsPerAddress = nil
        configuration.limits.signInsPerAddress = nil
        if let hashThreads { configuration.limits.passwordHashThreads = hashThreads }
        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.boundPort()
        let base = "http://127.0.0.1:\(port)"
        let device = try await server.enrolDevice(deviceID: "bench-sos", person: PersonProfile(name: "Bench", age: 70))

        var floodConfiguration = HTTPClient.Configuration()
        floodConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(1, floodConnections)
        let floodClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: floodConfiguration)
        let alertClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            let quiet = try await alerts(samples, client: alertClient, base: base, token: device.token, prefix: "quiet")
            let state = FloodState()
            let flood = Task {
                await withTaskGroup(of: Void.self) { group in
                    for connection in 0..<max(1, floodConnections) {
                        group.addTask {
                            var attempt = 0
                            while state.running.load(ordering: .relaxed) {
                                attempt += 1
                                var request = HTTPClientRequest(url: base + "/v1/session")
                                request.method = .POST
                                request.headers.add(name: "Content-Type", value: "application/json")
                                let body = "{\"username\":\"nobody-\(connection)-\(attempt)\",\"password\":\"wrong password\"}"
                                request.body = .bytes(ByteBuffer(string: body))
                                let status: String
                                do {
                                    let response = try await floodClient.execute(request, timeout: .seconds(60))
                                    _ = try await response.body.collect(upTo: 1 << 16)
                                    status = "\(response.status.code)"
                                } catch {
                                    status = "error"
                                }
                                state.answers.withLock { $0[status, default: 0] += 1 }
                            }
                        }
                    }
                }
            }
            // The flood is under way (its first answers are in) before the alerts start.
            while state.answers.withLock({ $0.values.reduce(0, +) }) < max(1, floodConnections) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let loaded = try await alerts(samples, client: alertClient, base: base, token: device.token, prefix: "flood")
            state.running.store(false, ordering: .relaxed)
            await flood.value
            try await floodClient.shutdown()
            try await alertClient.shutdown()
            let quietSorted = quiet.sorted()
            let loadedSorted = loaded.sorted()
            let quiet99 = percentile(quietSorted, 0.99)
            let loaded99 = percentile(loadedSorted, 0.99)
            return Result(
                samples: samples,
                floodConnections: floodConnections,
                bcryptCost: Int(bcryptCost),
                hashThreads: configuration.limits.passwordHashThreads,
                quietP50Milliseconds: percentile(quietSorted, 0.5),
                quietP99Milliseconds: quiet99,
                floodP50Milliseconds: percentile(loadedSorted, 0.5),
                floodP99Milliseconds: loaded99,
                ratioP99: quiet99 > 0 ? loaded99 / quiet99 : 0,
                floodAnswers: state.answers.withLock { $0 }
            )
        } catch {
            try? await floodClient.shutdown()
            try? await alertClient.shutdown()
            throw error
        }
    }

    /// `count` new alerts one after another; each one's time from send to the server's 200.
    static func alerts(_ count: Int, client: HTTPClient, base: String, token: String, prefix: String) async throws -> [Double] {
        var latencies: [Double] = []
        for index in 0..<count {
            let now = ReadingTimestamp(
                monotonicNanoseconds: UInt64(index + 1) * 1_000_000_000,
                bootID: "bench-boot",
                wallClockMilliseconds: nil,
                wallClockTrusted: false
            )
            let update = AlertUpdate(
                alert: AlertRecord(
                    id: "\(prefix)-\(index)",
                    deviceID: "bench-sos",
                    kind: .manual,
                    state: .raised,
                    firstCritical: now,
                    raised: now
                ),
                updateSequence: 0,
                type: .raised,
                sent: now
            )
            var request = HTTPClientRequest(url: base + "/v1/alerts")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try WireCodec.encode(update)))
            let start = ContinuousClock.now
            let response = try await client.execute(request, timeout: .seconds(120))
            _ = try await response.body.collect(upTo: 1 << 16)
            guard response.status == .ok else { throw ScenarioError(message: "alert \(prefix)-\(index) answered \(response.status.code)") }
            latencies.append(ScenarioRunner.milliseconds(ContinuousClock.now - start))
        }
        return latencies
    }

    /// Shared by the flood's connections and the measuring task.
    final class FloodState: Sendable {
        let running = Atomic(true)
        let answers = Mutex<[String: Int]>([:])
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
    }
}
