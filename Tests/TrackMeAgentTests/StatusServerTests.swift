import Foundation
import Prometheus
import ServiceLifecycle
import ServiceLifecycleTestKit
import SystemPackage
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeAgent

@Suite("Status and control socket")
struct StatusServerTests {
    /// Runs a status server over a real Unix socket in a temp dir for the duration of `body`,
    /// then shuts it down gracefully and checks it cleaned up.
    static func withServer(
        control: FakeControl,
        registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry(),
        _ body: @Sendable (String) async throws -> Void
    ) async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("run/agent.sock")
        try await testGracefulShutdown { trigger in
            let server = try StatusServer.bind(
                socketPath: path,
                control: control,
                logger: quietLogger,
                metricsFactory: PrometheusMetricsFactory(registry: registry)
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                try await body(path)
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed on shutdown")
    }

    @Test("status returns the control's snapshot over the socket")
    func status() async throws {
        let control = FakeControl()
        try await Self.withServer(control: control) { path in
            let response = try await ControlClient.send(.status, socketPath: path, timeout: controlAnswerTime)
            #expect(response.ok)
            #expect(response.status == FakeControl.sampleStatus)
        }
        #expect(await control.calls == ["status"])
    }

    @Test("sos, safe with its reason, pause and resume reach the control")
    func commands() async throws {
        let control = FakeControl()
        try await Self.withServer(control: control) { path in
            let sos = try await ControlClient.send(.sos, socketPath: path, timeout: controlAnswerTime)
            #expect(sos.alert == AlertStatus(id: "A-1", kind: .manual, state: .pending, countdownRemainingSeconds: 10))
            let during = try await ControlClient.send(.status, socketPath: path, timeout: controlAnswerTime)
            #expect(during.status?.alert?.state == .pending)
            let safe = try await ControlClient.send(.safe(.falseAlarm), socketPath: path, timeout: controlAnswerTime)
            #expect(safe.alert?.state == .cancelled)
            #expect(safe.alert?.cancelReason == .falseAlarm)
            let paused = try await ControlClient.send(.pause, socketPath: path, timeout: controlAnswerTime)
            #expect(paused.monitoring == MonitoringState(paused: true))
            #expect(try await ControlClient.send(.status, socketPath: path, timeout: controlAnswerTime).status?.monitoringPaused == true)
            let resumed = try await ControlClient.send(.resume, socketPath: path, timeout: controlAnswerTime)
            #expect(resumed.monitoring == MonitoringState(paused: false))
        }
        #expect(await control.calls == ["sos", "status", "safe:false_alarm", "pause", "status", "resume"])
    }

    @Test("a refusal from the control keeps its code")
    func refusal() async throws {
        try await Self.withServer(control: FakeControl()) { path in
            let response = try await ControlClient.send(.safe(.iAmSafe), socketPath: path, timeout: controlAnswerTime)
            #expect(!response.ok)
            #expect(response.error?.code == .noOpenAlert)
        }
    }

    @Test(
        "malformed requests get bad_request and the connection stays usable",
        arguments: ["hello", "{\"command\":\"reboot\"}", "{\"command\":\"safe\"}", "{\"command\":\"safe\",\"reason\":\"bored\"}"]
    )
    func badRequest(line: String) async throws {
        let registry = PrometheusCollectorRegistry()
        try await Self.withServer(control: FakeControl(), registry: registry) { path in
            let (first, second) = try await BlockingThreads.shared.run { () throws -> ([UInt8], [UInt8]) in
                let socket = try Socket.connectUnixStream(path: path)
                defer { socket.close() }
                try socket.setTimeouts(milliseconds: 30_000)
                try socket.writeAll(Array((line + "\n" + "{\"command\":\"status\"}\n").utf8))
                let reader = LineReader(socket: socket)
                return (try reader.readLine() ?? [], try reader.readLine() ?? [])
            }
            let refused = try ControlCodec.decode(ControlResponse.self, from: first)
            #expect(!refused.ok)
            #expect(refused.error?.code == .badRequest)
            let answered = try ControlCodec.decode(ControlResponse.self, from: second)
            #expect(answered.ok)
            #expect(answered.status?.deviceID == "pi-0042")
        }
        #expect(registry.emitToString().contains("trackme_control_requests_total{command=\"status\",result=\"ok\"} 1"))
    }

    @Test("many clients at once are all answered")
    func concurrentClients() async throws {
        try await Self.withServer(control: FakeControl()) { path in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await ControlClient.send(.status, socketPath: path, timeout: controlAnswerTime).ok }
                }
                var answered = 0
                for try await ok in group where ok { answered += 1 }
                #expect(answered == 20)
            }
        }
    }

    @Test("a stale socket from a previous run is replaced; a regular file is never deleted")
    func stalePath() async throws {
        let directory = try TemporaryDirectory()
        let stale = directory.file("stale.sock")
        try Socket.listenUnixStream(path: stale).close()
        #expect(FileManager.default.fileExists(atPath: stale))
        let server = try StatusServer.bind(socketPath: stale, control: FakeControl(), logger: quietLogger)
        #expect(server.socketPath == stale)

        let file = directory.file("agent.sock")
        try "precious".write(toFile: file, atomically: true, encoding: .utf8)
        let error = try #require(throws: SocketError.self) {
            try StatusServer.bind(socketPath: file, control: FakeControl(), logger: quietLogger)
        }
        #expect(error.code == .pathOccupied)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "precious")
    }

    @Test("a second agent does not steal a live socket")
    func liveSocket() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("agent.sock")
        let first = try StatusServer.bind(socketPath: path, control: FakeControl(), logger: quietLogger)
        let error = try #require(throws: SocketError.self) {
            try StatusServer.bind(socketPath: path, control: FakeControl(), logger: quietLogger)
        }
        #expect(error.code == .inUse)
        #expect(first.socketPath == path)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test("the client reports an agent that is not running")
    func notRunning() async throws {
        let directory = try TemporaryDirectory()
        let error = try await #require(throws: SocketError.self) {
            try await ControlClient.send(.status, socketPath: directory.file("none.sock"))
        }
        #expect(error.code == .systemCall)
        #expect(error.errno == .noSuchFileOrDirectory)
    }
}

@Suite("Status wire format and table")
struct AgentStatusFormatTests {
    @Test("the status JSON uses snake_case keys and round-trips")
    func json() throws {
        var status = FakeControl.sampleStatus
        status.alert = AlertStatus(id: "A-9", kind: .heartRateHigh, state: .raised, reason: "sudden_onset")
        let line = try ControlCodec.encodeLine(ControlResponse(ok: true, status: status))
        let text = String(decoding: line, as: UTF8.self)
        #expect(text.hasSuffix("}\n"))
        #expect(!text.dropLast().contains("\n"))
        for key in [
            "\"device_id\"", "\"last_hr\"", "\"age_ms\"", "\"fix_age_ms\"", "\"battery_pct\"", "\"budget_bytes\"",
            "\"last_success_age_ms\"", "\"monitoring_paused\"", "\"alert_id\"", "\"heart_rate_high\"", "\"reason\":\"sudden_onset\"",
        ] {
            #expect(text.contains(key), "missing \(key)")
        }
        #expect(try ControlCodec.decode(ControlResponse.self, from: Array(line.dropLast())).status == status)
    }

    @Test("requests are one JSON object per line")
    func requestFormat() throws {
        let line = try ControlCodec.encodeLine(ControlRequest.safe(.iAmSafe))
        #expect(String(decoding: line, as: UTF8.self) == "{\"command\":\"safe\",\"reason\":\"i_am_safe\"}\n")
    }

    @Test("the human table shows every part with ages")
    func table() throws {
        var status = FakeControl.sampleStatus
        status.alert = AlertStatus(id: "A-9", kind: .manual, state: .pending, countdownRemainingSeconds: 7.2)
        let table = StatusReport.render(status)
        let lines = table.split(separator: "\n").map(String.init)
        try #require(lines.count == 8, "\(table)")
        #expect(lines[0].hasPrefix("agent") && lines[0].contains("device pi-0042, up 1 h 2 min"))
        #expect(lines[1].contains("connected") && lines[1].contains("A0:9E:1A:12:34:56, battery 80%"))
        #expect(lines[2].contains("72 bpm") && lines[2].contains("contact detected, 850 ms ago"))
        #expect(lines[4].contains("3D fix") && lines[4].contains("45.478, 9.2275") && lines[4].contains("1 s ago"))
        #expect(lines[5].contains("42 pending") && lines[5].contains("81920 bytes (0% of budget)"))
        #expect(lines[6].contains("last success 4 s ago"))
        #expect(lines[7].contains("PENDING") && lines[7].contains("manual A-9, 8 s to cancel"))
    }
}
