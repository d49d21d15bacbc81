import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The server's behaviour over real HTTP on loopback, on every storage backend.
@Suite("Server behaviour")
struct ServerBehaviourTests {
    // MARK: - Enrolment and tokens

    @Test("enrol a device: 201 with a token once; again 409; bad body 400 naming the field", arguments: Backend.enabled)
    func enrolment(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(token.contains("."))
            let again = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0001", "person": ["name": "Ada", "age": 70]]
            )
            #expect(again.status == 409)
            #expect(again.errorField == "device_id")

            let missing = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0002", "person": ["age": 70]]
            )
            #expect(missing.status == 400)
            #expect(missing.errorCode == "missing_field")
            #expect(missing.errorField == "person.name")

            let wrongType = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0002", "person": ["name": "Bo", "age": "old"]]
            )
            #expect(wrongType.status == 400)
            #expect(wrongType.errorCode == "wrong_type")
            #expect(wrongType.errorField == "person.age")

            let badID = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi 0002/x", "person": ["name": "Bo", "age": 70]]
            )
            #expect(badID.status == 400)
            #expect(badID.errorField == "device_id")

            let thresholds = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0003", "person": ["name": "Cy", "age": 80, "resting_hr": 60, "min_hr": 40, "max_hr": 140]]
            )
            #expect(thresholds.status == 201)
        }
    }

    @Test("tokens: missing or wrong 401, another role 403, admin cannot ingest", arguments: Backend.enabled)
    func tokens(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let body: [String: Any] = ["device_id": "pi-0009", "person": ["name": "Ada", "age": 70]]
            let none = try await s.client.send("POST", "/v1/devices", json: body)
            #expect(none.status == 401)
            #expect(none.errorCode == "unauthorized")
            #expect(try await s.client.send("POST", "/v1/devices", token: "wrong", json: body).status == 401)
            // The right id with a wrong secret.
            let forged = String(device.split(separator: ".")[0]) + ".AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: forged).status == 401)
            let asDevice = try await s.client.send("POST", "/v1/devices", token: device, json: body)
            #expect(asDevice.status == 403)
            #expect(asDevice.errorCode == "forbidden")
            #expect(try await s.client.send("POST", "/v1/dispatchers", token: dispatcher, body: Data()).status == 403)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: dispatcher).status == 403)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: TestServer.adminToken).status == 403)
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings", token: device).status == 403)
            // A dispatcher reads a device's readings only around an alert it handles (issue 20); this one has none.
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings", token: dispatcher).status == 403)
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings", token: TestServer.adminToken).status == 200)
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings").status == 401)
            // The in-process admin API issues tokens that work over HTTP.
            let credentials = try await s.server.enrolDevice(deviceID: "pi-0100", person: PersonProfile(name: "Di", age: 75))
            #expect(try await s.send(Sample.batch("pi-0100", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: credentials.token).status == 200)
        }
    }

    // MARK: - Batches

    @Test("a batch is stored once: the same key again gets the same acknowledgement and stores nothing", arguments: Backend.enabled)
    func batchIdempotent(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let batch = Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.fix(seq: 2)])
            let first = try await s.send(batch, token: token)
            #expect(first.status == 200)
            let ack = try WireCodec.decode(BatchAcknowledgement.self, from: first.body)
            #expect(ack == BatchAcknowledgement(idempotencyKey: "pi-0001:1", stored: 2, duplicates: 0))
            let second = try await s.send(batch, token: token)
            #expect(second.status == 200)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: second.body) == ack)
            #expect(try await s.readings("pi-0001").count == 2)

            // A new batch that repeats one stored reading counts it as a duplicate.
            let overlap = Sample.batch("pi-0001", seq: 2, readings: [Sample.fix(seq: 2), Sample.heartRate(seq: 3)])
            let overlapAck = try WireCodec.decode(BatchAcknowledgement.self, from: try await s.send(overlap, token: token).body)
            #expect(overlapAck.stored == 1)
            #expect(overlapAck.duplicates == 1)
            #expect(try await s.readings("pi-0001").map { $0["seq"] as? Int } == [1, 2, 3])
        }
    }

    @Test("the same batch sent concurrently is stored once and every answer is the same", arguments: Backend.enabled)
    func batchConcurrent(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let readings = (1...50).map { Sample.heartRate(seq: Int64($0)) }
            let batch = Sample.batch("pi-0001", seq: 7, readings: readings)
            let answers = try await withThrowingTaskGroup(of: HTTPTestClient.Response.self) { group in
                for _ in 0..<12 { group.addTask { try await s.send(batch, token: token) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 200 })
            let acks = try answers.map { try WireCodec.decode(BatchAcknowledgement.self, from: $0.body) }
            #expect(Set(acks) == [BatchAcknowledgement(idempotencyKey: "pi-0001:7", stored: 50, duplicates: 0)])
            #expect(try await s.readings("pi-0001").count == 50)
            let metrics = try await s.client.send("GET", "/metrics")
            #expect(metrics.text.contains("trackme_server_readings_stored_total 50\n"))
            #expect(metrics.text.contains("trackme_server_batches_replayed_total 11\n"))
        }
    }

    @Test("gzip batches are inflated; a gzip bomb is refused by the inflated-size limit", arguments: Backend.enabled)
    func gzip(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let batch = Sample.batch("pi-0001", seq: 1, readings: (1...20).map { Sample.heartRate(seq: Int64($0)) })
            let compressed = try Gzip.compress(try WireCodec.encode(batch))
            let ok = try await s.client.send("POST", "/v1/batches", token: token, body: compressed, headers: ["Content-Encoding": "gzip"])
            #expect(ok.status == 200, "\(ok.text)")
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: ok.body).stored == 20)

            // 512 MiB of zeros in about half a megabyte: under the 1 MiB limit on the wire, far over it
            // inflated. The server stops inflating at the limit, so it answers 413 instead of
            // allocating half a gigabyte.
            let bomb = try Gzip.zeros(total: 512 << 20)
            #expect(bomb.count < 1 << 20)
            let refused = try await s.client.send("POST", "/v1/batches", token: token, body: bomb, headers: ["Content-Encoding": "gzip"])
            #expect(refused.status == 413)
            #expect(refused.errorCode == "too_large")

            let corrupt = try await s.client.send(
                "POST",
                "/v1/batches",
                token: token,
                body: Data([0x1f, 0x8b, 1, 2, 3]),
                headers: ["Content-Encoding": "gzip"]
            )
            #expect(corrupt.status == 400)
            let brotli = try await s.client.send("POST", "/v1/batches", token: token, body: compressed, headers: ["Content-Encoding": "br"])
            #expect(brotli.status == 415)
            #expect(try await s.readings("pi-0001").count == 20)
            #expect(try await s.client.send("GET", "/health").status == 200)
        }
    }

    @Test("rejected batches store nothing: bad JSON, a missing field, another device, too large", arguments: Backend.enabled)
    func rejectedBatches(backend: Backend) async throws {
        try await TestServer.with(backend, maxBodyBytes: 64 * 1024) { s in
            let token = try await s.enrol("pi-0001")
            _ = try await s.enrol("pi-0002")

            let malformed = try await s.client.send("POST", "/v1/batches", token: token, body: Data("{\"version\": 1,".utf8))
            #expect(malformed.status == 400)
            #expect(malformed.errorCode == "malformed_json")

            // The second reading lacks hr.bpm: the whole batch is refused, the first reading too.
            var json = try #require(
                try JSONSerialization.jsonObject(
                    with: try WireCodec.encode(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.heartRate(seq: 2)]))
                )
                    as? [String: Any]
            )
            var readings = try #require(json["readings"] as? [[String: Any]])
            var hr = try #require(readings[1]["hr"] as? [String: Any])
            hr.removeValue(forKey: "bpm")
            readings[1]["hr"] = hr
            json["readings"] = readings
            let missing = try await s.client.send("POST", "/v1/batches", token: token, json: json)
            #expect(missing.status == 400)
            #expect(missing.errorCode == "missing_field")
            #expect(missing.errorField == "readings[1].hr.bpm")

            let version = try await s.client.send(
                "POST",
                "/v1/batches",
                token: token,
                body: Data(try WireCodec.encode(Sample.batch("pi-0001", seq: 1, readings: [])))
                    .replacingVersion()
            )
            #expect(version.status == 400)
            #expect(version.errorField == "version")

            let foreign = try await s.send(Sample.batch("pi-0002", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token)
            #expect(foreign.status == 403)

            let keyMismatch = try await s.client.send(
                "POST",
                "/v1/batches",
                token: token,
                body: try WireCodec.encode(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)])),
                headers: ["Idempotency-Key": "pi-0001:2"]
            )
            #expect(keyMismatch.status == 400)
            #expect(keyMismatch.errorField == "Idempotency-Key")

            let big = Sample.batch("pi-0001", seq: 1, readings: (1...1000).map { Sample.heartRate(seq: Int64($0)) })
            let tooLarge = try await s.send(big, token: token)
            #expect(tooLarge.status == 413)

            #expect(try await s.readings("pi-0001").isEmpty)
            #expect(try await s.readings("pi-0002").isEmpty)
            // The refused key is still free: the real batch is stored in full.
            let ok = try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.heartRate(seq: 2)]), token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: ok.body).stored == 2)
        }
    }

    @Test("readings with an untrusted, missing, future or pre-enrolment wall time are kept, flagged, filed at receipt", arguments: Backend.enabled)
    func timeFlags(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            s.wall.advance(milliseconds: 60_000)
            let now = s.wall.now
            let batch = Sample.batch(
                "pi-0001",
                seq: 1,
                readings: [
                    Sample.heartRate(seq: 1, wall: now - 1_000),
                    Sample.heartRate(seq: 2, wall: 0, trusted: false),
                    Sample.heartRate(seq: 3, wall: nil, trusted: false),
                    Sample.heartRate(seq: 4, wall: now + 86_400_000),
                    Sample.heartRate(seq: 5, wall: TestServer.startWall - 86_400_000),
                ]
            )
            #expect(try await s.send(batch, token: token).status == 200)
            let rows = try await s.readings("pi-0001")
            let flags = rows.map { $0["time_flag"] as? String }
            #expect(flags == [nil, "untrusted_clock", "no_wall_clock", "future", "before_enrolment"])
            let placed = rows.map { ($0["placed_ms"] as? NSNumber)?.int64Value }
            #expect(placed == [now - 1_000, now, now, now, now])
            // The device's own wall time is kept as it sent it.
            let t = try #require(rows[3]["t"] as? [String: Any])
            #expect((t["wall_ms"] as? NSNumber)?.int64Value == now + 86_400_000)
        }
    }

    @Test("readings are listed by kind and time, in pages", arguments: Backend.enabled)
    func readingsQuery(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let base = TestServer.startWall
            var readings: [WireReading] = []
            for i in Int64(1)...10 {
                let wall: Int64 = base + i * 1000
                readings.append(i % 2 == 0 ? Sample.fix(seq: i, wall: wall) : Sample.heartRate(seq: i, wall: wall))
            }
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: readings), token: token).status == 200)
            #expect(try await s.readings("pi-0001", query: "?kind=fix").map { $0["seq"] as? Int } == [2, 4, 6, 8, 10])
            #expect(try await s.readings("pi-0001", query: "?from=\(base + 3000)&to=\(base + 6000)").map { $0["seq"] as? Int } == [3, 4, 5])
            let page1 = try await s.client.send("GET", "/v1/devices/pi-0001/readings?limit=4", token: TestServer.adminToken)
            #expect((page1.object["next_after_seq"] as? Int) == 4)
            let page3 = try await s.client.send("GET", "/v1/devices/pi-0001/readings?limit=4&after_seq=8", token: TestServer.adminToken)
            #expect((page3.object["readings"] as? [[String: Any]])?.count == 2)
            #expect(page3.object["next_after_seq"] is NSNull)
            let decoded = try WireCodec.decode(
                WireReading.self,
                from: try JSONSerialization.data(withJSONObject: try #require(page1.object["readings"] as? [[String: Any]])[0])
            )
            #expect(decoded == readings[0])
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings?kind=ecg", token: TestServer.adminToken).errorField == "kind")
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/readings?from=yesterday", token: TestServer.adminToken).errorField == "from")
            #expect(try await s.client.send("GET", "/v1/devices/pi-9999/readings", token: TestServer.adminToken).status == 404)
        }
    }

    // MARK: - Alerts and the feed

    @Test("alerts: idempotent by id and update_seq, on the feed, acknowledged by a dispatcher, told to the device once", arguments: Backend.enabled)
    func alerts(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let other = try await s.enrol("pi-0002")
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }

            let raised = Sample.alert("pi-0001", id: "alert-1")
            let first = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(raised))
            #expect(first.status == 200)
            #expect(first.object["duplicate"] as? Bool == false)
            let again = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(raised))
            #expect(again.object["duplicate"] as? Bool == true)
            let position = Sample.alert("pi-0001", id: "alert-1", updateSeq: 1, type: .position)
            #expect(try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(position)).status == 200)

            // Another device may neither post for pi-0001 nor reuse its alert id.
            #expect(try await s.client.send("POST", "/v1/alerts", token: other, body: try WireCodec.encode(raised)).status == 403)
            var stolen = Sample.alert("pi-0002", id: "alert-1", updateSeq: 5, type: .position)
            stolen.alert.deviceID = "pi-0002"
            #expect(try await s.client.send("POST", "/v1/alerts", token: other, body: try WireCodec.encode(stolen)).status == 403)

            var bad = try #require(try JSONSerialization.jsonObject(with: try WireCodec.encode(raised)) as? [String: Any])
            bad.removeValue(forKey: "update_seq")
            let missing = try await s.client.send("POST", "/v1/alerts", token: token, json: bad)
            #expect(missing.status == 400)
            #expect(missing.errorField == "update_seq")

            let events = try await feed.nextEvents(2)
            #expect(events.map(\.event) == ["alert", "alert"])
            let references = try events.map { try StoreJSON.decode($0.data) as AlertFeedReference }
            #expect(references.map(\.alertID) == ["alert-1", "alert-1"])
            #expect(references.map(\.type) == [.raised, .position])
            #expect(references.map(\.updateSequence) == [0, 1])

            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/ack", token: token).status == 403)
            #expect(try await s.client.send("POST", "/v1/alerts/nope/ack", token: dispatcher).status == 404)
            let ack = try await s.client.send("POST", "/v1/alerts/alert-1/ack", token: dispatcher)
            #expect(ack.status == 200)
            #expect(ack.object["already_acknowledged"] as? Bool == false)
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/ack", token: dispatcher).object["already_acknowledged"] as? Bool == true)
            let acknowledged = try await feed.nextEvents(1)
            #expect(acknowledged.map(\.event) == ["alert_acknowledged"])

            // The device learns of it in its next batch reply, once; a resend of that batch repeats it.
            let batch1 = try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: batch1.body).acknowledgedAlerts == ["alert-1"])
            let resent = try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: resent.body).acknowledgedAlerts == ["alert-1"])
            let batch2 = try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: batch2.body).acknowledgedAlerts == [])
            let other1 = try await s.send(Sample.batch("pi-0002", seq: 1, readings: []), token: other)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: other1.body).acknowledgedAlerts == [])
            // The alert answer tells the device as well.
            let cancel = Sample.alert("pi-0001", id: "alert-1", updateSeq: 2, type: .cancelled)
            #expect(
                try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(cancel)).object["acknowledged"] as? Bool
                    == true
            )
        }
    }

    @Test("the feed resumes with Last-Event-ID and misses nothing", arguments: Backend.enabled)
    func feedResume(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            for i in 0..<3 {
                _ = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "a\(i)")))
            }
            let first = try SSETestClient(port: s.port, token: dispatcher)
            let seen = try await first.nextEvents(3)
            first.close()
            #expect(seen.map(\.event) == ["alert", "alert", "alert"])
            let lastID = try #require(seen.last?.id)

            // While nobody listens, more happens, some of it concurrently.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 3..<13 {
                    group.addTask {
                        _ = try await s.client.send(
                            "POST",
                            "/v1/alerts",
                            token: token,
                            body: try WireCodec.encode(Sample.alert("pi-0001", id: "a\(i)"))
                        )
                    }
                }
                try await group.waitForAll()
            }
            let second = try SSETestClient(port: s.port, token: dispatcher, lastEventID: "\(lastID)")
            defer { second.close() }
            var rest = try await second.nextEvents(10)
            // Events that arrive while connected are delivered too, in order.
            _ = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "a13")))
            rest += try await second.nextEvents(1)

            let ids = rest.compactMap(\.id)
            #expect(ids.count == 11)
            #expect(ids == ids.sorted())
            #expect(Set(ids).count == 11)
            #expect(ids.allSatisfy { $0 > lastID })
            let alertIDs = try (seen + rest).map { (try StoreJSON.decode($0.data) as AlertFeedReference).alertID }
            #expect(Set(alertIDs) == Set((0..<14).map { "a\($0)" }))
            #expect(alertIDs.count == 14)

            let bad = try SSETestClient(port: s.port, token: dispatcher, lastEventID: "banana")
            defer { bad.close() }
            var status: Int?
            for await item in bad.items {
                if case .status(let code) = item {
                    status = code
                    break
                }
            }
            #expect(status == 400)
        }
    }

    @Test("a device silent past the threshold raises device_silent; its return clears it", arguments: Backend.enabled)
    func silence(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            // A heartbeat: a batch without readings.
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token).status == 200)

            s.wall.advance(milliseconds: 60_000)
            await s.runJobs(advancingBy: .seconds(5))
            s.wall.advance(milliseconds: 31_000)
            await s.runJobs(advancingBy: .seconds(5))
            let silent = try await feed.nextEvents(1)
            #expect(silent.map(\.event) == ["device_silent"])
            let data = try #require(try JSONSerialization.jsonObject(with: Data(silent[0].data.utf8)) as? [String: Any])
            #expect(data["device_id"] as? String == "pi-0001")
            #expect((data["silent_for_ms"] as? NSNumber)?.int64Value == 91_000)
            // Reported once, not on every check.
            s.wall.advance(milliseconds: 60_000)
            await s.runJobs(advancingBy: .seconds(5))
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token).status == 200)
            let returned = try await feed.nextEvents(1)
            #expect(returned.map(\.event) == ["device_returned"])
            let metrics = try await s.client.send("GET", "/metrics")
            #expect(metrics.text.contains("trackme_server_devices_silenced_total 1\n"))
            #expect(MetricsScrape(metrics.text).value("trackme_server_devices_silent") == 0)
        }
    }

    @Test("retention deletes readings older than the period and keeps alerts", arguments: Backend.enabled)
    func retention(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token).status == 200)
            _ = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "kept")))
            s.wall.advance(milliseconds: 30 * 86_400_000)
            #expect(
                try await s.send(Sample.batch("pi-0001", seq: 2, readings: [Sample.heartRate(seq: 2, wall: s.wall.now)]), token: token).status == 200
            )
            s.wall.advance(milliseconds: 31 * 86_400_000)
            // The jobs' monotonic clock moves with the wall clock: a wall clock that moved alone
            // is a jump, which retention refuses (see `retentionRefusesClockJump`).
            await s.runJobs(advancingBy: .seconds(61 * 86_400))
            #expect(try await s.readings("pi-0001").map { $0["seq"] as? Int } == [2])
            let counts = try await s.server.store.counts()
            #expect(counts.alerts == 1)
        }
    }

    // MARK: - Plain endpoints

    @Test("health, metrics, the OpenAPI document, and unknown paths", arguments: Backend.enabled)
    func plainEndpoints(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let health = try await s.client.send("GET", "/health")
            #expect(health.status == 200)
            #expect(health.object["status"] as? String == "ok")
            let metrics = try await s.client.send("GET", "/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.text.contains("# TYPE trackme_server_readings_stored_total counter"))
            #expect(metrics.text.contains("trackme_server_responses_total{status=\"200\"}"))
            let openapi = try await s.client.send("GET", "/openapi.yaml")
            #expect(openapi.text.hasPrefix("openapi: 3.1.0"))
            for path in [
                "/v1/batches", "/v1/alerts", "/v1/alerts/stream", "/v1/alerts/{id}/ack", "/v1/devices/{id}/readings", "/v1/devices",
                "/v1/dispatchers",
            ] {
                #expect(openapi.text.contains("  \(path):"))
            }
            let unknown = try await s.client.send("GET", "/v2/nothing")
            #expect(unknown.status == 404)
            #expect(unknown.errorCode == "not_found")
        }
    }
}

extension Data {
    /// The same JSON with `"version":1` replaced by version 2.
    fileprivate func replacingVersion() -> Data {
        Data(String(decoding: self, as: UTF8.self).replacingOccurrences(of: "\"version\":1", with: "\"version\":2").utf8)
    }
}
