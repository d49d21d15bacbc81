import EdgeSync
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

/// Debian's HAProxy in front of real servers, running the configuration shipped in
/// `hardware/haproxy/trackme.cfg` unchanged (the test sets only its environment): TLS
/// terminated at the proxy for the agent's own transport, the dispatcher feed passed through as
/// it is written, an instance that stops answering taken out, per-client limits at the proxy.
@Suite("Behind HAProxy", .serialized, .timeLimit(.minutes(10)))
struct ReverseProxyTests {
    /// `haproxy -db -f hardware/haproxy/trackme.cfg` with the test's environment.
    final class HAProxy: Sendable {
        let port: Int
        let directory: URL
        let ca: TestCertificateAuthority
        private let process: SpawnedProcess

        static var configuration: String {
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("hardware/haproxy/trackme.cfg").path
        }

        /// Starts the proxy in front of `servers` (ports on 127.0.0.1) and waits until it serves
        /// `/health` over TLS (its own health checks must have found an instance up).
        init(servers: [Int], environment extra: [String: String] = [:]) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-haproxy-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            ca = try await .make("proxy", in: directory)
            let (certificate, key) = try await ca.issue("proxy", names: ["localhost", "127.0.0.1"])
            let pem = directory.appendingPathComponent("proxy-chain-and-key.pem").path
            try (String(contentsOfFile: certificate, encoding: .utf8) + String(contentsOfFile: key, encoding: .utf8))
                .write(toFile: pem, atomically: true, encoding: .utf8)
            port = try LoopbackPort.unused()
            var environment = [
                "PATH": "/usr/sbin:/usr/bin:/bin", "TRACKME_BIND": "127.0.0.1:\(port)", "TRACKME_TLS_PEM": pem,
                // Within the test process's descriptor limit.
                "TRACKME_MAXCONN": "2000",
            ]
            for index in 0..<3 {
                // Fewer instances than lines: the extra lines name the last one again.
                environment["TRACKME_SERVER\(index + 1)"] = "127.0.0.1:\(servers[min(index, servers.count - 1)])"
            }
            environment.merge(extra) { _, new in new }
            let log = directory.appendingPathComponent("haproxy.log")
            process = try SpawnedProcess.launch(
                "/usr/sbin/haproxy",
                arguments: ["-db", "-f", Self.configuration],
                environment: environment,
                standardOutput: .file(log.path),
                standardError: .file(log.path)
            )
            let process = self.process
            try await eventually("haproxy serves /health", within: .seconds(20), every: .milliseconds(100)) {
                if try await health() == 200 { return true }
                guard process.isRunning else {
                    throw RawSocket.Failure(description: "haproxy exited: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
                }
                return false
            }
        }

        func url(_ path: String) -> String { "https://localhost:\(port)\(path)" }

        /// `GET /health` through the proxy, trusting only the test's CA.
        func health() async throws -> Int? {
            try await TestCertificateAuthority.curl(url("/health"), caFile: ca.certificatePath).status
        }

        /// The agent's own transport, trusting only the test's CA.
        func transport() throws -> CurlTransport {
            CurlTransport(baseURL: try #require(URL(string: "https://localhost:\(port)/")), trust: ServerTrust(caFile: ca.certificatePath))
        }

        func stop() {
            process.signal(SIGTERM)
            process.waitUntilExit()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// A dispatcher's feed read by `curl -N` over TLS through the proxy, line by line as it
    /// arrives.
    final class StreamReader: Sendable {
        final class Lines: Sendable {
            let value = Mutex<[String]>([])
        }

        private let process: SpawnedProcess
        private let lines = Lines()

        init(url: String, caFile: String, token: String) throws {
            let pipe = Pipe()
            process = try SpawnedProcess.launch(
                "/usr/bin/curl",
                arguments: ["-sS", "-N", "--cacert", caFile, "-H", "Authorization: Bearer \(token)", "-H", "Accept: text/event-stream", url],
                standardOutput: .pipe(pipe)
            )
            // Read on a thread of its own until curl ends (its end of the pipe closes with it).
            let (lines, reader) = (self.lines, pipe.fileHandleForReading)
            BlockingThreads.shared.start {
                while case let data = reader.availableData, !data.isEmpty {
                    let text = String(decoding: data, as: UTF8.self)
                    lines.value.withLock { $0.append(contentsOf: text.split(separator: "\n").map(String.init)) }
                }
            }
        }

        var received: [String] { lines.value.withLock { $0 } }

        /// Waits (up to `limit`) until a line satisfying `match` has arrived.
        func waitFor(_ limit: Duration, _ match: (String) -> Bool) async throws -> Bool {
            do {
                try await eventually("a line from the stream", within: limit) { received.contains(where: match) }
                return true
            } catch is ConditionTimeout {
                return false
            }
        }

        func stop() {
            process.killAndWait()
        }
    }

    @Test("TLS ends at the proxy: the agent's transport trusting the CA delivers a batch, which the server stores once")
    func agentThroughProxy() async throws {
        try await TestServer.with(.sqlite) { s in
            let proxy = try await HAProxy(servers: [s.port])
            defer { proxy.stop() }
            let token = try await s.enrol("pi-0001")
            let batch = Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.heartRate(seq: 2)])
            let headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json", "Idempotency-Key": batch.idempotencyKey]
            let transport = try proxy.transport()
            let first = try await transport.post(path: "v1/batches", headers: headers, body: Array(try WireCodec.encode(batch)))
            #expect(first.status == 200)
            // The resend a proxy retry or the agent makes is answered from the server's cache.
            let again = try await transport.post(path: "v1/batches", headers: headers, body: Array(try WireCodec.encode(batch)))
            #expect(again.status == 200)
            #expect(try await s.server.storedSequences(deviceID: "pi-0001") == [1, 2])
            // Plain HTTP to the proxy's port is not served.
            #expect(
                try await TestCertificateAuthority.run("/usr/bin/curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(proxy.port)/health"]).status
                    != 0
            )
        }
    }

    @Test("the dispatcher feed passes through the proxy as it is written: an alert posted through it arrives at once")
    func feedNotBuffered() async throws {
        try await TestServer.with(.sqlite) { s in
            let proxy = try await HAProxy(servers: [s.port])
            defer { proxy.stop() }
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let feed = try StreamReader(url: proxy.url("/v1/alerts/stream"), caFile: proxy.ca.certificatePath, token: dispatcher)
            defer { feed.stop() }
            // Subscribed once the server has a follower.
            try await eventually("the server has a follower", within: .seconds(30)) { s.server.feedFollowers > 0 }
            #expect(s.server.feedFollowers == 1)
            let alert = Sample.alert("pi-0001", id: "through-the-proxy")
            let posted = try await proxy.transport().post(
                path: "v1/alerts",
                headers: ["Authorization": "Bearer \(device)", "Content-Type": "application/json"],
                body: Array(try WireCodec.encode(alert))
            )
            #expect(posted.status == 200)
            // Nothing else is written until the next keep-alive: the event itself must get through.
            #expect(try await feed.waitFor(.seconds(3)) { $0.contains("through-the-proxy") }, "\(feed.received)")
        }
    }

    @Test("an instance that stops is taken out by the health checks; requests go on through the other")
    func instanceDown() async throws {
        try await TestServer.with(.sqlite) { a in
            let b = try await TestServer.start(.sqlite)
            let proxy = try await HAProxy(servers: [a.port, b.port])
            defer { proxy.stop() }
            await b.stop()
            // Whichever instance a request is sent to first, each one is answered.
            for _ in 0..<10 {
                #expect(try await proxy.health() == 200)
            }
        }
    }

    @Test("per-client limits live at the proxy: past the rate, 429 with Retry-After")
    func clientRateAtProxy() async throws {
        try await TestServer.with(.sqlite) { s in
            // The rate is counted over 10 s: a low one, so that the requests past it fall inside
            // one window however slowly a busy machine sends them.
            let proxy = try await HAProxy(servers: [s.port], environment: ["TRACKME_CLIENT_RATE": "3"])
            defer { proxy.stop() }
            var statuses: [Int?] = []
            for _ in 0..<25 {
                statuses.append(try await proxy.health())
                if statuses.last == 429 { break }
            }
            // Up to the rate, answered (the proxy's own readiness checks at start count too, so
            // how many is not fixed); past it, 429.
            #expect(statuses.dropLast().allSatisfy { $0 == 200 }, "\(statuses)")
            #expect(statuses.last == 429, "\(statuses)")
            let headers = try await TestCertificateAuthority.run(
                "/usr/bin/curl",
                ["-sS", "-D", "-", "-o", "/dev/null", "--cacert", proxy.ca.certificatePath, proxy.url("/health")]
            )
            #expect(headers.output.lowercased().contains("retry-after: 10"), "\(headers.output)")
        }
    }
}
