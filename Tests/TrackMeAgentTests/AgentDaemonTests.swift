import Foundation
import Prometheus
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// A pipeline stand-in: runs until graceful shutdown, then runs `onShutdown` (where the test
/// looks at the rest of the daemon while this service is stopping).
struct RecordingService: Service {
    let events: EventLog
    let onShutdown: @Sendable () async -> Void

    func run() async throws {
        events.append("pipeline started")
        try? await gracefulShutdown()
        events.append("pipeline stopping")
        await onShutdown()
        events.append("pipeline stopped")
    }
}

/// A service that ignores graceful shutdown and ends only when cancelled.
struct StubbornService: Service {
    let events: EventLog

    func run() async throws {
        do {
            try await Task.sleep(for: .seconds(3600))
        } catch {
            events.append("stubborn cancelled")
            throw error
        }
    }
}

struct FailingService: Service {
    struct Failure: Error {}
    func run() async throws { throw Failure() }
}

final class EventLog: Sendable {
    private let events = Mutex<[String]>([])
    func append(_ event: String) { events.withLock { $0.append(event) } }
    var all: [String] { events.withLock { $0 } }
}

@Suite("Agent daemon lifecycle")
struct AgentDaemonTests {
    static func configuration(in directory: borrowing TemporaryDirectory, grace: Double = 10) -> AgentConfiguration {
        AgentConfiguration(
            person: PersonProfile(name: "Ada", age: 67),
            server: ServerConfiguration(url: "http://127.0.0.1:9", deviceID: "pi-0042"),
            store: StoreConfiguration(path: directory.file("agent.sqlite")),
            status: StatusConfiguration(socketPath: directory.file("run/agent.sock")),
            metrics: MetricsConfiguration(enabled: true, port: 0),
            shutdown: ShutdownConfiguration(graceSeconds: grace)
        )
    }

    @Test("start, answer status and metrics, then shut down in reverse order with systemd told first")
    func gracefulShutdownInReverseOrder() async throws {
        let directory = try TemporaryDirectory()
        let configuration = Self.configuration(in: directory)
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        let events = EventLog()
        let socketPath = configuration.status.socketPath
        let pipeline = RecordingService(events: events) {
            // While the pipeline stops, systemd has already heard STOPPING=1 and the control
            // socket still answers.
            let stopping = try? await systemd.receive()
            events.append("systemd: \(stopping ?? "nothing")")
            let status = try? await ControlClient.send(.status, socketPath: socketPath, timeout: controlAnswerTime)
            events.append("status during shutdown: \(status?.ok == true ? "ok" : "failed")")
        }
        try await testGracefulShutdown { trigger in
            let daemon = try AgentDaemon(
                configuration: configuration,
                services: [pipeline],
                control: FakeControl(),
                logger: quietLogger,
                metricsRegistry: PrometheusCollectorRegistry(),
                environment: ["NOTIFY_SOCKET": systemd.name],
                gracefulShutdownSignals: []
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await daemon.run() }
                #expect(try await systemd.receive().hasPrefix("READY=1\nSTATUS=monitoring pi-0042\n"))
                let status = try await ControlClient.send(.status, socketPath: socketPath, timeout: controlAnswerTime)
                #expect(status.status?.deviceID == "pi-0042")
                let port = try #require(daemon.metricsEndpoint?.port)
                let metrics = try await MetricsEndpointTests.get("GET /metrics HTTP/1.1", port: port)
                #expect(metrics.contains("trackme_control_requests_total{command=\"status\",result=\"ok\"} 1"))
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(
            events.all == [
                "pipeline started", "pipeline stopping", "systemd: STOPPING=1\nSTATUS=stopping", "status during shutdown: ok",
                "pipeline stopped",
            ]
        )
        #expect(!FileManager.default.fileExists(atPath: socketPath))
    }

    @Test("a service that ignores shutdown is cancelled after the grace window")
    func boundedGrace() async throws {
        let directory = try TemporaryDirectory()
        let events = EventLog()
        try await testGracefulShutdown { trigger in
            let daemon = try AgentDaemon(
                configuration: Self.configuration(in: directory, grace: 0.2),
                services: [StubbornService(events: events)],
                control: FakeControl(),
                logger: quietLogger,
                metricsRegistry: PrometheusCollectorRegistry(),
                environment: [:],
                gracefulShutdownSignals: []
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try? await daemon.run() }
                _ = try await ControlClient.send(.status, socketPath: daemon.configuration.status.socketPath, timeout: controlAnswerTime)
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(events.all == ["stubborn cancelled"])
    }

    @Test("a failing pipeline service stops the daemon with its error, and the socket is cleaned up")
    func failingService() async throws {
        let directory = try TemporaryDirectory()
        let configuration = Self.configuration(in: directory)
        let daemon = try AgentDaemon(
            configuration: configuration,
            services: [FailingService()],
            control: FakeControl(),
            logger: quietLogger,
            metricsRegistry: PrometheusCollectorRegistry(),
            environment: [:],
            gracefulShutdownSignals: []
        )
        await #expect(throws: FailingService.Failure.self) { try await daemon.run() }
        #expect(!FileManager.default.fileExists(atPath: configuration.status.socketPath))
    }

    @Test("a metrics port in use fails the start, before any service runs")
    func portInUse() throws {
        let directory = try TemporaryDirectory()
        let taken = try Socket.listenTCPLoopback(port: 0)
        var configuration = Self.configuration(in: directory)
        configuration.metrics.port = Int(try taken.localPort())
        #expect(throws: SocketError.self) {
            try AgentDaemon(
                configuration: configuration,
                services: [],
                control: FakeControl(),
                logger: quietLogger,
                metricsRegistry: PrometheusCollectorRegistry(),
                environment: [:],
                gracefulShutdownSignals: []
            )
        }
        #expect(!FileManager.default.fileExists(atPath: configuration.status.socketPath))
    }
}
