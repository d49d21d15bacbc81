import Foundation
import Logging
import ServerTestSupport
import ServiceLifecycle
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The storage backends the behaviour suite runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    /// SQLite always; PostgreSQL when the package trait is on (`swift test --traits PostgreSQL`).
    static var enabled: [Backend] {
        #if PostgreSQL
        [.sqlite, .postgres]
        #else
        [.sqlite]
        #endif
    }

    var testDescription: String { rawValue }
}

/// A wall clock the test moves by hand.
final class ManualWallClock: Sendable {
    private let value: Mutex<Int64>
    init(_ start: Int64) { value = Mutex(start) }
    var now: Int64 { value.withLock { $0 } }
    func advance(milliseconds: Int64) { value.withLock { $0 += milliseconds } }
}

/// A real `TrackMeServer` on a free loopback port with a store of its own, a virtual clock for
/// its jobs and a manual wall clock.
final class TestServer: Sendable {
    static let adminToken = "test-admin-token"
    static let startWall: Int64 = 1_795_000_000_000

    let server: TrackMeServer
    let port: Int
    let clock: VirtualClock
    let wall: ManualWallClock
    let client: HTTPTestClient
    let directory: URL
    /// The one in-process starter (ServerTestSupport), shared with the agent's sync tests.
    let running: InProcessServer

    /// `limits` default to the production ones with no rate limits (each test that is about
    /// limits sets its own); `storage` shares another server's database (two instances).
    static func start(
        _ backend: Backend,
        maxBodyBytes: Int = 1 << 20,
        limits: ServerLimits = .withoutRateLimits,
        host: String = "127.0.0.1",
        storage sharedStorage: StorageLocation? = nil,
        console: (inout ConsoleConfiguration) -> Void = { _ in },
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let storage: StorageLocation?
        switch (backend, sharedStorage) {
        case (_, .some(let shared)):
            storage = shared
        case (.sqlite, nil):
            storage = nil
        case (.postgres, nil):
            storage = .postgres(url: try await PostgresFixture.shared.createDatabase())
        }
        let clock = VirtualClock()
        let wall = ManualWallClock(startWall)
        let running = try await InProcessServer.start(storage: storage) { configuration in
            configuration.host = host
            configuration.adminToken = adminToken
            configuration.maxBodyBytes = maxBodyBytes
            configuration.silenceThreshold = .seconds(90)
            configuration.silenceCheckInterval = .seconds(5)
            configuration.retention = .seconds(60 * 24 * 3600)
            configuration.retentionInterval = .seconds(3600)
            configuration.clock = clock
            configuration.wallClock = { wall.now }
            configuration.limits = limits
            // The tests assert what /health says, not how fast: on a busy machine a healthy
            // SQLite file has taken more than the 3 s a balancer gets.
            configuration.healthProbeTimeout = .seconds(60)
            // bcrypt's least cost keeps sign-in tests fast; the server's default is 12.
            configuration.console = ConsoleConfiguration(sessionLifetime: .seconds(3600), bcryptCost: 4)
            console(&configuration.console)
            configure(&configuration)
        }
        return TestServer(running: running, clock: clock, wall: wall)
    }

    private init(running: InProcessServer, clock: VirtualClock, wall: ManualWallClock) {
        self.running = running
        server = running.server
        port = running.port
        directory = running.directory
        self.clock = clock
        self.wall = wall
        client = HTTPTestClient(port: port)
    }

    /// Shuts the server down gracefully, as SIGTERM would, and checks that it ended cleanly.
    func stop() async {
        client.close()
        if case .failure(let error) = await running.stop() { Issue.record("server ended with \(error)") }
    }

    /// Runs `body` against a fresh server and stops it afterwards, whatever happens.
    static func with<T>(
        _ backend: Backend,
        maxBodyBytes: Int = 1 << 20,
        limits: ServerLimits = .withoutRateLimits,
        host: String = "127.0.0.1",
        console: (inout ConsoleConfiguration) -> Void = { _ in },
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer) async throws -> T
    ) async throws -> T {
        let server = try await start(backend, maxBodyBytes: maxBodyBytes, limits: limits, host: host, console: console, configure: configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    // MARK: - Helpers over HTTP

    func enrol(_ deviceID: String, age: Int = 70) async throws -> String {
        let response = try await client.send(
            "POST",
            "/v1/devices",
            token: Self.adminToken,
            json: ["device_id": deviceID, "person": ["name": "Ada", "age": age]]
        )
        try #require(response.status == 201, "enrol: \(response.text)")
        return try #require(response.object["token"] as? String)
    }

    func dispatcher() async throws -> String {
        let response = try await client.send("POST", "/v1/dispatchers", token: Self.adminToken, body: Data())
        try #require(response.status == 201, "dispatcher: \(response.text)")
        return try #require(response.object["token"] as? String)
    }

    func send(_ batch: SyncBatch, token: String) async throws -> HTTPTestClient.Response {
        try await client.send(
            "POST",
            "/v1/batches",
            token: token,
            body: try WireCodec.encode(batch),
            headers: ["Idempotency-Key": batch.idempotencyKey]
        )
    }

    func readings(_ deviceID: String, token: String = TestServer.adminToken, query: String = "") async throws -> [[String: Any]] {
        let response = try await client.send("GET", "/v1/devices/\(deviceID)/readings\(query)", token: token)
        try #require(response.status == 200, "readings: \(response.text)")
        return try #require(response.object["readings"] as? [[String: Any]])
    }

    /// Advances the virtual clock past the jobs' next run and waits until they ran and sleep again.
    func runJobs(advancingBy duration: Duration) async {
        await clock.waitForSleepers(2)
        clock.advance(by: duration)
        await clock.waitForSleepers(2)
    }
}

/// Test data in the wire types.
enum Sample {
    static let bootID = "3f1c2d9e-8a51-4c1e-9d7b-2a4e5f6a7b8c"

    static func timestamp(wall: Int64?, trusted: Bool = true, mono: UInt64 = 12_000_000_000) -> ReadingTimestamp {
        ReadingTimestamp(monotonicNanoseconds: mono, bootID: bootID, wallClockMilliseconds: wall, wallClockTrusted: trusted)
    }

    static func heartRate(seq: Int64, bpm: Int = 72, wall: Int64? = TestServer.startWall, trusted: Bool = true) -> WireReading {
        WireReading(
            sequence: seq,
            timestamp: timestamp(wall: wall, trusted: trusted, mono: UInt64(seq) * 1_000_000_000),
            payload: .heartRate(HeartRateReading(bpm: bpm, contact: .detected, rrIntervals: [843, 829]))
        )
    }

    static func fix(seq: Int64, wall: Int64? = TestServer.startWall) -> WireReading {
        WireReading(
            sequence: seq,
            timestamp: timestamp(wall: wall, mono: UInt64(seq) * 1_000_000_000),
            payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: 44.07, longitude: -121.31))
        )
    }

    static func batch(_ deviceID: String, seq: Int64, readings: [WireReading], heartbeat: Bool = true) -> SyncBatch {
        SyncBatch(
            deviceID: deviceID,
            batchSequence: seq,
            droppedByBudget: 0,
            heartbeat: heartbeat ? DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: readings.count, storeBytes: 4096) : nil,
            readings: readings
        )
    }

    static func alert(_ deviceID: String, id: String = UUID().uuidString, updateSeq: Int = 0, type: AlertUpdate.UpdateType = .raised) -> AlertUpdate {
        let t = timestamp(wall: TestServer.startWall)
        let state: AlertState = type == .cancelled ? .cancelled : (type == .resolved ? .resolved : .raised)
        return AlertUpdate(
            alert: AlertRecord(
                id: id,
                deviceID: deviceID,
                kind: .noPulse,
                state: state,
                firstCritical: t,
                raised: t,
                triggeringReadings: [TimedHeartRate(reading: HeartRateReading(bpm: 0, contact: .detected), timestamp: t)],
                position: AlertPosition(fix: PositionFix(mode: .threeDimensional, latitude: 44.07, longitude: -121.31), ageMilliseconds: 800),
                cancelReason: type == .cancelled ? .iAmSafe : nil
            ),
            updateSequence: updateSeq,
            type: type,
            sent: t
        )
    }
}
