import Foundation
import Prometheus
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeAgent

/// A stand-in for systemd's notification socket: a real Unix datagram socket.
struct FakeNotifySocket: Sendable {
    let socket: Socket
    /// What goes in `NOTIFY_SOCKET`.
    let name: String

    init(path: String) throws {
        socket = try Socket.bindUnixDatagram(address: Array(path.utf8), label: path)
        name = path
        try socket.setTimeouts(milliseconds: 60_000)
    }

    init(abstract: String) throws {
        socket = try Socket.bindUnixDatagram(address: [0] + Array(abstract.utf8), label: "@" + abstract)
        name = "@" + abstract
        try socket.setTimeouts(milliseconds: 60_000)
    }

    func receive() async throws -> String {
        let socket = self.socket
        let bytes = try await BlockingThreads.shared.run { () throws(SocketError) in try socket.read(maximum: 4096) }
        return String(decoding: bytes, as: UTF8.self)
    }
}

@Suite("systemd notification")
struct SystemdNotifierTests {
    @Test("READY=1 and STATUS reach a socket given by path")
    func pathSocket() async throws {
        let directory = try TemporaryDirectory()
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        let notifier = try #require(try SystemdNotifier(environment: ["NOTIFY_SOCKET": systemd.name]))
        try notifier.send(["READY=1", "STATUS=monitoring pi-0042"])
        #expect(try await systemd.receive() == "READY=1\nSTATUS=monitoring pi-0042")
    }

    @Test("an @name is the abstract namespace")
    func abstractSocket() async throws {
        let name = "trackme-test-" + UUID().uuidString
        let systemd = try FakeNotifySocket(abstract: name)
        let notifier = try SystemdNotifier(socketName: "@" + name)
        try notifier.send(["WATCHDOG=1"])
        #expect(try await systemd.receive() == "WATCHDOG=1")
    }

    @Test("no NOTIFY_SOCKET: no notifier; an unknown address family is an error")
    func absentOrUnsupported() throws {
        #expect(try SystemdNotifier(environment: [:]) == nil)
        let error = try #require(throws: SocketError.self) { try SystemdNotifier(socketName: "vsock:2:1234") }
        #expect(error.code == .unsupportedAddress)
    }

    @Test("a socket nobody listens on is reported, not ignored")
    func nobodyListening() throws {
        let directory = try TemporaryDirectory()
        let notifier = try SystemdNotifier(socketName: directory.file("gone"))
        #expect(throws: SocketError.self) { try notifier.send(["READY=1"]) }
    }

    @Test(
        "WATCHDOG_USEC, honoured only for this process",
        arguments: [
            (["WATCHDOG_USEC": "30000000"], Duration.seconds(30) as Duration?),
            (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"], .seconds(30)),
            (["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"], nil),
            (["WATCHDOG_USEC": "0"], nil),
            (["WATCHDOG_USEC": "soon"], nil),
            ([:], nil),
        ]
    )
    func watchdogInterval(environment: [String: String], expected: Duration?) {
        #expect(SystemdNotifier.watchdogInterval(environment: environment, processID: 4242) == expected)
    }

    @Test("the service says READY=1, pings at half the watchdog interval, and STOPPING=1 on shutdown")
    func serviceLifecycle() async throws {
        let directory = try TemporaryDirectory()
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        let clock = VirtualClock()
        let registry = PrometheusCollectorRegistry()
        let service = SystemdNotifierService(
            notifier: try SystemdNotifier(socketName: systemd.name),
            watchdogInterval: .seconds(20),
            clock: clock,
            readyStatus: "monitoring",
            logger: quietLogger,
            metricsFactory: PrometheusMetricsFactory(registry: registry)
        )
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                #expect(try await systemd.receive() == "READY=1\nSTATUS=monitoring\nMAINPID=\(getpid())")
                for _ in 0..<2 {
                    await clock.waitForSleepers(1)
                    clock.advance(by: .seconds(9))
                    #expect(clock.sleeperCount == 1, "no ping before half the interval")
                    clock.advance(by: .seconds(1))
                    #expect(try await systemd.receive() == "WATCHDOG=1")
                }
                await clock.waitForSleepers(1)
                trigger.triggerGracefulShutdown()
                #expect(try await systemd.receive() == "STOPPING=1\nSTATUS=stopping")
                try await group.waitForAll()
            }
        }
        #expect(registry.emitToString().contains("trackme_systemd_watchdog_pings_total 2"))
    }

    @Test("without NOTIFY_SOCKET the service still awaits readiness, then runs until shutdown")
    func serviceWithoutSystemd() async throws {
        let events = EventLog()
        let (opened, signal) = AsyncStream<Void>.makeStream()
        let service = SystemdNotifierService(
            notifier: nil,
            watchdogInterval: nil,
            logger: quietLogger,
            readiness: {
                for await _ in opened { break }
                events.append("ready")
            }
        )
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await service.run()
                    events.append("returned")
                }
                signal.yield()
                try await eventually("the readiness condition awaited", within: .seconds(60)) { events.all.first == "ready" }
                events.append("shutdown")
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        // Returning before shutdown would end the whole service group with it.
        #expect(events.all == ["ready", "shutdown", "returned"])
    }

    @Test("without NOTIFY_SOCKET a failed readiness condition still fails the service")
    func readinessFailsWithoutSystemd() async throws {
        struct StoreDidNotOpen: Error {}
        let service = SystemdNotifierService(
            notifier: nil,
            watchdogInterval: nil,
            logger: quietLogger,
            readiness: { throw StoreDidNotOpen() }
        )
        await #expect(throws: StoreDidNotOpen.self) {
            try await testGracefulShutdown { _ in try await service.run() }
        }
    }
}

@Suite("systemd readiness")
struct SystemdReadinessTests {
    @Test("READY=1 waits for the readiness condition")
    func readinessGate() async throws {
        let directory = try TemporaryDirectory()
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        let (opened, signal) = AsyncStream<Void>.makeStream()
        let events = EventLog()
        let service = SystemdNotifierService(
            notifier: try SystemdNotifier(socketName: systemd.name),
            watchdogInterval: nil,
            logger: quietLogger,
            readiness: {
                for await _ in opened { break }
                events.append("store open")
            }
        )
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await service.run() }
                group.addTask {
                    let ready = try await systemd.receive()
                    events.append(String(ready.prefix(7)))
                }
                signal.yield()
                try await group.next()
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
        #expect(events.all == ["store open", "READY=1"])
    }
}
