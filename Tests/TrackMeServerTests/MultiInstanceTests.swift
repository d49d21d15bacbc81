import EdgeSync
import Foundation
import Synchronization
import Testing
import TrackMeCore
@testable import TrackMeServer

#if PostgreSQL
/// Several instances on one PostgreSQL (issue 22): the feed crosses instances through the
/// database's `LISTEN`/`NOTIFY`, not the 5 s tick.
@Suite("Several instances on one PostgreSQL", .serialized)
struct MultiInstanceTests {
    @Test("an alert ingested on instance A reaches a dispatcher following instance B within a second, every time")
    func feedCrossesInstances() async throws {
        let a = try await TestServer.start(.postgres)
        let b: TestServer
        do {
            b = try await TestServer.start(.postgres, storage: a.server.configuration.storage)
        } catch {
            await a.stop()
            throw error
        }
        do {
            let device = try await a.enrol("pi-0001")
            let dispatcher = try await b.dispatcher()
            let feed = try SSETestClient(port: b.port, token: dispatcher)
            defer { feed.close() }
            let deadline = ContinuousClock.now + .seconds(10)
            while b.server.feedFollowers == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            // Three times: with only the 5 s tick each would arrive within a second one time in
            // five, so all three passing without the notifications is a 1-in-125 chance.
            for round in 0..<3 {
                let id = "cross-\(round)"
                let response = try await a.client.send(
                    "POST", "/v1/alerts", token: device, body: try WireCodec.encode(Sample.alert("pi-0001", id: id)))
                #expect(response.status == 200)
                // From the moment A said the alert is stored (the feed event may already be there).
                let posted = ContinuousClock.now
                let events = try await feed.nextEvents(1, timeout: .seconds(10))
                let lag = ContinuousClock.now - posted
                #expect(events.first?.data.contains(id) == true, "\(events)")
                #expect(lag < .seconds(1), "round \(round): the event took \(lag) to cross instances")
            }
        } catch {
            Issue.record(error)
        }
        await b.stop()
        await a.stop()
    }

    /// A real `trackme-server serve` process on PostgreSQL, plain HTTP on loopback behind the
    /// proxy, with the per-address and per-token limits off (the proxy limits per client).
    final class ServerProcess: @unchecked Sendable {
        let process = Process()
        let port: Int
        let log: URL

        init(database: String, directory: URL, name: String) async throws {
            log = directory.appendingPathComponent("\(name).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            process.executableURL = try serverBinaryURL()
            process.arguments = [
                "serve", "--plain-http", "--port", "0", "--db", database, "--rate-per-address", "0", "--rate-per-token", "0",
                "--alerts-per-minute", "0", "--max-connections-per-address", "4096",
            ]
            process.environment = ["TRACKME_ADMIN_TOKEN": TestServer.adminToken, "LOG_LEVEL": "info", "PATH": "/usr/bin:/bin"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: log)
            try process.run()
            let deadline = ContinuousClock.now + .seconds(30)
            var found: Int?
            while found == nil {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                for line in text.split(separator: "\n") where line.contains("trackme-server listening") {
                    if let range = line.range(of: "http://127.0.0.1:") { found = Int(line[range.upperBound...].prefix(while: \.isNumber)) }
                }
                guard found == nil else { break }
                guard process.isRunning, ContinuousClock.now < deadline else {
                    throw RawSocket.Failure(description: "\(name) did not start listening: \(text)")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            port = found ?? 0
        }

        func kill9() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func stop() {
            guard process.isRunning else { return }
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
        }
    }

    @Test("three instances behind HAProxy on one PostgreSQL, one killed -9 mid-load: every acknowledged reading stored once, every alert on each surviving instance's feed, feed lag p99 under a second")
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
            let posted = Mutex<[String: ContinuousClock.Instant]>([:])
            let acknowledged = Mutex<[String: Set<Int64>]>([:])
            let sent = Atomic<Int>(0)
        }
        let tally = Tally()
        let tokenList = tokens
        let killAt = devices * batchesPerDevice / 3

        // Each feed read as it arrives, alongside the load.
        let alertIDs = (0..<devices).map { "alert-\($0)" }
        let readers = feeds.map { feed in
            Task { () -> [String: ContinuousClock.Instant] in
                var arrived: [String: ContinuousClock.Instant] = [:]
                while arrived.count < alertIDs.count {
                    guard let events = try? await feed.nextEvents(1, timeout: .seconds(60)) else { break }
                    for event in events where event.event == "alert" {
                        if let id = alertIDs.first(where: { event.data.contains("\"\($0)\"") }), arrived[id] == nil { arrived[id] = ContinuousClock.now }
                    }
                }
                return arrived
            }
        }

        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while tally.sent.load(ordering: .relaxed) < killAt { try await Task.sleep(for: .milliseconds(5)) }
                servers[1].kill9()
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
                                // The lag counts from the start of the send the server accepted.
                                let started = ContinuousClock.now
                                if let response = try? await post("v1/alerts", token, alert, nil), response.status == 200 {
                                    tally.posted.withLock { $0[alertID] = started }
                                    break
                                }
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

        // Every alert on each surviving instance's feed, and how late.
        var lags: [Duration] = []
        for reader in readers {
            let arrived = await reader.value
            #expect(Set(arrived.keys) == Set(alertIDs), "missing on a feed: \(Set(alertIDs).subtracting(arrived.keys).sorted())")
            for (id, at) in arrived {
                if let sentAt = tally.posted.withLock({ $0[id] }) { lags.append(at - sentAt) }
            }
        }
        try #require(!lags.isEmpty)
        let sorted = lags.sorted()
        let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        #expect(p99 < .seconds(1), "feed lag p99 \(p99)")

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
