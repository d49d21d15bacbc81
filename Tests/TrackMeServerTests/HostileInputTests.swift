import Foundation
import GRDB
import Testing
import TrackMeCore

@testable import TrackMeServer

/// What one device token can send must not kill the server or wedge the device: numbers the
/// database cannot carry back are refused at the edge, and values already stored are read with
/// throwing decodes.
@Suite("Hostile input")
struct HostileInputTests {
    static let huge = Int64.max

    /// A heart rate numbered `seq` whose timestamp does not depend on it (Sample's multiplies).
    static func reading(seq: Int64) -> WireReading {
        WireReading(
            sequence: seq,
            timestamp: Sample.timestamp(wall: TestServer.startWall),
            payload: .heartRate(HeartRateReading(bpm: 72, contact: .detected, rrIntervals: []))
        )
    }

    static func batch(_ device: String, epoch: String, seq: Int64, readings: [WireReading]) -> SyncBatch {
        var batch = Sample.batch(device, seq: seq, readings: readings)
        batch.storeEpoch = epoch
        return batch
    }

    @Test(
        "a seq, batch_seq, dropped_by_budget or update_seq above 2^53-1 is a 422 naming the field; the device's next batches and re-base work",
        arguments: Backend.enabled
    )
    func numbersOutOfRange(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let seq = try await s.send(
                Self.batch("pi-0001", epoch: "00000000000000aa", seq: 1, readings: [Self.reading(seq: Self.huge)]),
                token: token
            )
            try #require(seq.status == 422, "\(seq.text)")
            #expect(seq.errorField == "readings[0].seq")
            #expect(seq.errorCode == "invalid_value")
            let batchSeq = try await s.send(
                Self.batch("pi-0001", epoch: "00000000000000aa", seq: Self.huge, readings: [Self.reading(seq: 1)]),
                token: token
            )
            #expect(batchSeq.status == 422)
            #expect(batchSeq.errorField == "batch_seq")
            var dropped = Self.batch("pi-0001", epoch: "00000000000000aa", seq: 1, readings: [Self.reading(seq: 1)])
            dropped.droppedByBudget = Self.huge
            let droppedAnswer = try await s.send(dropped, token: token)
            #expect(droppedAnswer.status == 422)
            #expect(droppedAnswer.errorField == "dropped_by_budget")
            var alert = Sample.alert("pi-0001", id: "alert-huge")
            alert.updateSequence = Int(Self.huge)
            let alertAnswer = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(alert))
            #expect(alertAnswer.status == 422)
            #expect(alertAnswer.errorField == "update_seq")
            #expect(try await s.server.store.counts().readings == 0)
            #expect(try await s.server.store.counts().alerts == 0)

            // The largest number is taken, and the floors one above it still fit both databases.
            let largest = SyncBatch.largestNumber
            let top = Self.batch("pi-0001", epoch: "00000000000000aa", seq: largest, readings: [Self.reading(seq: largest)])
            #expect(try await s.send(top, token: token).status == 200)
            let restarted = Self.batch("pi-0001", epoch: "00000000000000bb", seq: 1, readings: [Self.reading(seq: 1)])
            let refused = try await s.send(restarted, token: token)
            #expect(refused.status == 409, "\(refused.text)")
            let conflict = try WireCodec.decode(BatchConflict.self, from: refused.body)
            #expect(conflict.sequenceFloor == largest + 1)
            #expect(conflict.batchSequenceFloor == largest + 1)
            // Asked again, the same answer: never a 500 the device cannot get past.
            #expect(try await s.send(restarted, token: token).status == 409)
            #expect(try await s.client.send("GET", "/health").status == 200)
        }
    }

    @Test("a key twice in one JSON object is a 400 naming it, in a batch or an alert; nothing is stored", arguments: Backend.enabled)
    func duplicateKeys(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let batch = Sample.batch("pi-0001", seq: 1, readings: [Self.reading(seq: 1)])
            let text = try #require(WireFastPath.canonicalJSON(batch))
            try #require(text.contains("\"seq\":1,\"t\""))
            for (body, field) in [
                (text.replacingOccurrences(of: "\"seq\":1,\"t\"", with: "\"seq\":1,\"seq\":2,\"t\""), "readings[0].seq"),
                (text.replacingOccurrences(of: "\"batch_seq\":1,", with: "\"batch_seq\":1,\"batch_seq\":1,"), "batch_seq"),
                // The same key spelled with an escape is the same key.
                (text.replacingOccurrences(of: "\"version\":1}", with: "\"version\":1,\"vers\\u0069on\":1}"), "version"),
            ] {
                let response = try await s.client.send(
                    "POST",
                    "/v1/batches",
                    token: token,
                    body: Data(body.utf8),
                    headers: ["Idempotency-Key": batch.idempotencyKey]
                )
                #expect(response.status == 400, "\(body): \(response.text)")
                #expect(response.errorField == field)
            }
            let alert = String(decoding: try WireCodec.encode(Sample.alert("pi-0001", id: "dup")), as: UTF8.self)
            try #require(alert.contains("\"update_seq\""))
            let doubled = alert.replacingOccurrences(of: "\"update_seq\"", with: "\"update_seq\":5,\"update_seq\"")
            let answer = try await s.client.send("POST", "/v1/alerts", token: token, body: Data(doubled.utf8))
            #expect(answer.status == 400, "\(answer.text)")
            #expect(answer.errorField == "update_seq")
            #expect(try await s.server.store.counts().readings == 0)
            #expect(try await s.server.store.counts().alerts == 0)
        }
    }

    @Test("a database that already holds seq 2^63-1 answers the device's conflicting batch with an error, and the server serves the next request")
    func storedHugeNumberDoesNotTrap() async throws {
        try await TestServer.with(.sqlite) { s in
            let token = try await s.enrol("pi-0001")
            let other = try await s.enrol("pi-0002")
            #expect(
                try await s.send(Self.batch("pi-0001", epoch: "00000000000000aa", seq: 1, readings: [Self.reading(seq: 1)]), token: token).status
                    == 200
            )
            // As a server before the edge check stored it.
            let store = try #require(s.server.store as? SQLiteServerStore)
            try await store.pool.write { db in
                try db.execute(
                    sql: "INSERT INTO readings (device_id, seq, kind, placed_ms, received_ms, body) VALUES ('pi-0001', ?, 'hr', 0, 0, '{}')",
                    arguments: [Self.huge]
                )
            }
            let restarted = Self.batch("pi-0001", epoch: "00000000000000bb", seq: 2, readings: [Self.reading(seq: 2)])
            let answer = try await s.send(restarted, token: token)
            #expect(answer.status == 500)
            #expect(try await s.send(Sample.batch("pi-0002", seq: 1, readings: [Self.reading(seq: 1)]), token: other).status == 200)
            #expect(try await s.client.send("GET", "/health").status == 200)
        }
    }

    @Test("no database read in the server's sources uses GRDB's trapping Row subscript (row[\"x\"], row[0]): they decode with try row.decode")
    func noTrappingRowSubscripts() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/TrackMeServer")
        let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        // A Row value (named row, care, registered, token, or a closure's $0) subscripted by a
        // column name or an index.
        let pattern = try Regex(#"(\brow|\bcare|\bregistered|\btoken|\$0)\??\[("[a-z_]+"|[0-9])"#)
        var found: [String] = []
        for case let file as URL in enumerator where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            guard text.contains("import GRDB") else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(pattern) {
                found.append("\(file.lastPathComponent):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
