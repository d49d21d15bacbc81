import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Revocation and rotation take effect on the next request, on every instance.
@Suite("Token lifecycle")
struct TokenLifecycleTests {
    static func tokenID(_ token: String) -> String { String(token.split(separator: ".")[0]) }

    @Test("a token whose row is deleted is refused at once, not at the next restart", arguments: Backend.enabled)
    func deletedRow(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token).status == 200)
            #expect(try await s.server.store.deleteToken(id: Self.tokenID(token)))
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token).status == 401)
        }
    }

    @Test("admin API: list, revoke (refused at once), rotate (old refused, new accepted), unknown 404", arguments: Backend.enabled)
    func adminAPI(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            #expect(try await s.client.send("GET", "/v1/alerts/stream?last_event_id=x", token: dispatcher).status == 400)

            let listed = try await s.client.send("GET", "/v1/tokens", token: TestServer.adminToken)
            #expect(listed.status == 200)
            let rows = try #require(listed.object["tokens"] as? [[String: Any]])
            #expect(Set(rows.compactMap { $0["token_id"] as? String }) == [Self.tokenID(device), Self.tokenID(dispatcher)])
            #expect(!listed.text.contains(String(device.split(separator: ".")[1])))
            #expect(try await s.client.send("GET", "/v1/tokens", token: dispatcher).status == 403)

            // Rotate the device's token: the new one works, the old one no longer.
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: device).status == 200)
            let rotated = try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(device))/rotate", token: TestServer.adminToken)
            #expect(rotated.status == 201)
            #expect(rotated.object["device_id"] as? String == "pi-0001")
            #expect(rotated.object["role"] as? String == "device")
            let fresh = try #require(rotated.object["token"] as? String)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: device).status == 401)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: fresh).status == 200)

            // Revoke the dispatcher.
            let revoked = try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(dispatcher))/revoke", token: TestServer.adminToken)
            #expect(revoked.status == 200)
            #expect(try await s.client.send("POST", "/v1/alerts/any/ack", token: dispatcher).status == 401)
            #expect(try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(dispatcher))/revoke", token: TestServer.adminToken).status == 404)
            #expect(try await s.client.send("POST", "/v1/tokens/nope/rotate", token: TestServer.adminToken).status == 404)
        }
    }

    @Test(
        "a dispatcher token stops working at its expiry (401 saying so); rotating gives a full lifetime; device tokens never expire",
        arguments: Backend.enabled
    )
    func dispatcherTokenExpiry(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let day: Int64 = 24 * 3600 * 1000
            // The server's default lifetime (90 days), and a shorter one asked for.
            let standard = try await s.client.send("POST", "/v1/dispatchers", token: TestServer.adminToken, body: Data())
            #expect(standard.status == 201)
            #expect((standard.object["expires_ms"] as? NSNumber)?.int64Value == s.wall.now + 90 * day)
            let made = try await s.client.send("POST", "/v1/dispatchers", token: TestServer.adminToken, json: ["expires_in_days": 1])
            #expect(made.status == 201)
            #expect((made.object["expires_ms"] as? NSNumber)?.int64Value == s.wall.now + day)
            let short = try #require(made.object["token"] as? String)
            for days in [0, 3651] {
                #expect(
                    try await s.client.send("POST", "/v1/dispatchers", token: TestServer.adminToken, json: ["expires_in_days": days]).status == 400
                )
            }

            #expect(try await s.client.send("GET", "/v1/devices", token: short).status == 200)
            s.wall.advance(milliseconds: day - 1)
            #expect(try await s.client.send("GET", "/v1/devices", token: short).status == 200)
            s.wall.advance(milliseconds: 1)
            let expired = try await s.client.send("GET", "/v1/devices", token: short)
            #expect(expired.status == 401)
            #expect(expired.text.contains("expired"))
            let listed = try await s.client.send("GET", "/v1/tokens", token: TestServer.adminToken)
            let rows = try #require(listed.object["tokens"] as? [[String: Any]])
            let row = try #require(rows.first { $0["token_id"] as? String == Self.tokenID(short) })
            #expect((row["expires_ms"] as? NSNumber)?.int64Value == TestServer.startWall + day)
            #expect(rows.first { $0["role"] as? String == "device" }?["expires_ms"] == nil)

            // Rotated, the dispatcher works again for a full (default) lifetime.
            let rotated = try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(short))/rotate", token: TestServer.adminToken)
            #expect(rotated.status == 201)
            #expect((rotated.object["expires_ms"] as? NSNumber)?.int64Value == s.wall.now + 90 * day)
            let fresh = try #require(rotated.object["token"] as? String)
            #expect(try await s.client.send("GET", "/v1/devices", token: fresh).status == 200)

            // A device's token a year on still works, and rotating it gives no expiry.
            s.wall.advance(milliseconds: 365 * day)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: device).status == 200)
            let rotatedDevice = try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(device))/rotate", token: TestServer.adminToken)
            #expect(rotatedDevice.status == 201)
            #expect(rotatedDevice.object["expires_ms"] == nil)
            #expect(try await s.client.send("GET", "/v1/devices", token: fresh).status == 401)
        }
    }

    @Test("a dispatcher's open feed stream ends when its token is revoked, before the next event", arguments: Backend.enabled)
    func revokedStream(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            _ = try await s.client.send("POST", "/v1/alerts", token: device, body: try WireCodec.encode(Sample.alert("pi-0001", id: "before")))
            #expect(try await feed.nextEvents(1).count == 1)
            #expect(try await s.client.send("POST", "/v1/tokens/\(Self.tokenID(dispatcher))/revoke", token: TestServer.adminToken).status == 200)
            _ = try await s.client.send("POST", "/v1/alerts", token: device, body: try WireCodec.encode(Sample.alert("pi-0001", id: "after")))
            // The stream ends instead of delivering "after" (nextEvents throws when it ends first).
            let delivered = try? await feed.nextEvents(1, timeout: .seconds(30))
            #expect(delivered == nil, "a revoked dispatcher still received \(delivered ?? [])")
        }
    }

    @Test("the CLI's token administrator revokes on the database a running server uses")
    func cliRevokesOnSQLite() async throws {
        try await TestServer.with(.sqlite) { s in
            let token = try await s.enrol("pi-0001")
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token).status == 200)
            let storage = s.server.configuration.storage
            let listed = try await TokenAdministrator.with(storage, logger: Logger(label: "test")) { try await $0.tokens() }
            #expect(listed.map(\.tokenID) == [Self.tokenID(token)])
            try await TokenAdministrator.with(storage, logger: Logger(label: "test")) { try await $0.revoke(tokenID: Self.tokenID(token)) }
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token).status == 401)
        }
    }

    @Test("the trackme-server token CLI lists, rotates and revokes")
    func cliProcess() async throws {
        let binary = try serverBinaryURL()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:\(directory.path)/server.sqlite"
        let credentials = try await TokenAdministrator.with(.init(argument: database), logger: Logger(label: "test")) { admin in
            try await admin.administration.enrolDevice(deviceID: "pi-0001", person: PersonProfile(name: "Ada", age: 70))
        }
        let id = Self.tokenID(credentials.token)
        func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
            try await TestCertificateAuthority.run(binary.path, arguments)
        }
        let listed = try await run(["token", "list", "--db", database])
        #expect(listed.status == 0)
        #expect(
            listed.output.split(separator: "\n").contains { $0.hasPrefix("\(id)\tdevice\tpi-0001\t") && $0.hasSuffix("\tnever") },
            "\(listed.output)"
        )
        let rotated = try await run(["token", "rotate", id, "--db", database])
        #expect(rotated.status == 0)
        let newToken = try #require(rotated.output.split(separator: "\n").last { $0.contains(".") && !$0.contains(" ") })
        let newID = Self.tokenID(String(newToken))
        #expect(newID != id)
        let revoked = try await run(["token", "revoke", newID, "--db", database])
        #expect(revoked.status == 0)
        let unknown = try await run(["token", "revoke", newID, "--db", database])
        #expect(unknown.status != 0)
        let after = try await TokenAdministrator.with(.init(argument: database), logger: Logger(label: "test")) { try await $0.tokens() }
        #expect(after.isEmpty)
    }

    #if PostgreSQL
    @Test("two instances on one PostgreSQL: a token revoked through one is refused by the other at its next request")
    func twoInstances() async throws {
        let first = try await TestServer.start(.postgres)
        let second: TestServer
        do {
            second = try await TestServer.start(.postgres, storage: first.server.configuration.storage)
        } catch {
            await first.stop()
            throw error
        }
        do {
            let token = try await first.enrol("pi-0001")
            // Both instances have served (and, before, would have cached) the token.
            #expect(try await first.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token).status == 200)
            #expect(try await second.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token).status == 200)
            let revoked = try await first.client.send("POST", "/v1/tokens/\(Self.tokenID(token))/revoke", token: TestServer.adminToken)
            #expect(revoked.status == 200)
            // The very next request, with no wait: nothing on the second instance held the token.
            #expect(try await second.send(Sample.batch("pi-0001", seq: 3, readings: []), token: token).status == 401)
        } catch {
            Issue.record(error)
        }
        await second.stop()
        await first.stop()
    }
    #endif
}
