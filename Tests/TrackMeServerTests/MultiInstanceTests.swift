import EdgeSync
import Foundation
import ServerTestSupport
import Synchronization
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

#if PostgreSQL
/// Several instances on one PostgreSQL (issue 22): the feed crosses instances through the
/// database's `LISTEN`/`NOTIFY`, not the 5 s tick.
@Suite("Several instances on one PostgreSQL", .serialized, .timeLimit(.minutes(10)))
struct MultiInstanceTests {
    @Test("an alert ingested on instance A reaches a dispatcher following instance B by B's database notification, not its tick")
    func feedCrossesInstances() async throws {
        let a = try await TestServer.start(.postgres)
        // B's 5 s tick runs on a clock nobody moves: whatever reaches B's feed came through the
        // notification from the database.
        let frozenTick = VirtualClock()
        let b: TestServer
        do {
            b = try await TestServer.start(.postgres, storage: a.server.configuration.storage, configure: { $0.feedTickClock = frozenTick })
        } catch {
            await a.stop()
            throw error
        }
        do {
            let device = try await a.enrol("pi-0001")
            let dispatcher = try await b.dispatcher()
            let feed = try SSETestClient(port: b.port, token: dispatcher)
            defer { feed.close() }
            try await eventually("B follows the feed", within: .seconds(30)) { b.server.feedFollowers > 0 }
            for round in 0..<3 {
                let id = "cross-\(round)"
                let response = try await a.client.send(
                    "POST",
                    "/v1/alerts",
                    token: device,
                    body: try WireCodec.encode(Sample.alert("pi-0001", id: id))
                )
                #expect(response.status == 200)
                // An upper bound on the wait, not a speed: without the notification it never comes.
                let events = try await feed.nextEvents(1, timeout: .seconds(30))
                #expect(events.first?.data.contains(id) == true, "\(events)")
            }
            #expect(frozenTick.now == VirtualClock.Instant(offset: .zero), "B's tick never ran")
        } catch {
            Issue.record(error)
        }
        await b.stop()
        await a.stop()
    }

    /// A real `trackme-server serve` process on PostgreSQL, plain HTTP on loopback behind the
    /// proxy, with the per-address and per-token limits off (the proxy limits per client).
    final class ServerProcess: Sendable {
        let process: SpawnedProcess
        let port: Int
        let log: URL

        init(database: String, directory: URL, name: String) async throws {
            log = directory.appendingPathComponent("\(name).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process = try SpawnedProcess.launch(
                try serverBinaryURL().path,
                arguments: [
                    "serve", "--plain-http", "--port", "0", "--db", database, "--rate-per-address", "0", "--rate-per-token", "0",
                    "--alerts-per-minute", "0", "--max-connections-per-address", "4096",
                ],
                environment: ["TRACKME_ADMIN_TOKEN": TestServer.adminToken, "LOG_LEVEL": "info", "PATH": "/usr/bin:/bin"],
                standardError: .file(log.path)
            )
            port = try await ServerChildLog.listeningPort(logFile: log.path, of: process, within: .seconds(30))
        }

        func kill9() async {
            process.signal(SIGKILL)
            await process.exit()
        }

        func stop() {
            process.signal(SIGINT)
            process.waitUntilExit()
        }
    }

    @Test(
        "three instances behind HAProxy on one PostgreSQL, one killed -9 mid-load: every acknowledged reading stored once, every alert on each surviving instance's feed"
    )
    func threeInstancesOneKilled() async throws {
        let database = try await PostgresFixture.shared.createDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-three-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var started: [ServerProcess] = []
        defer { for server in started { server.stop() } }
        for index in 0..<3 { started.append(try await ServerProcess(database: database, directory: directory, name: "instance-\(index)")) }
        let servers = started
        let proxy = try await ReverseProxyTests.HAProxy(servers: servers.map(\.port))
        defer { proxy.stop() }
        let transport = try proxy.transport()
        let post: @Sendable (String, String, [UInt8], String?) async throws -> HTTPResponse = { path, token, body, key in
            var headers = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
            if let key { headers["Idempotency-Key"] = key }
            return try await transport.post(path: path, headers: headers, body: body)
        }

        // Devices enrolled and a dispatcher made through the balancer.
        let devices = 24
        let batchesPerDevice = 12
        let readingsPerBatch = 10
        var tokens: [String] = []
        for index in 0..<devices {
            let body = try JSONSerialization.data(withJSONObject: ["device_id": "pi-\(index)", "person": ["name": "P\(index)", "age": 60]])
            let enrolled = try await post("v1/devices", TestServer.adminToken, Array(body), nil)
            try #require(enrolled.status == 201, "\(String(decoding: enrolled.body, as: UTF8.self))")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(enrolled.body)) as? [String: Any])
            tokens.append(try #require(object["token"] as? String))
        }
        let made = try await post("v1/dispatchers", TestServer.adminToken, Array("{}".utf8), nil)
        let dispatcher = try #require((try JSONSerialization.jsonObject(with: Data(made.body)) as? [String: Any])?["token"] as? String)

        // A dispatcher follows each instance directly: instance 1 is the one killed.
        let feeds = try [0, 2].map { try SSETestClient(port: servers[$0].port, token: dispatcher) }
        defer { for feed in feeds { feed.close() } }
        final class Tally: Sendable {
            let acknowledged = Mutex<[String: Set<Int64>]>([:])
            let sent = Atomic<Int>(0)
        }
        let tally = Tally()
        let tokenList = tokens
        let killAt = devices * batchesPerDevice / 3

        // Each feed read as it arrives, alongside the load.
        let alertIDs = (0..<devices).map { "alert-\($0)" }
        let readers = feeds.map { feed in
            Task { () -> Set<String> in
                var arrived: Set<String> = []
                while arrived.count < alertIDs.count {
                    guard let events = try? await feed.nextEvents(1, timeout: .seconds(60)) else { break }
                    for event in events where event.event == "alert" {
                        if let id = alertIDs.first(where: { event.data.contains("\"\($0)\"") }) { arrived.insert(id) }
                    }
                }
                return arrived
            }
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await eventually("a third of the batches sent", within: .seconds(300), every: .milliseconds(5)) {
                    tally.sent.load(ordering: .relaxed) >= killAt
                }
                await servers[1].kill9()
            }
            for index in 0..<devices {
                let token = tokenList[index]
                group.addTask {
                    for batchSeq in 1...batchesPerDevice {
                        let first = Int64((batchSeq - 1) * readingsPerBatch + 1)
                        let readings = (first..<first + Int64(readingsPerBatch)).map { Sample.heartRate(seq: $0) }
                        let batch = Sample.batch("pi-\(index)", seq: Int64(batchSeq), readings: readings)
                        let body = Array(try WireCodec.encode(batch))
                        // As the agent does: the same batch again until it is acknowledged.
                        var attempts = 0
                        while true {
                            attempts += 1
                            if let response = try? await post("v1/batches", token, body, batch.idempotencyKey), response.status == 200 {
                                break
                            }
                            try #require(attempts < 100, "pi-\(index) batch \(batchSeq) never acknowledged")
                            try await Task.sleep(for: .milliseconds(50))
                        }
                        tally.acknowledged.withLock { $0["pi-\(index)", default: []].formUnion(readings.map(\.sequence)) }
                        tally.sent.add(1, ordering: .relaxed)
                        if batchSeq == batchesPerDevice / 2 {
                            let alertID = "alert-\(index)"
                            let alert = Array(try WireCodec.encode(Sample.alert("pi-\(index)", id: alertID)))
                            var alertAttempts = 0
                            while true {
                                alertAttempts += 1
                                if let response = try? await post("v1/alerts", token, alert, nil), response.status == 200 { break }
                                try #require(alertAttempts < 100, "alert \(alertID) never accepted")
                                try await Task.sleep(for: .milliseconds(50))
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(!servers[1].process.isRunning)

        // Every alert on each surviving instance's feed (how fast is feedCrossesInstances' and
        // the benchmark's business, not this test's).
        for reader in readers {
            let arrived = await reader.value
            #expect(arrived == Set(alertIDs), "missing on a feed: \(Set(alertIDs).subtracting(arrived).sorted())")
        }

        // Every acknowledged reading stored, once (read through a fresh instance on the database).
        let reader = try await TestServer.start(.postgres, storage: .postgres(url: database))
        for index in 0..<devices {
            let stored = try await reader.server.storedSequences(deviceID: "pi-\(index)")
            let expected = tally.acknowledged.withLock { $0["pi-\(index)"] ?? [] }
            #expect(stored.count == Set(stored).count, "pi-\(index): a reading stored twice")
            #expect(Set(stored) == expected, "pi-\(index): \(expected.subtracting(stored).count) acknowledged readings missing")
        }
        await reader.stop()
    }
}
#endif
