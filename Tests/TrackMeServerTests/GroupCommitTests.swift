import Foundation
import GRDB
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO
#endif

/// Group commit across devices (issue 22), on both stores: batches arriving together share one
/// transaction (one commit), and one that fails inside the group is rolled back alone.
@Suite("group commit")
struct GroupCommitTests {
    static func groupCommit(_ s: TestServer) throws -> IngestGroupCommit {
        if let sqlite = s.server.ingestStore as? SQLiteIngestStore { return sqlite.groupCommit }
        #if PostgreSQL
        if let postgres = s.server.ingestStore as? PostgresIngestStore { return postgres.groupCommit }
        #endif
        throw RawSocket.Failure(description: "no group commit in \(s.server.store.displayName)")
    }

    /// Batches with a store epoch read this table: without it they fail, the others not.
    static func dropEpochTable(_ s: TestServer) async throws {
        if let sqlite = s.server.store as? SQLiteServerStore {
            try await sqlite.pool.write { db in try db.execute(sql: "DROP TABLE device_epochs") }
        }
        #if PostgreSQL
        if let postgres = s.server.store as? PostgresServerStore {
            try await postgres.client.query("DROP TABLE device_epochs", logger: postgres.logger)
        }
        #endif
    }

    static func batch(_ deviceID: String, seq: Int64, epoch: String? = nil) -> IncomingBatch {
        let readings = (1...10).map { n -> ReadingRow in
            let sequence = (seq - 1) * 10 + Int64(n)
            return ReadingRow(
                sequence: sequence,
                kind: .heartRate,
                placedMilliseconds: TestServer.startWall + sequence * 1000,
                wallMilliseconds: nil,
                timeFlag: nil,
                body: #"{"seq":\#(sequence)}"#
            )
        }
        return IncomingBatch(
            deviceID: deviceID,
            batchSequence: seq,
            droppedByBudget: 0,
            heartbeatJSON: nil,
            readings: readings,
            receivedMilliseconds: TestServer.startWall,
            storeEpoch: epoch
        )
    }

    @Test("200 devices' batches at once: every one stored, in far fewer transactions than batches", arguments: Backend.enabled)
    func grouped(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let store = s.server.ingestStore
            let groupCommit = try Self.groupCommit(s)
            for index in 0..<200 { _ = try await s.enrol("pi-\(index)") }
            let before = groupCommit.transactions
            let results = try await withThrowingTaskGroup(of: IngestResult.self) { group in
                for index in 0..<200 { group.addTask { try await store.ingest(Self.batch("pi-\(index)", seq: 1)) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 200)
            #expect(results.allSatisfy { $0.stored == 10 && !$0.replayed })
            let transactions = groupCommit.transactions - before
            #expect(transactions < 200, "\(transactions) transactions for 200 batches")
            for index in [0, 99, 199] { #expect(try await s.server.storedSequences(deviceID: "pi-\(index)") == Array(1...10)) }
        }
    }

    @Test("a group stops before the batch that would take it past its readings: an alert between two groups waits for a bounded one")
    func groupBoundedInReadings() async throws {
        // A writer that does nothing by itself: the test takes the groups as a writer would.
        let commit = IngestGroupCommit(maxGroup: 512, maxGroupReadings: 25) { _ in }
        let callers = Task {
            try await withThrowingTaskGroup(of: IngestResult.self) { group in
                for seq in 1...4 { group.addTask { try await commit.ingest(Self.batch("pi-bound", seq: Int64(seq))) } }
                return try await group.reduce(into: [IngestResult]()) { $0.append($1) }
            }
        }
        try await eventually("four batches waiting", within: .seconds(60)) { commit.waitingBatches == 4 }
        var sizes: [Int] = []
        while let group = commit.nextGroup() {
            sizes.append(group.batches.count)
            group.complete(
                group.batches.map { .success(IngestResult(stored: $0.readings.count, duplicates: 0, acknowledgedAlerts: [], replayed: false)) }
            )
        }
        // Ten readings a batch: two fit in 25, the third would make 30.
        #expect(sizes == [2, 2])
        #expect(try await callers.value.count == 4)
        #expect(commit.transactions == 2)

        // A batch larger than the bound alone is still taken, alone.
        let large = IngestGroupCommit(maxGroup: 512, maxGroupReadings: 5) { _ in }
        let caller = Task { try await large.ingest(Self.batch("pi-bound", seq: 1)) }
        try await eventually("one batch waiting", within: .seconds(60)) { large.waitingBatches == 1 }
        let group = try #require(large.nextGroup())
        #expect(group.batches.count == 1)
        group.complete([.success(IngestResult(stored: 10, duplicates: 0, acknowledgedAlerts: [], replayed: false))])
        #expect(try await caller.value.stored == 10)
    }

    @Test("a batch that fails inside a group is rolled back alone; the others in the same transaction are stored", arguments: Backend.enabled)
    func failureIsolated(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let store = s.server.ingestStore
            for index in 0..<40 { _ = try await s.enrol("pi-\(index)") }
            try await Self.dropEpochTable(s)
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

    #if PostgreSQL
    @Test("PostgreSQL: a batch whose reply news cannot be read is still stored and acknowledged")
    func newsFailureKeepsTheBatch() async throws {
        try await TestServer.with(.postgres) { s in
            _ = try await s.enrol("pi-news")
            let postgres = try #require(s.server.store as? PostgresServerStore)
            try await postgres.client.query("DROP TABLE care_settings", logger: postgres.logger)
            let result = try await s.server.ingestStore.ingest(Self.batch("pi-news", seq: 1))
            #expect(result.stored == 10)
            #expect(result.news == DeviceNews())
            #expect(try await s.server.storedSequences(deviceID: "pi-news") == Array(1...10))
        }
    }
    #endif
}

/// Every request reads its token on the calling thread (`SQLiteServerStore.token(id:)`); done
/// on the pool's readers, pool threads waiting for a free one starved the async reads holding
/// them, and the server hung at 18,000 devices.
@Suite("SQLite token lookup")
struct SQLiteTokenLookupTests {
    @Test("a token is read while every pool reader is held by another read")
    func tokenReadNeedsNoPoolReader() async throws {
        try await TestServer.with(.sqlite) { s in
            let token = try await s.enrol("pi-token")
            let id = try #require(BearerToken(authorization: "Bearer \(token)")).id
            let store = try #require(s.server.store as? SQLiteServerStore)
            let readers = store.pool.configuration.maximumReaderCount
            let gate = ReaderGate()
            // Each read holds its reader until released (or, should the lookup wait for one of
            // them, gives up after 30 s, so that the failure is an expectation and not a hang).
            let holders = (0..<readers).map { _ in Task { try await store.pool.read { _ in gate.hold() } } }
            await BlockingThreads.shared.run { gate.waitUntilHeld(readers) }
            let found = try await store.token(id: id)
            let gaveUp = gate.release()
            for holder in holders { try await holder.value }
            #expect(found?.deviceID == "pi-token")
            #expect(!gaveUp, "the lookup waited for a pool reader")
        }
    }

    /// Holds readers until released (`BlockingThreadsTests.Barrier` waits for a count instead).
    final class ReaderGate: @unchecked Sendable {
        // Sound: every stored property is only touched under `condition`.
        private let condition = NSCondition()
        private var holding = 0
        private var released = false
        private var gaveUp = false

        func hold() {
            condition.lock()
            defer { condition.unlock() }
            holding += 1
            condition.broadcast()
            let deadline = Date().addingTimeInterval(30)
            while !released {
                if !condition.wait(until: deadline) {
                    gaveUp = true
                    return
                }
            }
        }

        func waitUntilHeld(_ count: Int) {
            condition.lock()
            defer { condition.unlock() }
            while holding < count { condition.wait() }
        }

        /// Lets the holders go; whether one of them had already given up waiting.
        func release() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            released = true
            condition.broadcast()
            return gaveUp
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
