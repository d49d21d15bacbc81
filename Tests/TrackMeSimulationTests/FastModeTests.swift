import EdgeSync
import Foundation
import GzipCodec
import Hummingbird
import Logging
import Testing
import TrackMeCore
import TrackMeServer
import TrackMeSystem

@testable import TrackMeSimulation

/// Fast mode replaces the kernel's I/O, never a decision: the device's requests go to the
/// server's own router, middleware, handlers and store in process instead of over loopback TCP,
/// and what the device and the server decide comes out the same.
@Suite struct FastModeTests {
    static let simulations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("simulations")

    /// The report as JSON without what may differ between the two modes: the mode's name and
    /// the figures measured on the real clock.
    func comparable(_ report: SimulationReport) throws -> String {
        var report = report
        report.mode = ""
        report.wallMilliseconds = 0
        for index in report.alerts.indices { report.alerts[index].decisionLatencyMilliseconds = nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    /// Without fsync the stores live in memory where the machine has a tmpfs with room; a run
    /// that fsyncs keeps its files on the temporary directory's disk.
    @Test func filesLiveInMemoryOnlyWhenNothingIsFsynced() throws {
        let memory = try WorkDirectory.make("trackme-test", inMemory: true)
        defer { try? FileManager.default.removeItem(at: memory) }
        let disk = try WorkDirectory.make("trackme-test", inMemory: false)
        defer { try? FileManager.default.removeItem(at: disk) }
        #expect(disk.deletingLastPathComponent().standardizedFileURL == FileManager.default.temporaryDirectory.standardizedFileURL)
        let space = FileSystemSpace.of(WorkDirectory.memoryBacked)
        if let space, !space.readOnly, space.availableBytes >= WorkDirectory.memoryRoomBytes {
            #expect(memory.deletingLastPathComponent().path == WorkDirectory.memoryBacked)
        } else {
            #expect(memory.deletingLastPathComponent().standardizedFileURL == FileManager.default.temporaryDirectory.standardizedFileURL)
        }
        #expect(FileManager.default.fileExists(atPath: memory.path) && FileManager.default.fileExists(atPath: disk.path))
    }

    func run(_ scenario: Scenario, io: ScenarioRunner.IO) async throws -> SimulationReport {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = ScenarioRunner.Options(simulationsDirectory: Self.simulations, logger: logger)
        options.io = io
        return try await ScenarioRunner(options: options).run(scenario).report
    }

    /// manual-sos: a cancelled countdown, a raise delivered and a dispatcher's acknowledgement
    /// (sent through the run's transport) that the device learns of from a batch answer.
    /// crash-mid-write: three kills (one with an alert journaled and unsent), a network outage
    /// and a flat line: the readings lane's backoff, the dispatch lane's retries, a restored alert.
    @Test("fast mode and the sockets mode give the same report", arguments: ["manual-sos", "crash-mid-write"])
    func fastAndSocketsGiveTheSameReport(name: String) async throws {
        let scenario = try Scenario.load(from: Self.simulations.appendingPathComponent("scenarios/\(name).json"))
        let sockets = try await run(scenario, io: .sockets)
        let fast = try await run(scenario, io: .inProcess)
        #expect(sockets.mode == "sockets" && fast.mode == "fast")
        #expect(fast.passed, "\(fast.expectations.filter { !$0.passed }.map(\.message))")
        #expect(try comparable(fast) == comparable(sockets))
        #expect(!fast.alerts.isEmpty && fast.alerts.allSatisfy { $0.deliveredMilliseconds != nil })
        // Every reading the store committed is at the server once.
        #expect(fast.readings.stored > 0 && fast.readings.receivedByServer == fast.readings.stored - fast.readings.droppedByBudget)
        #expect(fast.readings.duplicatesAtServer == 0 && fast.readings.lost == 0)
        if name == "manual-sos" {
            // No kill, no lost answer: an alert update POSTed twice could only be a second sender.
            #expect(fast.alertUpdatesDuplicateAtServer == 0 && sockets.alertUpdatesDuplicateAtServer == 0)
            #expect(fast.alerts.contains { $0.state == .acknowledged })
        }
    }

    /// Same seed, same report in fast mode too.
    @Test func fastModeIsDeterministic() async throws {
        let scenario = try Scenario.load(from: Self.simulations.appendingPathComponent("scenarios/crash-mid-write.json"))
        let first = try await run(scenario, io: .inProcess)
        let second = try await run(scenario, io: .inProcess)
        #expect(try comparable(first) == comparable(second))
    }

    /// A batch as the agent's sync engine sends it (`WireCodec`, gzip, its headers).
    static func batchRequest(
        _ batch: SyncBatch,
        token: String,
        gzip: ([UInt8]) throws -> [UInt8]
    ) throws -> (headers: [String: String], body: [UInt8]) {
        let headers = [
            "Authorization": "Bearer \(token)", "Idempotency-Key": batch.idempotencyKey,
            "Content-Type": "application/json", "Content-Encoding": "gzip",
        ]
        return (headers, try gzip(Array(try WireCodec.encode(batch))))
    }

    /// The server's handlers judge a fast-mode request as they judge one over a socket: a
    /// batch whose gzip is cut short and a batch with a reading numbered 0 are refused with the
    /// same status and the same error body, nothing is stored; a good batch is taken once, and
    /// the same batch again over the other way is the same batch to the store.
    @Test func fastModeRequestsGoThroughTheServersHandlers() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("fast-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: 0,
                storage: .sqlite(path: work.appendingPathComponent("server.sqlite").path),
                durability: .processCrash,
                adminToken: ScenarioRunner.adminToken,
                limits: .withoutRateLimits
            ),
            logger: logger
        )
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.boundPort()
        let sockets = CurlTransport(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)")))
        let credentials = try await server.enrolDevice(deviceID: "fast-1", person: PersonProfile(name: "F", age: 50))
        let reading = WireReading(
            sequence: 1,
            timestamp: ScenarioRunner.timestamp(1000),
            payload: .heartRate(HeartRateReading(bpm: 72, contact: .detected))
        )
        let good = SyncBatch(deviceID: credentials.deviceID, batchSequence: 1, readings: [reading])
        var zero = SyncBatch(deviceID: credentials.deviceID, batchSequence: 2, readings: [reading])
        zero.readings[0].sequence = 0
        let cutShort = try Self.batchRequest(good, token: credentials.token) { Array(try Gzip.compress($0).dropLast(8)) }
        let numberedZero = try Self.batchRequest(zero, token: credentials.token) { try Gzip.compress($0) }
        let goodRequest = try Self.batchRequest(good, token: credentials.token) { try Gzip.compress($0) }

        let transport = InProcessTransport(router: InProcessRouter(server: server))
        var inProcess: [EdgeSync.HTTPResponse] = []
        for request in [cutShort, numberedZero, goodRequest] {
            inProcess.append(try await transport.post(path: "/v1/batches", headers: request.headers, body: request.body))
        }
        #expect(try await server.storedSequences(deviceID: credentials.deviceID) == [1])
        var overSockets: [EdgeSync.HTTPResponse] = []
        for request in [cutShort, numberedZero, goodRequest] {
            overSockets.append(try await sockets.post(path: "/v1/batches", headers: request.headers, body: request.body))
        }

        #expect(inProcess.map(\.status) == [400, 400, 200])
        #expect(overSockets.map(\.status) == [400, 400, 200])
        for index in 0..<2 {
            #expect(String(decoding: inProcess[index].body, as: UTF8.self) == String(decoding: overSockets[index].body, as: UTF8.self))
        }
        #expect(String(decoding: inProcess[0].body, as: UTF8.self).contains("gzip"))
        #expect(String(decoding: inProcess[1].body, as: UTF8.self).contains("readings[0].seq"))
        #expect(inProcess[2].headers["content-type"] == overSockets[2].headers["content-type"])
        #expect(try await server.storedSequences(deviceID: credentials.deviceID) == [1])
    }
}
