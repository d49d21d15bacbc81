import EdgeSync
import Foundation
import Logging
import ServiceLifecycle
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The agent's transports against a real HTTPS `TrackMeServer` whose certificate a CA made by the
/// test signed: the right CA is accepted, an unknown CA, a wrong name or a wrong pin refused with
/// an error that says so (the sync engine keeps the readings and retries transport errors).
@Suite("Agent verifies the server")
struct AgentTLSTests {
    final class Fixture: Sendable {
        let directory: URL
        let ca: TestCertificateAuthority
        let otherCA: TestCertificateAuthority
        let server: TrackMeServer
        let group: ServiceGroup
        let task: Task<Void, any Error>
        let port: Int
        let certificate: String

        init(names: [String] = ["localhost", "127.0.0.1"]) async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-agent-tls-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            ca = try await .make("agent", in: directory)
            otherCA = try await .make("stranger", in: directory)
            let (certificate, key) = try await ca.issue("server", names: names)
            self.certificate = certificate
            var logger = Logger(label: "test.agent-tls")
            logger.logLevel = .warning
            server = try await TrackMeServer(
                configuration: ServerConfiguration(
                    host: "127.0.0.1",
                    port: 0,
                    storage: .sqlite(path: directory.appendingPathComponent("server.sqlite").path),
                    limits: .withoutRateLimits,
                    tls: ServerTLS(certificateChainPath: certificate, privateKeyPath: key)
                ),
                logger: logger
            )
            group = ServiceGroup(configuration: .init(services: [server], logger: logger))
            let group = self.group
            task = Task { try await group.run() }
            port = try await server.boundPort()
        }

        func stop() async {
            await group.triggerGracefulShutdown()
            _ = await task.result
            try? FileManager.default.removeItem(at: directory)
        }

        /// The base64 SHA-256 of the certificate's public key (SubjectPublicKeyInfo), as curl pins it.
        func pin() async throws -> String {
            let script = "openssl x509 -in '\(certificate)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"
            let result = try await TestCertificateAuthority.run("/bin/sh", ["-c", script])
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Sends one batch; the status or the transport's error.
        func send(_ transport: any HTTPTransport) async throws -> Result<Int, SyncError> {
            let credentials = try await server.enrolDevice(deviceID: "pi-\(UUID().uuidString.prefix(8))", person: PersonProfile(name: "Ada", age: 70))
            let batch = Sample.batch(credentials.deviceID, seq: 1, readings: [Sample.heartRate(seq: 1)])
            let body = Array(try WireCodec.encode(batch))
            do {
                let response = try await transport.post(
                    path: "v1/batches",
                    headers: [
                        "Authorization": "Bearer \(credentials.token)", "Content-Type": "application/json", "Idempotency-Key": batch.idempotencyKey,
                    ],
                    body: body
                )
                return .success(response.status)
            } catch {
                return .failure(error)
            }
        }
    }

    static func url(_ port: Int, host: String = "localhost") throws -> URL {
        try #require(URL(string: "https://\(host):\(port)/"))
    }

    @Test("a configured CA file: the server it signed is accepted, with headers and body; batches in a row share one TLS connection")
    func rightCA() async throws {
        let f = try await Fixture()
        let transport = CurlTransport(baseURL: try Self.url(f.port), trust: ServerTrust(caFile: f.ca.certificatePath))
        var statuses: [Int] = []
        for _ in 0..<3 { statuses.append(try await f.send(transport).get()) }
        await f.stop()
        #expect(statuses == [200, 200, 200])
        #expect(transport.connectionsOpened == 1, "one handshake, then the kept connection")
    }

    @Test("an unknown CA is refused, with a configured CA file and with the system store")
    func unknownCA() async throws {
        let f = try await Fixture()
        let curl = try await f.send(CurlTransport(baseURL: try Self.url(f.port), trust: ServerTrust(caFile: f.otherCA.certificatePath)))
        let system = try await f.send(CurlTransport(baseURL: try Self.url(f.port)))
        await f.stop()
        guard case .failure(let error) = curl else {
            Issue.record("an unknown CA was accepted")
            return
        }
        #expect(error.code == .transport)
        #expect(error.isRetryable)
        #expect(error.message.hasPrefix("TLS: the server's certificate is not trusted"), "\(error.message)")
        guard case .failure(let systemError) = system else {
            Issue.record("the system store accepted a CA outside it")
            return
        }
        #expect(systemError.code == .transport)
        #expect(systemError.message.hasPrefix("TLS: the server's certificate is not trusted"), "\(systemError.message)")
    }

    @Test("a certificate for another name is refused though its CA is trusted")
    func wrongName() async throws {
        let f = try await Fixture(names: ["trackme.example.org"])
        let outcome = try await f.send(CurlTransport(baseURL: try Self.url(f.port), trust: ServerTrust(caFile: f.ca.certificatePath)))
        await f.stop()
        guard case .failure(let error) = outcome else {
            Issue.record("a certificate for another name was accepted")
            return
        }
        #expect(error.message.hasPrefix("TLS: the server's certificate is not trusted"), "\(error.message)")
    }

    @Test("pinning: the server's key pin is accepted, another pin refused")
    func pinning() async throws {
        let f = try await Fixture()
        let pin = try await f.pin()
        let wrong = Data(repeating: 7, count: 32).base64EncodedString()
        let good = try await f.send(
            CurlTransport(baseURL: try Self.url(f.port), trust: ServerTrust(caFile: f.ca.certificatePath, publicKeySHA256: [wrong, pin]))
        )
        let bad = try await f.send(
            CurlTransport(baseURL: try Self.url(f.port), trust: ServerTrust(caFile: f.ca.certificatePath, publicKeySHA256: [wrong]))
        )
        await f.stop()
        #expect(try good.get() == 200)
        guard case .failure(let error) = bad else {
            Issue.record("a wrong pin was accepted")
            return
        }
        #expect(error.message.hasPrefix("TLS: the server's public key does not match"), "\(error.message)")
    }
}
