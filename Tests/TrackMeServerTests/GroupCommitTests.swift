import Foundation
import GRDB
import Testing
import TrackMeCore
@testable import TrackMeServer

/// Group commit across devices on SQLite (issue 22): batches arriving together share one
/// transaction (one fsync), and one that fails inside the group is rolled back alone.
@Suite("SQLite group commit")
struct GroupCommitTests {
    static func batch(_ deviceID: String, seq: Int64, epoch: String? = nil) -> IncomingBatch {
        let readings = (1...10).map { n -> ReadingRow in
            let sequence = (seq - 1) * 10 + Int64(n)
            return ReadingRow(
                sequence: sequence, kind: .heartRate, placedMilliseconds: TestServer.startWall + sequence * 1000, wallMilliseconds: nil,
                timeFlag: nil, body: #"{"seq":\#(sequence)}"#)
        }
        return IncomingBatch(
            deviceID: deviceID, batchSequence: seq, droppedByBudget: 0, heartbeatJSON: nil, readings: readings,
            receivedMilliseconds: TestServer.startWall, storeEpoch: epoch)
    }

    @Test("200 devices' batches at once: every one stored, in far fewer transactions than batches")
    func grouped() async throws {
        try await TestServer.with(.sqlite) { s in
            let store = try #require(s.server.store as? SQLiteServerStore)
            for index in 0..<200 { _ = try await s.enrol("pi-\(index)") }
            let before = store.groupCommit.transactions
            let results = try await withThrowingTaskGroup(of: IngestResult.self) { group in
                for index in 0..<200 { group.addTask { try await store.ingest(Self.batch("pi-\(index)", seq: 1)) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 200)
            #expect(results.allSatisfy { $0.stored == 10 && !$0.replayed })
            let transactions = store.groupCommit.transactions - before
            #expect(transactions < 200, "\(transactions) transactions for 200 batches")
            for index in [0, 99, 199] { #expect(try await s.server.storedSequences(deviceID: "pi-\(index)") == Array(1...10)) }
        }
    }

    @Test("a batch that fails inside a group is rolled back alone; the others in the same transaction are stored")
    func failureIsolated() async throws {
        try await TestServer.with(.sqlite) { s in
            let store = try #require(s.server.store as? SQLiteServerStore)
            for index in 0..<40 { _ = try await s.enrol("pi-\(index)") }
            // Batches with a store epoch read this table: without it they fail, the others not.
            try await store.pool.write { db in try db.execute(sql: "DROP TABLE device_epochs") }
            let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let result = try? await store.ingest(Self.batch("pi-\(index)", seq: 1, epoch: index % 2 == 0 ? "epoch-\(index)" : nil))
                        return (index, result?.stored == 10)
                    }
                }
                return await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            for index in 0..<40 {
                let stored = try await s.server.storedSequences(deviceID: "pi-\(index)")
                if index % 2 == 0 {
                    #expect(outcomes[index] == false, "pi-\(index)'s batch should have failed")
                    #expect(stored.isEmpty, "pi-\(index): a failed batch left rows")
                } else {
                    #expect(outcomes[index] == true)
                    #expect(stored == Array(1...10))
                }
            }
        }
    }
}

/// The server acknowledges a batch only once it is on disk: every connection of the SQLite pool
/// runs `synchronous = FULL` (GRDB's WAL set-up would otherwise leave NORMAL).
@Suite("SQLite server durability")
struct ServerDurabilityTests {
    @Test("the writer and the readers run synchronous = FULL")
    func synchronousFull() async throws {
        try await TestServer.with(.sqlite) { s in
            let store = try #require(s.server.store as? SQLiteServerStore)
            let writer = try await store.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            let reader = try await store.pool.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            #expect(writer == 2)
            #expect(reader == 2)
        }
    }
}
