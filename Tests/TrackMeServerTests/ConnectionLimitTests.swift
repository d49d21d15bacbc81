import Foundation
import MetricsTestKit
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

/// Slow and idle connections are closed on deadlines, and one address cannot hold many. The
/// timeouts are set short (300 ms) so each test waits for the server's close, never for a fixed
/// time; the attacker's pace (a byte every 50 ms) is what the server must not be fooled by.
@Suite("Connection limits")
struct ConnectionLimitTests {
    static let short: ServerLimits = {
        var limits = ServerLimits.withoutRateLimits
        limits.idleTimeout = .milliseconds(300)
        limits.bodyTimeout = .milliseconds(300)
        return limits
    }()

    /// Trickles `text` a byte every 50 ms until the server closes; how long that took, or nil
    /// if the whole text went through (or `bound` passed) with the connection still open.
    static func trickle(_ socket: RawSocket, _ text: String, bound: Duration) -> Duration? {
        let start = ContinuousClock.now
        for character in text {
            if socket.isClosedByPeer || !socket.send(String(character)) { return ContinuousClock.now - start }
            if ContinuousClock.now - start > bound { return nil }
            Thread.sleep(forTimeInterval: 0.05)  // the attacker's pace, not a wait for the server
        }
        return socket.waitForClose(timeout: .milliseconds(100)) ? ContinuousClock.now - start : nil
    }

    @Test("slowloris: a header sent one byte at a time is cut off at the idle deadline, not kept open")
    func slowHeader() async throws {
        try await TestServer.with(.sqlite, limits: Self.short) { s in
            let port = s.port
            let header = "GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + String(repeating: "a", count: 200) + "\r\n\r\n"
            let closedAfter = try await BlockingThreads.shared.run { Self.trickle(try RawSocket(port: port), header, bound: .seconds(5)) }
            let after = try #require(closedAfter, "a 10 s header trickle was still open after 5 s")
            #expect(after < .seconds(2))
        }
    }

    @Test("slow body: a body trickled after its head is cut off at the body deadline")
    func slowBody() async throws {
        try await TestServer.with(.sqlite, limits: Self.short) { s in
            let token = try await s.enrol("pi-0001")
            let port = s.port
            let closedAfter = try await BlockingThreads.shared.run { () -> Duration? in
                let socket = try RawSocket(port: port)
                socket.send("POST /v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: 400\r\n\r\n")
                return Self.trickle(socket, String(repeating: " ", count: 200), bound: .seconds(5))
            }
            let after = try #require(closedAfter, "a 10 s body trickle was still open after 5 s")
            #expect(after < .seconds(2))
        }
    }

    @Test("an idle connection, new or kept alive after a response, is closed; an open feed stream is not")
    func idle() async throws {
        try await TestServer.with(.sqlite, limits: Self.short) { s in
            let token = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            let port = s.port
            let (fresh, keptAlive) = try await BlockingThreads.shared.run { () -> (Bool, Bool) in
                let fresh = try RawSocket(port: port)
                let used = try RawSocket(port: port)
                used.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                guard used.readResponse(timeout: .seconds(60))?.status == 200 else { return (false, false) }
                return (fresh.waitForClose(timeout: .seconds(60)), used.waitForClose(timeout: .seconds(60)))
            }
            #expect(fresh, "a connection that never sent a byte stayed open")
            #expect(keptAlive, "a kept-alive connection with no next request stayed open")
            // The feed stream outlived the idle deadline: an alert raised now still reaches it.
            // (A new client: the shared one's pooled connection was closed as idle, as it should be.)
            let newClient = HTTPTestClient(port: s.port)
            defer { newClient.close() }
            let raised = Sample.alert("pi-0001", id: "after-idle")
            #expect(try await newClient.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(raised)).status == 200)
            let events = try await feed.nextEvents(1)
            #expect(events.map(\.event) == ["alert"])
        }
    }

    @Test("one address gets at most its cap of connections; another address is still served at once")
    func perAddressCap() async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.maxConnectionsPerAddress = 8
        let metrics = TestMetrics()
        let counted: (inout ServerConfiguration) -> Void = { $0.metricsFactory = metrics }
        try await TestServer.with(.sqlite, limits: limits, configure: counted) { s in
            let port = s.port
            let outcome = try await BlockingThreads.shared.run { () -> (refused: Int, otherStatus: Int?, ownStatus: Int?) in
                let sockets = try (0..<20).map { _ in try RawSocket(port: port, source: "127.0.0.1") }
                let refused = RawSocket.waitForCloses(sockets, count: 12, timeout: .seconds(10))
                let other = try RawSocket(port: port, source: "127.0.0.2")
                other.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                let otherStatus = other.readResponse(timeout: .seconds(60))?.status
                // The admitted ones still work.
                let own = sockets.first { !$0.isClosedByPeer }
                own?.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                return (refused, otherStatus, own?.readResponse(timeout: .seconds(60))?.status)
            }
            #expect(outcome.refused == 12)
            #expect(outcome.otherStatus == 200)
            #expect(outcome.ownStatus == 200)
            #expect(try metrics.expectCounter("trackme_server_connections_refused_total").totalValue == 12)
        }
    }

    @Test("ulimit -n 128: 150 idle sockets from one address leave /health and alert intake working for everyone else")
    func descriptorExhaustion() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = Pipe()
        let process = try Self.serverWithFileLimit128(directory: directory, adminToken: TestServer.adminToken, log: log)
        defer {
            process.signal(SIGTERM)
            process.waitUntilExit()
        }
        let port = try await ServerChildLog.listeningPort(reading: log.fileHandleForReading).port
        let client = HTTPTestClient(port: port)
        defer { client.close() }
        let enrol = try await client.send(
            "POST",
            "/v1/devices",
            token: TestServer.adminToken,
            json: ["device_id": "pi-0001", "person": ["name": "Ada", "age": 70]]
        )
        let token = try #require(enrol.object["token"] as? String)
        let alert = try WireCodec.encode(Sample.alert("pi-0001", id: "real-alert"))
        let alertRequest =
            "POST /v1/alerts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(alert.count)\r\n\r\n"
            + String(decoding: alert, as: UTF8.self)

        let outcome = try await BlockingThreads.shared.run { () -> (health: Int?, alert: Int?, opened: Int) in
            var attackers: [RawSocket] = []
            for _ in 0..<150 {
                // Past the cap the server closes at once; the kernel may still complete a
                // connect, so every one of them is attempted.
                if let socket = try? RawSocket(port: port, source: "127.0.0.1") { attackers.append(socket) }
            }
            let health = try RawSocket(port: port, source: "127.0.0.3")
            health.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            let healthStatus = health.readResponse(timeout: .seconds(60))?.status
            let intake = try RawSocket(port: port, source: "127.0.0.4")
            intake.send(alertRequest)
            return (healthStatus, intake.readResponse(timeout: .seconds(60))?.status, attackers.count)
        }
        #expect(outcome.opened == 150)
        #expect(outcome.health == 200, "GET /health timed out behind 150 idle sockets")
        #expect(outcome.alert == 200, "alert intake timed out behind 150 idle sockets")
    }

    @Test("ulimit -n 128: the caps are lowered at start with a warning; idle sockets from five addresses leave a sixth one's /health working")
    func fileLimitAtStart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-fd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = Pipe()
        let process = try Self.serverWithFileLimit128(directory: directory, adminToken: nil, log: log)
        defer {
            process.signal(SIGTERM)
            process.waitUntilExit()
        }
        let (port, text) = try await ServerChildLog.listeningPort(reading: log.fileHandleForReading)
        #expect(text.contains("connection caps lowered to fit the open-file limit"), "\(text)")
        #expect(text.contains("max connections 1024 -> 80"), "\(text)")
        #expect(text.contains("max connections per address 32 -> 10"), "\(text)")
        let health = try await BlockingThreads.shared.run { () -> Int? in
            var idle: [RawSocket] = []
            for address in 1...5 {
                for _ in 0..<40 {
                    if let socket = try? RawSocket(port: port, source: "127.0.0.\(address)") { idle.append(socket) }
                }
            }
            let health = try RawSocket(port: port, source: "127.0.0.6")
            health.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            return health.readResponse(timeout: .seconds(60))?.status
        }
        #expect(health == 200, "GET /health from a sixth address starved behind idle sockets from five")
    }

    /// `trackme-server serve` on SQLite in `directory` under `ulimit -n 128`, its log to `log`.
    /// Timeouts far longer than the tests: only the per-address cap can save the server there.
    static func serverWithFileLimit128(directory: URL, adminToken: String?, log: Pipe) throws -> SpawnedProcess {
        var environment = ["LOG_LEVEL": "info", "PATH": "/usr/bin:/bin"]
        environment["TRACKME_ADMIN_TOKEN"] = adminToken
        return try SpawnedProcess.launch(
            "/bin/sh",
            arguments: [
                "-c",
                "ulimit -n 128 && exec \"$0\" serve --plain-http --port 0 --db sqlite:\(directory.path)/server.sqlite --idle-timeout-seconds 600 --body-timeout-seconds 600",
                try serverBinaryURL().path,
            ],
            environment: environment,
            standardError: .pipe(log)
        )
    }
}

/// `trackme-server`, built next to the test bundle (the test target depends on it).
func serverBinaryURL() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("trackme-server")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory.deleteLastPathComponent()
    }
    throw RawSocket.Failure(description: "trackme-server not found next to the test binary: run `swift build --build-tests` first")
}
