// Data path, step 6 (simulation): the server's device intake measured while people load it.

import AsyncHTTPClient
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import SystemPackage
import TrackMeCore
import TrackMeServer
import TrackMeSystem

/// `trackme-sim bench intake-under-load`: how long a new SOS takes to be accepted
/// (`POST /v1/alerts`, `update_seq` 0, over real HTTP to a real `TrackMeServer` on loopback,
/// SQLite) while something else runs beside it, one phase per load, on the same server:
///
/// - `signins`: `flood` connections, each posting sign-ins with unknown usernames back to back
///   (each costs a full bcrypt at the server's cost, the decoy hash, and no per-account throttle
///   applies), with the per-address sign-in limit off, as a flood from many addresses would be;
/// - `downloads`: one person's downloads of a long history (`downloadReadings` of 1 Hz heart
///   rate, sent first as the device sends them, `ExportMemoryBenchmark.fill`), one after the
///   other as the server lets one person have them: the CSV export of the whole history, then the
///   statistics of it (at most the 93 days the server gives at once), again and again;
/// - `batches`: `devices` devices each sending a batch of `readingsPerBatch` every
///   `batchInterval` seconds, open loop (`bench load`'s generator, `LoadBenchmark`).
///
/// Each phase first measures its own baseline: the same alerts against the same server with
/// nothing beside them, just before the load starts, so that both halves see the same database
/// and the same machine. The alerts beside the load start once it is under way (its first
/// answer in) and the load stops when they are done. The figure is the ratio of the p99s (goal:
/// under 2).
public enum IntakeUnderLoadBenchmark {
    /// What runs beside the alerts in a phase.
    public enum Beside: String, CaseIterable, Codable, Sendable {
        case signIns = "signins"
        case downloads
        case batches
    }

    public struct Options: Sendable {
        /// Alerts measured in each half of each phase.
        public var samples = 200
        /// The phases, in this order.
        public var beside = Beside.allCases
        public var floodConnections = 16
        public var bcryptCost: UInt8 = 12
        /// The server's password-hashing threads (nil: its default, half the cores); as many as
        /// the flood's connections is what an unbounded pool amounts to.
        public var hashThreads: Int?
        /// 1 Hz heart-rate readings of the person whose downloads run beside the alerts.
        public var downloadReadings = 3_000_000
        /// Who downloads: this process's HTTP client (on the same cores as the server and the
        /// alerts' sender), or a `curl` process of its own, as a person's browser elsewhere would
        /// be (the path `curl` gives).
        public var downloadClient: String?
        public var devices = 2_000
        public var batchInterval = 5.0
        public var readingsPerBatch = 10
        /// Keep-alive connections carrying the devices' batches.
        public var batchConnections = 256

        public init() {}
    }

    /// One phase: the alerts with nothing beside them, then the same beside one load.
    public struct Phase: Codable, Sendable {
        public var beside: Beside
        public var quietP50Milliseconds: Double
        public var quietP99Milliseconds: Double
        public var loadedP50Milliseconds: Double
        public var loadedP99Milliseconds: Double
        public var ratioP99: Double
        /// What the load did while the alerts were measured (and until it stopped).
        public var load: Load

        enum CodingKeys: String, CodingKey {
            case beside, load
            case quietP50Milliseconds = "quiet_p50_ms"
            case quietP99Milliseconds = "quiet_p99_ms"
            case loadedP50Milliseconds = "loaded_p50_ms"
            case loadedP99Milliseconds = "loaded_p99_ms"
            case ratioP99 = "ratio_p99"
        }
    }

    /// What a load achieved; only its own phase's fields are set.
    public struct Load: Codable, Sendable {
        public var seconds: Double
        /// Sign-ins: what they got, by status: 401 (hashed and refused), 503 (the hashing queue
        /// full), `error` (no answer).
        public var signInAnswers: [String: Int]?
        /// Downloads: the person's readings, the requests sent, those answered in full, their
        /// answers by status (a request cut short when the phase ended is not among them), and
        /// the bytes received.
        public var historyReadings: Int?
        public var downloadsStarted: Int?
        public var exportsCompleted: Int?
        public var statisticsCompleted: Int?
        public var downloadAnswers: [String: Int]?
        public var downloadBytes: Int?
        /// Batches: those the schedule offered, those the server stored (200), those that failed,
        /// their latency from the scheduled time, and the readings stored per second.
        public var devices: Int?
        public var batchesOffered: Int?
        public var batchesStored: Int?
        public var batchesFailed: Int?
        /// What the failed ones got: their status, or `connection` when it broke.
        public var batchFailures: [String: Int]?
        public var batchP99Milliseconds: Double?
        public var readingsPerSecond: Double?

        init(seconds: Double) { self.seconds = seconds }

        enum CodingKeys: String, CodingKey {
            case seconds = "s"
            case signInAnswers = "sign_in_answers"
            case historyReadings = "history_readings"
            case downloadsStarted = "downloads_started"
            case exportsCompleted = "exports_completed"
            case statisticsCompleted = "statistics_completed"
            case downloadAnswers = "download_answers"
            case downloadBytes = "download_bytes"
            case devices
            case batchesOffered = "batches_offered"
            case batchesStored = "batches_stored"
            case batchesFailed = "batches_failed"
            case batchFailures = "batch_failures"
            case batchP99Milliseconds = "batch_p99_ms"
            case readingsPerSecond = "readings_per_s"
        }
    }

    public struct Result: Codable, Sendable {
        public var samples: Int
        public var floodConnections: Int
        public var bcryptCost: Int
        public var hashThreads: Int
        /// Seconds spent sending the downloads' history before its phase (not measured time).
        public var seedSeconds: Double?
        public var phases: [Phase]

        enum CodingKeys: String, CodingKey {
            case samples, phases
            case floodConnections = "flood_connections"
            case bcryptCost = "bcrypt_cost"
            case hashThreads = "hash_threads"
            case seedSeconds = "seed_s"
        }
    }

    public static func run(_ options: Options, directory: URL) async throws -> Result {
        let logger = Logger(label: "trackme.bench.intake", factory: { _ in SwiftLogNoOpLogHandler() })
        // The server's wall clock is today's, except while the downloads' history is sent: then
        // it walks with the recording, as it did while the device sent it (readings from before
        // the device's enrolment are not filed as its). 0: today's.
        let recordedWall = Atomic<Int64>(0)
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: 0,
            storage: .sqlite(path: directory.appendingPathComponent("server.sqlite").path),
            adminToken: ExportMemoryBenchmark.admin,
            wallClock: {
                let recorded = recordedWall.load(ordering: .relaxed)
                return recorded != 0 ? recorded : ServerConfiguration.systemWallClock()
            }
        )
        configuration.console.bcryptCost = options.bcryptCost
        // Alerts back to back from one device, and floods from "many addresses": the limits that
        // would refuse them are off (as `simulations/bench-load.sh` runs the server for the
        // devices), so that what is measured is the capacity, not a 429.
        configuration.limits.alertRaisesPerDevice = nil
        configuration.limits.requestsPerToken = nil
        configuration.limits.requestsPerAddress = nil
        configuration.limits.signInsPerAddress = nil
        // Every connection comes from 127.0.0.1 here: the caps are as high as the file limit
        // allows (the server fits them under it), as bench-load.sh starts the server.
        configuration.limits.maxConnections = 100_000
        configuration.limits.maxConnectionsPerAddress = 100_000
        if let hashThreads = options.hashThreads { configuration.limits.passwordHashThreads = hashThreads }
        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.boundPort()
        let base = "http://127.0.0.1:\(port)"
        let token = try await server.enrolDevice(deviceID: "bench-sos", person: PersonProfile(name: "Bench", age: 70)).token

        let alertClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            let alerts: @Sendable (String) async throws -> [Duration] = { prefix in
                try await Self.alerts(options.samples, client: alertClient, base: base, token: token, prefix: prefix)
            }
            var phases: [Phase] = []
            var seedSeconds: Double?
            for beside in options.beside {
                switch beside {
                case .signIns:
                    phases.append(try await phase(.signIns, alerts: alerts) { control in try await signIns(options, base: base, control: control) })
                case .downloads:
                    let seedStart = ContinuousClock.now
                    let history = try await seedHistory(options.downloadReadings, server: server, base: base, wall: recordedWall)
                    seedSeconds = BenchFigures.seconds(ContinuousClock.now - seedStart)
                    phases.append(
                        try await phase(.downloads, alerts: alerts) { control in
                            if let curl = options.downloadClient {
                                try await curlDownloads(history, base: base, curl: curl, control: control)
                            } else {
                                try await downloads(history, base: base, control: control)
                            }
                        }
                    )
                case .batches:
                    phases.append(try await phase(.batches, alerts: alerts) { control in try await batches(options, port: port, control: control) })
                }
            }
            try await alertClient.shutdown()
            return Result(
                samples: options.samples,
                floodConnections: options.floodConnections,
                bcryptCost: Int(options.bcryptCost),
                hashThreads: configuration.limits.passwordHashThreads,
                seedSeconds: seedSeconds,
                phases: phases
            )
        } catch {
            try? await alertClient.shutdown()
            throw error
        }
    }

    /// The alerts alone, then the same beside `load`, which starts after the first half, says
    /// when it is under way, and ends when told to stop.
    static func phase(
        _ beside: Beside,
        alerts: @Sendable (String) async throws -> [Duration],
        load: @escaping @Sendable (LoadControl) async throws -> Load
    ) async throws -> Phase {
        let quiet = try await alerts("\(beside.rawValue)-quiet")
        let control = LoadControl()
        let running = Task { try await load(control) }
        let loaded: [Duration]
        do {
            await control.underWay()
            loaded = try await alerts("\(beside.rawValue)-loaded")
        } catch {
            control.stop()
            running.cancel()
            _ = try? await running.value
            throw error
        }
        control.stop()
        let achieved = try await running.value
        let quiet99 = BenchFigures.percentile(quiet, 0.99)
        let loaded99 = BenchFigures.percentile(loaded, 0.99)
        return Phase(
            beside: beside,
            quietP50Milliseconds: BenchFigures.percentile(quiet, 0.5),
            quietP99Milliseconds: quiet99,
            loadedP50Milliseconds: BenchFigures.percentile(loaded, 0.5),
            loadedP99Milliseconds: loaded99,
            ratioP99: quiet99 > 0 ? loaded99 / quiet99 : 0,
            load: achieved
        )
    }

    /// `floodConnections` connections posting sign-ins back to back; under way once as many
    /// answers are in as there are connections.
    static func signIns(_ options: Options, base: String, control: LoadControl) async throws -> Load {
        let connections = max(1, options.floodConnections)
        var floodConfiguration = HTTPClient.Configuration()
        floodConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = connections
        let floodClient = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: floodConfiguration)
        let answers = SignInAnswers()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for connection in 0..<connections {
                group.addTask {
                    var attempt = 0
                    while !control.isStopped {
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
                        let answered = answers.counts.withLock { answers in
                            answers[status, default: 0] += 1
                            return answers.values.reduce(0, +)
                        }
                        if answered >= connections { control.markUnderWay() }
                    }
                }
            }
        }
        control.markUnderWay()
        try await floodClient.shutdown()
        var load = Load(seconds: BenchFigures.seconds(ContinuousClock.now - start))
        load.signInAnswers = answers.counts.withLock { $0 }
        return load
    }

    /// Shared by the flood's connections.
    final class SignInAnswers: Sendable {
        let counts = Mutex<[String: Int]>([:])
    }

    /// The person whose downloads run beside the alerts, and the span of their history.
    struct History: Sendable {
        var person: String
        var readings: Int
        var from: Int64
        var to: Int64
    }

    /// `readings` of 1 Hz heart rate ending now, sent as the device sends them, with the
    /// server's wall clock walking with them (`ExportMemoryBenchmark.fill`).
    static func seedHistory(_ readings: Int, server: TrackMeServer, base: String, wall: borrowing Atomic<Int64>) async throws -> History {
        let now = ServerConfiguration.systemWallClock()
        let first = now - Int64(readings) * 1000
        wall.store(first - 60_000, ordering: .relaxed)
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            let token = try await server.enrolDevice(deviceID: ExportMemoryBenchmark.deviceID, person: PersonProfile(name: "Wearer", age: 70)).token
            let person = try await ExportMemoryBenchmark.wearer(http, base: base)
            try await ExportMemoryBenchmark.fill(http, base: base, token: token, from: first, count: readings, wall: wall)
            wall.store(0, ordering: .relaxed)
            try await http.shutdown()
            return History(person: person, readings: readings, from: first, to: now + 1)
        } catch {
            wall.store(0, ordering: .relaxed)
            try? await http.shutdown()
            throw error
        }
    }

    /// The person's CSV export of the whole history, then its statistics (the last 93 days of
    /// it at most, what the server gives at once), one after the other until stopped, each read
    /// in the chunks it arrives in and thrown away. Under way once the first export's answer has
    /// begun; on stop the request running is cut short (the client hangs up).
    static func downloads(_ history: History, base: String, control: LoadControl) async throws -> Load {
        let tally = Mutex(DownloadTally())
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let start = ContinuousClock.now
        let requests = downloadRequests(history, base: base)
        let downloading = Task {
            var next = 0
            while !control.isStopped, !Task.isCancelled {
                let (isExport, url) = requests[next % requests.count]
                next += 1
                var request = HTTPClientRequest(url: url)
                request.headers.add(name: "Authorization", value: "Bearer \(ExportMemoryBenchmark.admin)")
                tally.withLock { $0.started += 1 }
                do {
                    let response = try await http.execute(request, timeout: .seconds(86_400))
                    control.markUnderWay()
                    for try await chunk in response.body { tally.withLock { $0.bytes += chunk.readableBytes } }
                    tally.withLock { $0.answered("\(response.status.code)", export: isExport) }
                } catch {
                    // Cut short on stop, or no answer.
                    if !control.isStopped { tally.withLock { $0.answers["error", default: 0] += 1 } }
                }
            }
        }
        // The downloads run until the alerts are done; then the one running is cancelled.
        await control.stopped()
        downloading.cancel()
        await downloading.value
        control.markUnderWay()
        try await http.shutdown()
        return tally.withLock { $0 }.load(history, since: start)
    }

    /// What both download clients ask for, in turn: the CSV export of the whole history, then its
    /// statistics (the last 93 days at most, what the server gives at once).
    static func downloadRequests(_ history: History, base: String) -> [(export: Bool, url: String)] {
        let people = base + "/v1/people/\(history.person)"
        let statisticsFrom = max(history.from, history.to - 93 * 86_400_000)
        return [
            (export: true, url: people + "/export?format=csv&from=\(history.from)&to=\(history.to)"),
            (export: false, url: people + "/statistics?from=\(statisticsFrom)&to=\(history.to)"),
        ]
    }

    /// What the downloads did, for either client.
    struct DownloadTally: Sendable {
        var started = 0
        var exports = 0
        var statistics = 0
        var answers: [String: Int] = [:]
        var bytes = 0

        mutating func answered(_ code: String, export: Bool) {
            answers[code, default: 0] += 1
            if code == "200" { if export { exports += 1 } else { statistics += 1 } }
        }

        func load(_ history: History, since start: ContinuousClock.Instant) -> Load {
            var load = Load(seconds: BenchFigures.seconds(ContinuousClock.now - start))
            load.historyReadings = history.readings
            load.downloadsStarted = started
            load.exportsCompleted = exports
            load.statisticsCompleted = statistics
            load.downloadAnswers = answers
            load.downloadBytes = bytes
            return load
        }
    }

    /// The same downloads by a `curl` process each (`Options.downloadClient`): the bytes go to a
    /// file, whose first bytes say the answer is under way; on stop the one running is killed
    /// (the client hangs up).
    static func curlDownloads(_ history: History, base: String, curl: String, control: LoadControl) async throws -> Load {
        let start = ContinuousClock.now
        let requests = downloadRequests(history, base: base)
        var tally = DownloadTally()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-downloads-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func size(_ path: String) -> Int { ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0 }
        var next = 0
        while !control.isStopped {
            let (isExport, url) = requests[next % requests.count]
            next += 1
            tally.started += 1
            let output = folder.appendingPathComponent("\(next)").path
            let child = ChildProcess(
                FilePath(curl),
                arguments: [
                    "-s", "-o", output, "-w", "%{http_code}", "-H", "Authorization: Bearer \(ExportMemoryBenchmark.admin)", url,
                ],
                output: .captured(limit: 1024)
            )
            let ended = Atomic<Bool>(false)
            let running = Task {
                let result = await ProcessRunner.run(child)
                ended.store(true, ordering: .relaxed)
                return result
            }
            // Under way once the answer's first bytes are in the file (or it ended).
            while size(output) == 0, !control.isStopped, !ended.load(ordering: .relaxed), !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(5))
            }
            control.markUnderWay()
            let stopping = Task {
                await control.stopped()
                running.cancel()
            }
            let result = await running.value
            stopping.cancel()
            tally.bytes += size(output)
            if case .exited(0) = result.outcome {
                tally.answered(result.standardOutputText, export: isExport)
            } else if !control.isStopped {
                tally.answers["error", default: 0] += 1
            }
        }
        control.markUnderWay()
        return tally.load(history, since: start)
    }

    /// `bench load`'s open-loop generator in this process: `devices` devices enrolled through
    /// the admin API, each sending a batch every `batchInterval` seconds; under way once the
    /// first batch is stored.
    static func batches(_ options: Options, port: Int, control: LoadControl) async throws -> Load {
        let start = ContinuousClock.now
        let result = try await LoadBenchmark(
            port: port,
            adminToken: ExportMemoryBenchmark.admin,
            devices: max(1, options.devices),
            // The longest it may run; it stops when the alerts are done.
            seconds: 86_400,
            interval: options.batchInterval,
            readings: options.readingsPerBatch,
            alerts: 0,
            connections: max(1, options.batchConnections),
            control: control
        ).run()
        var load = Load(seconds: BenchFigures.seconds(ContinuousClock.now - start))
        load.devices = result.devices
        load.batchesOffered = result.batchesOffered
        load.batchesStored = result.batchesAcknowledged
        load.batchesFailed = result.batchesFailed
        load.batchFailures = result.failures
        load.batchP99Milliseconds = result.batchP99Milliseconds
        load.readingsPerSecond = result.readingsPerSecond
        return load
    }

    /// `count` new alerts one after another; each one's time from send to the server's 200.
    static func alerts(_ count: Int, client: HTTPClient, base: String, token: String, prefix: String) async throws -> [Duration] {
        var latencies: [Duration] = []
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
            latencies.append(ContinuousClock.now - start)
        }
        return latencies
    }
}
