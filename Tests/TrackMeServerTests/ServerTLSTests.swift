import Foundation
import Logging
import ServerTestSupport
import ServiceLifecycle
import Testing
import TrackMeSystem

@testable import TrackMeServer

/// Native HTTPS with a certificate from a CA the test makes; reload without dropping connections.
@Suite("Server TLS")
struct ServerTLSTests {
    final class Fixture: Sendable {
        let directory: URL
        let first: TestCertificateAuthority
        let second: TestCertificateAuthority
        let certificate: String
        let key: String

        init(names: [String] = ["localhost", "127.0.0.1"]) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            first = try await .make("one", in: directory)
            second = try await .make("two", in: directory)
            (certificate, key) = try await first.issue("server", names: names)
        }

        /// Puts a certificate from the second CA where the server's files are.
        func replaceWithSecond() async throws {
            let (certificate, key) = try await second.issue("server-two", names: ["localhost", "127.0.0.1"])
            try FileManager.default.removeItem(atPath: self.certificate)
            try FileManager.default.removeItem(atPath: self.key)
            try FileManager.default.copyItem(atPath: certificate, toPath: self.certificate)
            try FileManager.default.copyItem(atPath: key, toPath: self.key)
        }

        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static func start(_ fixture: Fixture, host: String = "127.0.0.1") async throws -> (TrackMeServer, ServiceGroup, Task<Void, any Error>, Int) {
        var logger = Logger(label: "test.tls")
        logger.logLevel = .warning
        let configuration = ServerConfiguration(
            host: host,
            port: 0,
            storage: .sqlite(path: fixture.directory.appendingPathComponent("server.sqlite").path),
            adminToken: TestServer.adminToken,
            limits: .withoutRateLimits,
            tls: ServerTLS(certificateChainPath: fixture.certificate, privateKeyPath: fixture.key)
        )
        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        let task = Task { try await group.run() }
        return (server, group, task, try await server.boundPort())
    }

    @Test("plain HTTP is refused on a non-loopback address; allowed on loopback")
    func plainOnlyOnLoopback() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-plain-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = StorageLocation.sqlite(path: directory.appendingPathComponent("server.sqlite").path)
        await #expect(throws: ServerConfigurationError.self) {
            _ = try await TrackMeServer(configuration: ServerConfiguration(host: "0.0.0.0", port: 0, storage: storage), logger: Logger(label: "t"))
        }
        _ = try await TrackMeServer(configuration: ServerConfiguration(host: "127.0.0.1", port: 0, storage: storage), logger: Logger(label: "t"))
    }

    @Test("HTTPS with the configured certificate: a client trusting its CA is served, one trusting another CA refuses it")
    func https() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let (_, group, task, port) = try await Self.start(fixture, host: "0.0.0.0")
        let good = try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.first.certificatePath)
        #expect(good.status == 200, "\(good.output)")
        let otherCA = try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.second.certificatePath)
        #expect(otherCA.status == nil)
        #expect(otherCA.exitCode == 60, "curl: \(otherCA.output)")
        let plain = try await TestCertificateAuthority.run("/usr/bin/curl", ["-sS", "--max-time", "5", "http://127.0.0.1:\(port)/health"])
        #expect(plain.status != 0)
        await group.triggerGracefulShutdown()
        try await task.value
    }

    @Test("/metrics: open to loopback, 401 to another address without the admin token, 200 with it")
    func metricsAccess() async throws {
        let address = try #require(EdgeValidationTests.nonLoopbackIPv4(), "this machine has no non-loopback IPv4 address to test from")
        let fixture = try await Fixture(names: ["localhost", "127.0.0.1", address])
        defer { fixture.remove() }
        let (_, group, task, port) = try await Self.start(fixture, host: "0.0.0.0")
        let ca = fixture.first.certificatePath
        let loopback = try await TestCertificateAuthority.curl("https://127.0.0.1:\(port)/metrics", caFile: ca)
        let anonymous = try await TestCertificateAuthority.curl("https://\(address):\(port)/metrics", caFile: ca)
        let admin = try await TestCertificateAuthority.curl(
            "https://\(address):\(port)/metrics",
            caFile: ca,
            headers: ["Authorization: Bearer \(TestServer.adminToken)"]
        )
        await group.triggerGracefulShutdown()
        try await task.value
        #expect(loopback.status == 200, "\(loopback.output)")
        #expect(anonymous.status == 401, "\(anonymous.output)")
        #expect(admin.status == 200, "\(admin.output)")
    }

    @Test("reloading the certificate keeps an open connection serving; new connections get the new certificate")
    func reload() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let (server, group, task, port) = try await Self.start(fixture)
        // One kept-alive TLS connection (openssl s_client), used before and after the reload.
        let input = Pipe()
        let output = Pipe()
        let client = try SpawnedProcess.launch(
            "/usr/bin/openssl",
            arguments: ["s_client", "-quiet", "-connect", "127.0.0.1:\(port)", "-CAfile", fixture.first.certificatePath, "-verify_return_error"],
            standardInput: .pipe(input),
            standardOutput: .pipe(output)
        )
        defer { client.killAndWait() }
        let request = Data("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        let reader = output.fileHandleForReading
        func nextResponse() async throws -> String {
            await BlockingThreads.shared.run {
                var text = ""
                while !text.contains("{\"status\":\"ok\"}") {
                    let data = reader.availableData
                    if data.isEmpty { return text }
                    text += String(decoding: data, as: UTF8.self)
                }
                return text
            }
        }
        input.fileHandleForWriting.write(request)
        #expect(try await nextResponse().hasPrefix("HTTP/1.1 200"))

        try await fixture.replaceWithSecond()
        try server.reloadCertificates()

        input.fileHandleForWriting.write(request)
        #expect(try await nextResponse().hasPrefix("HTTP/1.1 200"), "the open connection was dropped by the reload")
        let fresh = try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.second.certificatePath)
        #expect(fresh.status == 200, "\(fresh.output)")
        let old = try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.first.certificatePath)
        #expect(old.exitCode == 60)

        // A broken file does not take the server down: the reload throws, the last good one stays.
        try "not a certificate".write(toFile: fixture.certificate, atomically: true, encoding: .utf8)
        #expect(throws: ServerConfigurationError.self) { try server.reloadCertificates() }
        #expect(try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.second.certificatePath).status == 200)
        await group.triggerGracefulShutdown()
        try await task.value
    }

    @Test("trackme-server reloads its certificate on SIGHUP")
    func sighup() async throws {
        let fixture = try await Fixture()
        defer { fixture.remove() }
        let log = Pipe()
        let process = try SpawnedProcess.launch(
            try serverBinaryURL().path,
            arguments: [
                "serve", "--host", "127.0.0.1", "--port", "0", "--db", "sqlite:\(fixture.directory.path)/server.sqlite",
                "--tls-cert", fixture.certificate, "--tls-key", fixture.key,
            ],
            environment: ["LOG_LEVEL": "info", "PATH": "/usr/bin:/bin"],
            standardError: .pipe(log)
        )
        defer {
            process.signal(SIGTERM)
            process.waitUntilExit()
        }
        let port = try await ServerChildLog.listeningPort(reading: log.fileHandleForReading).port
        #expect(try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.first.certificatePath).status == 200)
        try await fixture.replaceWithSecond()
        process.signal(SIGHUP)
        _ = try await ServerChildLog.firstLine(reading: log.fileHandleForReading) { $0.contains("TLS certificate reloaded") ? true : nil }
        #expect(try await TestCertificateAuthority.curl("https://localhost:\(port)/health", caFile: fixture.second.certificatePath).status == 200)
        #expect(process.isRunning)
    }

    @Test("the CLI refuses to serve with neither a certificate nor --plain-http, and --plain-http off loopback")
    func cliRequiresTLS() async throws {
        let binary = try serverBinaryURL().path
        let none = try await TestCertificateAuthority.run(binary, ["serve", "--port", "0", "--db", "sqlite:/nonexistent/x.sqlite"])
        #expect(none.status != 0)
        #expect(none.output.contains("--tls-cert"))
        let exposed = try await TestCertificateAuthority.run(binary, ["serve", "--plain-http", "--host", "0.0.0.0", "--port", "0"])
        #expect(exposed.status != 0)
        #expect(exposed.output.contains("loopback"))
    }

}
