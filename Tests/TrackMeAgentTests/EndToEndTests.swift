import EdgeStore
import Foundation
import GPSDTestSupport
import ServerTestSupport
import Testing
import TrackMeAgent
import TrackMeCore
import TrackMeServer
import TrackMeSystem

/// The whole agent as a child process: `trackme-agent run` with the simulated strap (socket-pair
/// transport replaying a real trace), a real gpsd fed a recorded receiver log, and the real
/// server in this process on loopback with a SQLite file.
@Suite("trackme-agent end to end", .serialized, .timeLimit(.minutes(15)))
struct EndToEndTests {
    static let deviceID = "pi-e2e"
    /// A safety net for a loaded 2-core machine; the test ends as soon as the status shows it.
    static let overallLimit: Duration = .seconds(180)

    final class Rig {
        let directory: TemporaryDirectory
        let running: InProcessServer
        var server: TrackMeServer { running.server }
        let gpsd: GPSDFeed
        let config: String
        let socket: String
        let storePath: String
        let metricsPort: Int

        /// `trace`: the heart-rate trace the simulated strap replays (default: normal sinus rhythm).
        init(trace: String = Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv")) async throws {
            self.directory = try TemporaryDirectory()
            let directory = self.directory.path + "/"
            // Real time on the server too: the agent beside it is a real process.
            running = try await InProcessServer.start {
                $0.adminToken = "e2e-admin"
                $0.clock = ContinuousClock()
            }
            let server = running.server
            let port = running.port
            let credentials = try await server.enrolDevice(deviceID: EndToEndTests.deviceID, person: PersonProfile(name: "Ada", age: 67))
            try credentials.token.write(toFile: directory + ("token"), atomically: true, encoding: .utf8)
            gpsd = try await GPSDFeed.start(log: URL(fileURLWithPath: Repository.path("simulations/traces/gpsd/neo-m8n.log")))
            metricsPort = try GPSDProcess.freeLoopbackPort()
            config = directory + ("agent.yaml")
            socket = directory + ("agent.sock")
            storePath = directory + ("data/agent.sqlite")
            try """
            person: {name: Ada, age: 67}
            server: {url: "http://127.0.0.1:\(port)", device_id: \(EndToEndTests.deviceID), token_file: token}
            strap:
              transport: socketpair
              trace: \(trace)
              pace: 10
            gpsd: {host: 127.0.0.1, port: \(gpsd.port)}
            store: {path: data/agent.sqlite}
            sos: {countdown_seconds: 0}
            status: {socket: agent.sock}
            metrics: {port: \(metricsPort)}
            shutdown: {grace_seconds: 20}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        }

        /// The agent's stderr goes to a file (a pipe nobody drains could block its logging).
        func startAgent(log name: String, arguments extraArguments: [String] = []) throws -> (SpawnedProcess, String) {
            var environment = ProcessInfo.processInfo.environment
            for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM"] { environment.removeValue(forKey: key) }
            let log = directory.file(name)
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let process = try SpawnedProcess.launch(
                try ExecutableTests.agentBinary(),
                arguments: ["run", "--config", config] + extraArguments,
                environment: environment,
                standardError: .file(log)
            )
            return (process, log)
        }

        func status() async throws -> AgentStatus? {
            let result = try await runProgram(try ExecutableTests.agentBinary(), ["status", "--json", "--socket", socket])
            guard result.status == 0 else { return nil }
            return try JSONDecoder().decode(AgentStatus.self, from: Data(result.output.utf8))
        }

        /// Polls `status --json` until `done` holds, the agent exits, or the overall limit passes
        /// (then the last status, for the caller's message).
        func poll(_ process: SpawnedProcess, until done: (AgentStatus) -> Bool) async throws -> AgentStatus? {
            var last: AgentStatus?
            var met = false
            do {
                try await eventually("the agent's status holds", within: EndToEndTests.overallLimit, every: .milliseconds(300)) {
                    guard process.isRunning else { return true }
                    if let status = try await status() {
                        last = status
                        met = done(status)
                    }
                    return met
                }
            } catch is ConditionTimeout {
                // The caller's #require names what never came, with the last status.
            }
            return last
        }

        /// Polls the in-process server (as `poll` does the agent) until it has an update of the
        /// alert numbered above `sequence` and of `type`.
        func alertUpdate(of alertID: String, above sequence: Int, type: AlertUpdate.UpdateType) async throws -> AlertUpdate? {
            var found: AlertUpdate?
            do {
                try await eventually("an update of \(alertID) above \(sequence)", within: EndToEndTests.overallLimit, every: .milliseconds(300)) {
                    found = try await server.alertUpdates(alertID: alertID).first { $0.updateSequence > sequence && $0.type == type }
                    return found != nil
                }
            } catch is ConditionTimeout {}
            return found
        }

        func metric(_ name: String) throws -> Double? {
            let text = try String(contentsOf: URL(string: "http://127.0.0.1:\(metricsPort)/metrics").unwrap(), encoding: .utf8)
            for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
                return line.split(separator: " ").last.flatMap { Double($0) }
            }
            return nil
        }

        func terminate(_ process: SpawnedProcess, log: String) async -> (termination: SpawnedProcess.Termination, stderr: String) {
            process.signal(SIGTERM)
            let termination = await process.exit()
            let stderr = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return (termination, stderr)
        }

        deinit {
            let running = self.running
            Task { await running.stop() }
            gpsd.stop()
        }
    }

    static func everyPartWorking(_ s: AgentStatus) -> Bool {
        s.strap.link == .connected && (s.strap.lastHeartRate?.ageMilliseconds ?? .max) < 5000 && s.gpsd.lastFix?.hasPosition == true
            && s.store.bytes > 0 && s.sync.lastSuccessAgeMilliseconds != nil
    }

    @Test("run: status shows every part working; SIGTERM commits everything; an open alert survives the restart")
    func endToEnd() async throws {
        let rig = try await Rig()
        let (agent, log) = try rig.startAgent(log: "agent-1.log")
        defer { agent.killAndWait() }

        let working = try #require(try await rig.poll(agent, until: Self.everyPartWorking), "the agent never answered status")
        #expect(Self.everyPartWorking(working), "last status: \(working)")
        #expect(working.deviceID == Self.deviceID)
        #expect(working.strap.address == "C0:FF:EE:00:00:0D")
        #expect(working.strap.batteryPercent == 87)
        #expect(working.gpsd.connection == .connected)
        #expect(working.store.budgetBytes == StoreConfiguration.defaultDiskBudgetBytes)

        // A manual alert (countdown 0 in this config): raised, and the server has it.
        let sos = try await runProgram(try ExecutableTests.agentBinary(), ["sos", "--socket", rig.socket])
        #expect(sos.status == 0, "\(sos.output)")
        let raised = try #require(
            try await rig.poll(agent) { s in s.alert.map { $0.state == .delivered || $0.state == .acknowledged } ?? false }
        )
        let alert = try #require(raised.alert)
        #expect(alert.kind == .manual)
        #expect(alert.state == .delivered, "the dispatch lane delivered it and the engine heard: \(raised)")

        // Readings decoded so far; every one of them must be in the store after SIGTERM.
        let decoded = try #require(try rig.metric(AgentMetricNames.heartRateReadings))
        #expect(decoded > 0)
        let stopped = await rig.terminate(agent, log: log)
        #expect(stopped.termination == .exited(0), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("store closed"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("readings not committed"))

        // Nothing acknowledged is lost: every heart rate decoded is in the store, sequence numbers
        // have no gaps, and every reading the store marked synced is at the server.
        let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: rig.storePath), logger: quietLogger)
        let all = try store.allReadings()
        let heartRates = all.filter { if case .heartRate = $0.reading.payload { true } else { false } }
        #expect(Double(heartRates.count) >= decoded, "decoded \(decoded), stored \(heartRates.count)")
        let sequences = all.map(\.reading.sequence).sorted()
        #expect(sequences == Array(1...Int64(sequences.count)), "no gaps in the store's sequence numbers")
        let atServer = Set(try await rig.server.storedSequences(deviceID: Self.deviceID))
        let syncedMissing = all.filter { $0.synced && !atServer.contains($0.reading.sequence) }.count
        #expect(syncedMissing == 0)
        #expect(!atServer.isEmpty)
        let unsynced = all.filter { !$0.synced }.count
        #expect(atServer.count + unsynced >= all.count)
        store.close()

        let before = try await rig.server.alertUpdates(alertID: alert.id).map(\.updateSequence).max() ?? 0

        // Restart: the raised alert is still open, with the same id.
        let (again, againLog) = try rig.startAgent(log: "agent-2.log")
        defer { again.killAndWait() }
        let restarted = try #require(try await rig.poll(again) { $0.alert != nil && $0.strap.link == .connected })
        #expect(restarted.alert?.id == alert.id)
        #expect(restarted.alert?.state.isOpen == true)
        let safe = try await runProgram(try ExecutableTests.agentBinary(), ["safe", "--reason", "false_alarm", "--socket", rig.socket])
        #expect(safe.status == 0, "\(safe.output)")
        // The restarted agent's dispatch lane took the alert over: the server hears of the
        // cancellation, numbered above every update it took before the restart (it ignores a
        // number it already has).
        let heard = try await rig.alertUpdate(of: alert.id, above: before, type: .cancelled)
        if heard == nil {
            let atServer = try await rig.server.alertUpdates(alertID: alert.id).map { "\($0.updateSequence):\($0.type.rawValue)" }
            let agentLog = (try? String(contentsOfFile: againLog, encoding: .utf8)) ?? ""
            Issue.record("server has \(atServer) (before the restart: up to \(before)); restarted agent's log:\n\(agentLog.suffix(6000))")
        }
        let cancelled = try #require(heard, "the server never heard the restored alert was cancelled")
        #expect(cancelled.alert.cancelReason == .falseAlarm)
        #expect(cancelled.alert.state == .cancelled)
        let noAlert = try await runProgram(try ExecutableTests.agentBinary(), ["safe", "--reason", "false_alarm", "--socket", rig.socket])
        #expect(noAlert.status == 1)
        #expect(noAlert.output.contains("no_open_alert"), "\(noAlert.output)")
        let second = await rig.terminate(again, log: againLog)
        #expect(second.termination == .exited(0), "\(second.stderr)")
    }
}

extension Optional {
    func unwrap() throws -> Wrapped {
        guard let self else { throw CocoaError(.fileNoSuchFile) }
        return self
    }
}
