import Foundation
import Logging
import ServiceLifecycle
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Issue 16 on the server: a reused key or a device whose numbering started over gets a 409 the
/// device can re-base on, never a silent 200; a damaged database says so; retention does not act
/// on a wall clock that jumped.
@Suite("Ingest reliability")
struct IngestReliabilityTests {
    static func epochBatch(_ device: String, epoch: String?, seq: Int64, readings: [WireReading]) -> SyncBatch {
        var batch = Sample.batch(device, seq: seq, readings: readings)
        batch.storeEpoch = epoch
        return batch
    }

    @Test("the same key with other readings is a 409 idempotency_key_reused with floors, and stores nothing", arguments: Backend.enabled)
    func keyReused(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let first = Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.heartRate(seq: 2)])
            #expect(try await s.send(first, token: token).status == 200)
            let other = Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 40), Sample.heartRate(seq: 3)])
            let refused = try await s.send(other, token: token)
            #expect(refused.status == 409, "\(refused.text)")
            #expect(refused.errorCode == "idempotency_key_reused")
            let conflict = try WireCodec.decode(BatchConflict.self, from: refused.body)
            #expect(conflict.sequenceFloor == 3)
            #expect(conflict.batchSequenceFloor == 2)
            #expect(try await s.readings("pi-0001").map { $0["seq"] as? Int } == [1, 2])
            // The very same batch is still a replay, and the heartbeat may differ in a replay.
            var same = first
            same.heartbeat?.storeDepth = 0
            let replay = try await s.send(same, token: token)
            #expect(replay.status == 200)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: replay.body).stored == 2)
            let metrics = try await s.client.send("GET", "/metrics")
            #expect(metrics.text.contains("trackme_server_batches_conflict_total 1\n"))
        }
    }

    @Test(
        "a store that started over (new epoch, numbers from 1) is refused with 409 store_epoch_rebase until it re-bases; nothing is taken for a duplicate",
        arguments: Backend.enabled
    )
    func epochRestart(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let old = Self.epochBatch("pi-0001", epoch: "00000000000000aa", seq: 1, readings: (1...5).map { Sample.heartRate(seq: $0) })
            #expect(try await s.send(old, token: token).status == 200)
            // The wiped store: a new epoch, numbered from 1 again, other readings.
            let restarted = Self.epochBatch(
                "pi-0001",
                epoch: "00000000000000bb",
                seq: 1,
                readings: (1...3).map { Sample.heartRate(seq: $0, bpm: 50) }
            )
            let refused = try await s.send(restarted, token: token)
            #expect(refused.status == 409, "\(refused.text)")
            #expect(refused.errorCode == "store_epoch_rebase")
            let conflict = try WireCodec.decode(BatchConflict.self, from: refused.body)
            #expect(conflict.sequenceFloor == 6)
            #expect(conflict.batchSequenceFloor == 2)
            // Any batch of that epoch below the floors is refused, whatever its key.
            let stillLow = Self.epochBatch("pi-0001", epoch: "00000000000000bb", seq: 9, readings: [Sample.heartRate(seq: 4)])
            #expect(try await s.send(stillLow, token: token).status == 409)
            // Re-based: stored, all of it.
            let rebased = Self.epochBatch(
                "pi-0001",
                epoch: "00000000000000bb",
                seq: conflict.batchSequenceFloor,
                readings: (0..<3).map { Sample.heartRate(seq: conflict.sequenceFloor + $0, bpm: 50) }
            )
            let accepted = try await s.send(rebased, token: token)
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: accepted.body).stored == 3)
            #expect(try await s.readings("pi-0001").map { $0["seq"] as? Int } == [1, 2, 3, 4, 5, 6, 7, 8])
            // A device's first epoch is never refused, and a device without epochs works as before.
            let fresh = try await s.enrol("pi-0002")
            #expect(
                try await s.send(Self.epochBatch("pi-0002", epoch: "00000000000000cc", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: fresh)
                    .status == 200
            )
            let legacy = try await s.enrol("pi-0003")
            let inFlight = Sample.batch("pi-0003", seq: 1, readings: [Sample.heartRate(seq: 1)])
            #expect(try await s.send(inFlight, token: legacy).status == 200)
            // Upgraded, it resends what it had in flight, now with its store's epoch: a replay,
            // and its numbers go on (its first epoch is taken as it is).
            let resent = Self.epochBatch("pi-0003", epoch: "00000000000000dd", seq: 1, readings: inFlight.readings)
            let replay = try await s.send(resent, token: legacy)
            #expect(replay.status == 200, "\(replay.text)")
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: replay.body).stored == 1)
            let next = Self.epochBatch("pi-0003", epoch: "00000000000000dd", seq: 2, readings: [Sample.heartRate(seq: 2)])
            #expect(try await s.send(next, token: legacy).status == 200)
            #expect(try await s.readings("pi-0003").map { $0["seq"] as? Int } == [1, 2])
        }
    }

    @Test(
        "a wall clock a year ahead does not make retention delete; the refusal shows in /health and /metrics; a corrected clock acts again",
        arguments: Backend.enabled
    )
    func retentionRefusesClockJump(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token).status == 200)
            s.wall.advance(milliseconds: 365 * 86_400_000)
            await s.runJobs(advancingBy: .seconds(3600))
            #expect(try await s.readings("pi-0001").count == 1)
            let health = try await s.client.send("GET", "/health")
            #expect((health.object["retention"] as? String)?.contains("ahead") == true, "\(health.text)")
            #expect(MetricsScrape(try await s.client.send("GET", "/metrics").text).value("trackme_server_retention_refusing") == 1)
            // The clock comes back: retention runs again (and finds nothing old enough).
            s.wall.advance(milliseconds: -365 * 86_400_000)
            await s.runJobs(advancingBy: .seconds(3600))
            #expect(try await s.readings("pi-0001").count == 1)
            #expect(try await s.client.send("GET", "/health").object["retention"] == nil)
            #expect(try await s.client.send("GET", "/metrics").text.contains("trackme_server_retention_refused_total 1\n"))
        }
    }

    @Test("clock guard: within tolerance acts, a jump ahead refuses, behind acts, a long refusal is finally accepted, a restart allows down time")
    func clockGuard() {
        var guardian = RetentionClockGuard(trustedWall: 1_000_000, restarted: false, monotonicNow: .zero)
        #expect(guardian.decide(wallMilliseconds: 1_000_000 + 3_600_000, monotonicNow: .seconds(3600)) == .act(wallMilliseconds: 4_600_000))
        let year: Int64 = 365 * 86_400_000
        #expect(guardian.decide(wallMilliseconds: 4_600_000 + year, monotonicNow: .seconds(7200)) == .refuse(aheadMilliseconds: year - 3_600_000))
        #expect(guardian.decide(wallMilliseconds: 4_000_000, monotonicNow: .seconds(7300)) == .act(wallMilliseconds: 4_000_000))
        _ = guardian.decide(wallMilliseconds: 4_000_000 + year, monotonicNow: .seconds(8000))
        #expect(
            guardian.decide(wallMilliseconds: 4_000_000 + year, monotonicNow: .seconds(8000 + 7 * 86_400)) == .act(wallMilliseconds: 4_000_000 + year)
        )
        var restarted = RetentionClockGuard(trustedWall: 1_000_000, restarted: true, monotonicNow: .zero)
        #expect(
            restarted.decide(wallMilliseconds: 1_000_000 + 2 * 86_400_000, monotonicNow: .seconds(1))
                == .act(wallMilliseconds: 1_000_000 + 2 * 86_400_000)
        )
        var restartedFar = RetentionClockGuard(trustedWall: 1_000_000, restarted: true, monotonicNow: .zero)
        #expect(restartedFar.decide(wallMilliseconds: 1_000_000 + year, monotonicNow: .seconds(1)) != .act(wallMilliseconds: 1_000_000 + year))
    }

    @Test("a heartbeat alone (POST /v1/heartbeats) is contact and keeps the device's store state", arguments: Backend.enabled)
    func heartbeatAlone(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            var beat = DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: 12, storeBytes: 4096)
            beat.storeState = "memory_only"
            beat.storeProblem = "disk_full: database or disk is full"
            let answer = try await s.client.send(
                "POST",
                "/v1/heartbeats",
                token: token,
                body: try WireCodec.encode(HeartbeatMessage(deviceID: "pi-0001", heartbeat: beat))
            )
            #expect(answer.status == 200, "\(answer.text)")
            let contact = try await s.server.deviceContact(deviceID: "pi-0001")
            #expect(contact.heartbeat == beat)
            #expect(contact.lastSeenMilliseconds == TestServer.startWall)
            let other = try await s.client.send(
                "POST",
                "/v1/heartbeats",
                token: token,
                body: try WireCodec.encode(HeartbeatMessage(deviceID: "pi-0002", heartbeat: beat))
            )
            #expect(other.status == 403)
        }
    }

    @Test("a damaged SQLite database: /health says 503 database_damaged with what to do, metrics say so, ingest is refused with the instruction")
    func damagedDatabase() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-damaged-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("server.sqlite").path
        var logger = Logger(label: "test.server")
        logger.logLevel = .critical
        let configuration = ServerConfiguration(host: "127.0.0.1", port: 0, storage: .sqlite(path: path), adminToken: TestServer.adminToken)
        var token = ""
        do {
            let server = try await TrackMeServer(configuration: configuration, logger: logger)
            token = try await server.enrolDevice(deviceID: "pi-0001", person: PersonProfile(name: "Ada", age: 70)).token
            // Enough readings for the table to span many pages.
            let readings = (1...3000).map { Sample.heartRate(seq: Int64($0)) }
            for chunk in stride(from: 0, to: readings.count, by: 500) {
                let rows = try readings[chunk..<min(chunk + 500, readings.count)].map { reading in
                    ReadingRow(
                        sequence: reading.sequence,
                        kind: reading.kind,
                        placedMilliseconds: TestServer.startWall,
                        wallMilliseconds: nil,
                        timeFlag: nil,
                        body: try StoreJSON.encode(reading)
                    )
                }
                _ = try await server.ingestStore.ingest(
                    IncomingBatch(
                        deviceID: "pi-0001",
                        batchSequence: Int64(chunk + 1),
                        droppedByBudget: 0,
                        heartbeatJSON: nil,
                        readings: rows,
                        receivedMilliseconds: TestServer.startWall
                    )
                )
            }
            try await server.store.close()
        }
        // One page in the middle of the readings table scribbled over; the header, the schema and
        // the migrations table (the first pages) are intact, so the server opens and migrates.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.seek(toOffset: UInt64((size / 4096 / 2) * 4096))
        handle.write(Data(repeating: 0x5A, count: 4096))
        try handle.close()

        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        let task = Task { try await group.run() }
        let client = HTTPTestClient(port: try await server.boundPort())
        let health = try await client.send("GET", "/health")
        #expect(health.status == 503)
        #expect(health.object["status"] as? String == "database_damaged")
        #expect((health.object["message"] as? String)?.contains("restore") == true)
        let metrics = try await client.send("GET", "/metrics")
        #expect(MetricsScrape(metrics.text).value("trackme_server_database_damaged") == 1)
        let batch = Sample.batch("pi-0001", seq: 9000, readings: [Sample.heartRate(seq: 9000)])
        let refused = try await client.send("POST", "/v1/batches", token: token, body: try WireCodec.encode(batch))
        #expect(refused.status == 503)
        #expect(refused.errorCode == "database_damaged")
        client.close()
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}
