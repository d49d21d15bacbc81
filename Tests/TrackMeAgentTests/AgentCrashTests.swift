import EdgeBenchmarks
import EdgeStore
import Foundation
import FoundationNetworking
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeServer
import TrackMeSystem

@testable import TrackMeAgent

/// Issue 16: SIGKILL cycles of the whole `trackme-agent` binary (simulated strap replaying a
/// real trace, its own store, sync over plain HTTP) against the real `trackme-server` binary
/// (SQLite) on loopback. The store-and-sync part alone is `EdgeSyncTests.CrashTests`.
@Suite("trackme-agent killed with SIGKILL", .serialized)
struct AgentCrashTests {
    /// Cycles: 12 in `make test`, `TRACKME_AGENT_CRASH_CYCLES` (1000 in `make soak`).
    static var cycles: Int {
        ProcessInfo.processInfo.environment["TRACKME_AGENT_CRASH_CYCLES"].flatMap(Int.init).map { max($0, 6) } ?? 12
    }

    static let deviceID = "pi-crash"

    @Test(
        "SIGKILL at random moments (during store creation and start-up, during batches, during salvage of a moved-aside store), restart, drain: the store never loses what it held, the file stays intact, and every reading it acknowledged is at the server exactly once"
    )
    func killRepeatedly() async throws {
        let cycles = Self.cycles
        let started = ContinuousClock.now
        let directory = try TemporaryDirectory()
        let server = try await ServerProcess.start(directory: directory.path)
        defer { server.stop() }
        let token = try await server.enrol(deviceID: Self.deviceID)
        try (token + "\n").write(toFile: directory.file("token"), atomically: true, encoding: .utf8)
        // A long soak takes fewer readings a second, so that each check of the store stays quick.
        let agent = try AgentProcess(directory: directory.path, serverPort: server.port, pace: cycles > 100 ? 150 : 300)

        var generator = SplitMix64(seed: 2026)
        var acknowledged = Set<Int64>()
        var failures: [String] = []
        var tally = Tally()
        // Spawn to first status answer, measured on the runs that got that far: early kills
        // land at a random moment inside it (process start, configuration, store creation or
        // open, recovery, salvage).
        var startUp: Duration = .milliseconds(400)
        var asides: [String] = []

        for index in 0..<cycles {
            let salvaging = index % 25 == 7
            let early = index < 3 || index % 10 == 3 || salvaging
            if salvaging, FileManager.default.fileExists(atPath: agent.storePath) {
                // A copy of the store as the last run left it, moved aside as if found corrupt:
                // the agent salvages it at start and is killed during that.
                let aside = agent.storePath + ".corrupt-\(1000 + index)"
                try FileManager.default.copyItem(atPath: agent.storePath, toPath: aside)
                if FileManager.default.fileExists(atPath: agent.storePath + "-wal") {
                    try FileManager.default.copyItem(atPath: agent.storePath + "-wal", toPath: aside + "-wal")
                }
                asides.append(aside)
                tally.salvageRuns += 1
            }
            let run = try agent.launch(draining: false)
            let launched = ContinuousClock.now
            if early {
                // A random kill point inside start-up; the first runs within its first 150 ms,
                // while the store file is being created.
                let limit = index < 3 ? min(startUp, .milliseconds(150)) : startUp
                let window = limit.components.seconds * 1_000_000 + limit.components.attoseconds / 1_000_000_000_000
                try await Task.sleep(for: .microseconds(Int64.random(in: 0...window, using: &generator)))
            } else {
                let storedBefore = try await server.counter("trackme_server_readings_stored_total")
                _ = try await agent.waitForStatus(run)
                startUp = ContinuousClock.now - launched
                if Int.random(in: 0..<3, using: &generator) == 0 {
                    // During a batch of the backlog: once the server stored a batch's worth of
                    // this run's readings (a full batch, or the one the send interval let go),
                    // the agent is marking it synced or reserving and sending the next.
                    try await server.waitFor("trackme_server_readings_stored_total", above: storedBefore + 100, while: run)
                    tally.killedAfterOwnBatch += 1
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 0...150, using: &generator)))
                } else {
                    // Anywhere in steady running: strap notifications, group commits (one a
                    // second), the latest-first batch, batches.
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 0...3000, using: &generator)))
                }
            }
            let killed = await run.kill()
            if !killed { failures.append("run \(index): the agent was not killed by SIGKILL (it exited by itself): \(agent.logTail())") }

            // What the killed agent left on disk, checked on a copy so that the next start
            // recovers (and salvages) the file itself.
            guard let check = try StoreCheck.openCopy(of: agent.storePath, in: directory.file("check")) else {
                if !acknowledged.isEmpty { failures.append("run \(index): the store is gone") }
                tally.beforeAnyStore += 1
                continue
            }
            defer { check.close() }
            if let aside = check.openReport.movedAsidePath { failures.append("run \(index): the store was found corrupt (\(aside))") }
            let verdict = try check.integrityCheck()
            if verdict != ["ok"] { failures.append("run \(index): integrity_check \(verdict)") }
            let present = Set(try check.sequenceNumbers())
            let lost = acknowledged.subtracting(present)
            if !lost.isEmpty { failures.append("run \(index): \(lost.count) readings the store held before are gone, e.g. \(lost.min() ?? 0)") }
            if present.isEmpty { tally.beforeAnyReading += 1 }
            if present.count == acknowledged.count { tally.storedNothing += 1 }
            acknowledged.formUnion(present)
            // A salvaged copy is recorded in the store in the same transaction as its readings:
            // from then on the agent never reads it again, so it can go (it holds a whole store).
            let salvaged = Set(try check.salvageRecords().map(\.path))
            for aside in asides where salvaged.contains(aside) && FileManager.default.fileExists(atPath: aside) {
                try FileManager.default.removeItem(atPath: aside)
                try? FileManager.default.removeItem(atPath: aside + "-wal")
                tally.salvaged += 1
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        let syncedByKilledRuns = try await server.counter("trackme_server_readings_stored_total")

        // The last start has no strap (an L2CAP address on a machine without Bluetooth), so
        // nothing new is stored: the agent drains its backlog and is stopped with SIGTERM.
        let drain = try agent.launch(draining: true)
        _ = try await agent.waitForStatus(drain)
        try await agent.waitUntilDrained(drain)
        drain.process.signal(SIGTERM)
        let exit = await drain.process.exit()
        #expect(exit == .exited(0), "\(agent.logTail())")

        let store = try ReadingStore(
            configuration: EdgeStore.StoreConfiguration(path: agent.storePath, diskBudgetBytes: agent.budget),
            logger: quietLogger
        )
        defer { store.close() }
        #expect(store.openReport.movedAsidePath == nil)
        let local = try store.allReadings()
        let held = Set(local.map(\.reading.sequence))
        #expect(acknowledged.isSubset(of: held), "\(acknowledged.subtracting(held).count) readings acknowledged after a kill are gone")
        let remote = try await server.readings(deviceID: Self.deviceID)
        let problems = ExactlyOnce.problems(store: local, server: remote)
        #expect(problems.isEmpty, "\(problems)")
        let salvageRecords = Set(try store.salvageRecords().map(\.path))
        #expect(Set(asides).isSubset(of: salvageRecords), "a moved-aside copy was never salvaged")
        #expect(local.count > 0)
        // The figures for simulations/RELIABILITY.md.
        print(
            "agent crash test: \(cycles) SIGKILL cycles of trackme-agent (\(tally.storedNothing) stored nothing new before the kill, "
                + "\(tally.beforeAnyStore) before a store file existed, \(tally.beforeAnyReading) before any reading was stored, "
                + "\(tally.killedAfterOwnBatch) right after the server stored a batch of theirs, \(tally.salvageRuns) during salvage of a moved-aside copy), "
                + "\(local.count) readings acknowledged by the store, \(remote.count) at the server (\(Set(remote.map(\.sequence)).count) distinct), "
                + "\(problems.isEmpty ? "exactly once" : "NOT exactly once"), \(syncedByKilledRuns) synced by the killed runs, in \(ContinuousClock.now - started)"
        )
    }

    struct Tally {
        var storedNothing = 0
        var beforeAnyStore = 0
        var beforeAnyReading = 0
        var killedAfterOwnBatch = 0
        var salvageRuns = 0
        var salvaged = 0
    }
}

/// A copy of a killed agent's store (file, WAL, generation) opened with the agent's own
/// `ReadingStore`: recovery happens on the copy, the original stays as the kill left it.
enum StoreCheck {
    static func openCopy(of path: String, in directory: String) throws -> ReadingStore? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let name = (path as NSString).lastPathComponent
        for suffix in ["", "-wal", ".generation"] where FileManager.default.fileExists(atPath: path + suffix) {
            try FileManager.default.copyItem(atPath: path + suffix, toPath: directory + "/" + name + suffix)
        }
        return try ReadingStore(
            configuration: EdgeStore.StoreConfiguration(path: directory + "/" + name, diskBudgetBytes: 1 << 30),
            logger: quietLogger
        )
    }
}

/// One started `trackme-agent run`.
struct AgentRun: Sendable {
    let process: SpawnedProcess

    /// SIGKILL; true if that is what ended it.
    func kill() async -> Bool {
        process.signal(SIGKILL)
        return await process.exit() == .signalled(SIGKILL)
    }
}

/// The agent binary with its configuration in a directory of the test's own: the simulated
/// strap replays a real ECG-derived trace fast, gpsd is absent (nothing listens on port 9),
/// metrics are off, and every run's log goes to one file.
struct AgentProcess {
    let binary: String
    let directory: String
    let budget: Int64 = 512 << 20
    var storePath: String { directory + "/data/agent.sqlite" }
    var socketPath: String { directory + "/agent.sock" }
    var logPath: String { directory + "/agent.log" }

    init(directory: String, serverPort: Int, pace: Int) throws {
        binary = try builtProduct("trackme-agent")
        self.directory = directory
        let common = """
            person: {name: Ada, age: 67}
            server: {url: "http://127.0.0.1:\(serverPort)", device_id: \(AgentCrashTests.deviceID), token_file: token}
            gpsd: {port: 9}
            store: {path: data/agent.sqlite, disk_budget: \(budget)}
            status: {socket: agent.sock}
            metrics: {enabled: false}
            logging: {level: notice}
            shutdown: {grace_seconds: 5}

            """
        // A real trace (simulations/traces/hr/SOURCES.md) at `pace` times real time: as many
        // readings a second, so full batches of the backlog (1000 readings) go within a few runs.
        try
            (common + """
                strap:
                  transport: simulated
                  trace: \(Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv"))
                  pace: \(pace)
                """).write(toFile: directory + "/agent.yaml", atomically: true, encoding: .utf8)
        try (common + "strap: {address: \"AA:BB:CC:DD:EE:FF\"}\n").write(toFile: directory + "/drain.yaml", atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
    }

    func launch(draining: Bool) throws -> AgentRun {
        var environment = ProcessInfo.processInfo.environment
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "JOURNAL_STREAM", "LISTEN_FDS"] { environment.removeValue(forKey: key) }
        let process = try SpawnedProcess.launch(
            binary,
            arguments: ["run", "--config", directory + (draining ? "/drain.yaml" : "/agent.yaml")],
            environment: environment,
            standardError: .file(logPath)
        )
        return AgentRun(process: process)
    }

    /// The agent's status if it answers within `timeout`, else nil.
    func status(timeout: Duration) async throws -> AgentStatus? {
        guard let response = try? await ControlClient.send(.status, socketPath: socketPath, timeout: timeout), response.ok else { return nil }
        return response.status
    }

    /// Waits until the agent answers on its status socket (its store is open by then).
    func waitForStatus(_ run: AgentRun, within limit: Duration = .seconds(60)) async throws -> AgentStatus {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard run.process.isRunning else { throw AgentCrashFailure("the agent exited during start-up: \(logTail())") }
            if let status = try await status(timeout: .seconds(2)) { return status }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw AgentCrashFailure("the agent did not answer on \(socketPath) within \(limit): \(logTail())")
    }

    /// Waits until the status says nothing is left to send.
    func waitUntilDrained(_ run: AgentRun, within limit: Duration = .seconds(300)) async throws {
        let deadline = ContinuousClock.now + limit
        var last: AgentStatus?
        while ContinuousClock.now < deadline {
            guard run.process.isRunning else { throw AgentCrashFailure("the agent exited while draining: \(logTail())") }
            last = try await status(timeout: .seconds(5))
            if let last, last.store.depth == 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw AgentCrashFailure("the agent did not drain within \(limit) (depth \(last?.store.depth ?? -1)): \(logTail())")
    }

    func logTail() -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return String(text.suffix(2000))
    }
}

/// `trackme-server` on loopback (plain HTTP, SQLite, no rate limits: the test polls it), with
/// the admin token in its environment.
final class ServerProcess: Sendable {
    static let adminToken = "crash-admin-token"
    let process: SpawnedProcess
    let port: Int
    let base: URL

    private init(process: SpawnedProcess, port: Int) throws {
        self.process = process
        self.port = port
        base = try #require(URL(string: "http://127.0.0.1:\(port)"))
    }

    static func start(directory: String) async throws -> ServerProcess {
        let logPath = directory + "/server.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let process = try SpawnedProcess.launch(
            try builtProduct("trackme-server"),
            arguments: [
                "serve", "--plain-http", "--host", "127.0.0.1", "--port", "0", "--db", "sqlite:\(directory)/server.sqlite",
                "--rate-per-address", "0", "--rate-per-token", "0",
            ],
            environment: ["TRACKME_ADMIN_TOKEN": adminToken, "LOG_LEVEL": "info", "PATH": "/usr/bin:/bin"],
            standardError: .file(logPath)
        )
        let port = try await ServerChildLog.listeningPort(logFile: logPath, of: process, within: .seconds(60))
        return try ServerProcess(process: process, port: port)
    }

    func stop() {
        process.signal(SIGTERM)
        process.waitUntilExit()
    }

    private func request(_ method: String, _ path: String, body: [String: Any]? = nil, admin: Bool = true) async throws -> (Int, Data) {
        var request = URLRequest(url: try #require(URL(string: base.absoluteString + path)))
        request.httpMethod = method
        if admin { request.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// Enrols a device with the admin token; returns its bearer token.
    func enrol(deviceID: String) async throws -> String {
        let (status, data) = try await request("POST", "/v1/devices", body: ["device_id": deviceID, "person": ["name": "Ada", "age": 67]])
        #expect(status == 201, "\(String(decoding: data, as: UTF8.self))")
        return try WireCodec.decode(DeviceCredentials.self, from: data).token
    }

    /// A counter or gauge from `/metrics` (loopback needs no token).
    func counter(_ name: String) async throws -> Int64 {
        let (_, data) = try await request("GET", "/metrics", admin: false)
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
            if let value = Int64(line.dropFirst(name.count + 1)) { return value }
        }
        throw AgentCrashFailure("no \(name) in /metrics")
    }

    /// Waits until the counter passes `value` (the agent of `run` must still be running).
    func waitFor(_ name: String, above value: Int64, while run: AgentRun, within limit: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await counter(name) > value { return }
            guard run.process.isRunning else { throw AgentCrashFailure("the agent exited before \(name) passed \(value)") }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw AgentCrashFailure("\(name) did not pass \(value) within \(limit)")
    }

    /// Every reading the server stored for the device, one entry per stored row, in seq order.
    func readings(deviceID: String) async throws -> [WireReading] {
        struct Page: Decodable {
            var readings: [WireReading]
            var nextAfterSequence: Int64?
            enum CodingKeys: String, CodingKey {
                case readings
                case nextAfterSequence = "next_after_seq"
            }
        }
        var result: [WireReading] = []
        var after: Int64 = 0
        while true {
            let (status, data) = try await request("GET", "/v1/devices/\(deviceID)/readings?after_seq=\(after)&limit=1000")
            guard status == 200 else { throw AgentCrashFailure("GET readings: \(status) \(String(decoding: data, as: UTF8.self))") }
            let page = try WireCodec.decode(Page.self, from: data)
            result += page.readings
            guard let next = page.nextAfterSequence else { return result }
            after = next
        }
    }
}

struct AgentCrashFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
