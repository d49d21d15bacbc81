import Foundation
import GRDB
import Logging
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO
#endif

/// The ingest room's store, held to one contract on every backend: the same cases, run on
/// SQLite and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("IngestStore contract")
struct IngestStoreContractTests {
    static let start: Int64 = 1_795_000_000_000

    /// A freshly migrated database of `backend`, the hall's store and intake's over it, and one
    /// enrolled device (`pi-0001`).
    static func withStores(_ backend: Backend, _ body: (any ServerStore, any IngestStore) async throws -> Void) async throws {
        let location: StorageLocation
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-contract-\(UUID().uuidString)")
        switch backend {
        case .sqlite:
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            location = .sqlite(path: directory.appendingPathComponent("server.sqlite").path)
        case .postgres:
            #if PostgreSQL
            location = .postgres(url: try await PostgresFixture.shared.createDatabase())
            #else
            Issue.record("PostgreSQL needs the PostgreSQL trait")
            return
            #endif
        }
        var logger = Logger(label: "test.ingest-contract")
        logger.logLevel = .warning
        let (hall, ingest) = try await TrackMeServer.openStores(location, logger: logger)
        do {
            try await hall.migrate()
            try await enrol("pi-0001", on: hall)
            try await body(hall, ingest)
        } catch {
            try? await hall.close()
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        try await hall.close()
        try? FileManager.default.removeItem(at: directory)
    }

    static func enrol(_ deviceID: String, on hall: any ServerStore) async throws {
        let enrolled = try await hall.enrolDevice(
            DeviceRow(deviceID: deviceID, person: PersonProfile(name: "Ada", age: 70), enrolledMilliseconds: start),
            token: StoredToken(id: "tok-\(deviceID)", secretHash: String(repeating: "0", count: 64), role: .device, deviceID: deviceID)
        )
        try #require(enrolled)
    }

    static func batch(
        _ deviceID: String = "pi-0001",
        seq: Int64,
        readings: [Int64],
        epoch: String? = nil,
        received: Int64 = start,
        bpm: Int = 72
    ) -> IncomingBatch {
        let rows = readings.map { sequence in
            ReadingRow(
                sequence: sequence,
                kind: .heartRate,
                placedMilliseconds: start + sequence % 100_000 * 1000,
                wallMilliseconds: start + sequence % 100_000 * 1000,
                timeFlag: nil,
                body: #"{"seq":\#(sequence),"bpm":\#(bpm)}"#
            )
        }
        return IncomingBatch(
            deviceID: deviceID,
            batchSequence: seq,
            droppedByBudget: 0,
            heartbeatJSON: nil,
            readings: rows,
            receivedMilliseconds: received,
            storeEpoch: epoch,
            digest: BatchDigest.digest(readings: rows, droppedByBudget: 0)
        )
    }

    static func stored(_ hall: any ServerStore, _ deviceID: String = "pi-0001") async throws -> [Int64] {
        let query = ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: 0, limit: 1000)
        return try await hall.readings(query).map(\.sequence)
    }

    @Test("a batch is stored once; the same batch again is answered with what its first delivery stored", arguments: Backend.enabled)
    func storedOnce(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            let first = try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2, 3]))
            #expect(first.stored == 3 && first.duplicates == 0 && !first.replayed && first.conflict == nil)
            // Another batch in between: the replay still answers the first delivery's counts.
            #expect(try await ingest.ingest(Self.batch(seq: 2, readings: [3, 4])).stored == 1)
            let again = try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2, 3], received: Self.start + 60_000))
            #expect(again.replayed && again.stored == 3 && again.duplicates == 0 && again.conflict == nil)
            #expect(try await Self.stored(hall) == [1, 2, 3, 4])
        }
    }

    @Test("a reading sent again under a new batch is a duplicate, kept once", arguments: Backend.enabled)
    func readingsExactlyOnce(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2])).stored == 2)
            let resent = try await ingest.ingest(Self.batch(seq: 2, readings: [2, 3]))
            #expect(resent.stored == 1 && resent.duplicates == 1 && !resent.replayed)
            #expect(try await Self.stored(hall) == [1, 2, 3])
        }
    }

    @Test("a key used again with other readings stores nothing and answers floors above everything held", arguments: Backend.enabled)
    func keyReused(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2], epoch: "epoch-a")).stored == 2)
            #expect(try await ingest.ingest(Self.batch(seq: 2, readings: [5], epoch: "epoch-a")).stored == 1)
            let reused = try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2], epoch: "epoch-a", bpm: 99))
            #expect(reused.conflict == IngestConflict(reason: .idempotencyKeyReused, sequenceFloor: 6, batchSequenceFloor: 3))
            #expect(reused.stored == 0 && reused.duplicates == 0)
            #expect(try await Self.stored(hall) == [1, 2, 5])
            // The epoch's floors moved with the 409: numbers below them are not taken afterwards,
            // even ones never stored.
            let below = try await ingest.ingest(Self.batch(seq: 3, readings: [3, 4], epoch: "epoch-a"))
            #expect(below.conflict == IngestConflict(reason: .storeEpochRebase, sequenceFloor: 6, batchSequenceFloor: 3))
            // Re-based above the floors, the readings are taken.
            let rebased = try await ingest.ingest(Self.batch(seq: 3, readings: [6, 7], epoch: "epoch-a"))
            #expect(rebased.stored == 2 && rebased.conflict == nil)
            #expect(try await Self.stored(hall) == [1, 2, 5, 6, 7])
        }
    }

    @Test("a store that started over numbers above the floors after its 409; below them it is refused again", arguments: Backend.enabled)
    func epochRebase(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2, 3], epoch: "epoch-a")).stored == 3)
            #expect(try await ingest.ingest(Self.batch(seq: 2, readings: [4, 5], epoch: "epoch-a")).stored == 2)
            // The device's store was wiped: it numbers from 1 again under a new epoch.
            let restarted = try await ingest.ingest(Self.batch(seq: 1, readings: [1, 2], epoch: "epoch-b"))
            #expect(restarted.conflict == IngestConflict(reason: .storeEpochRebase, sequenceFloor: 6, batchSequenceFloor: 3))
            #expect(try await Self.stored(hall) == [1, 2, 3, 4, 5])
            // The floors stay with the epoch: a batch still below them is refused the same way.
            let stillBelow = try await ingest.ingest(Self.batch(seq: 3, readings: [5, 6], epoch: "epoch-b"))
            #expect(stillBelow.conflict?.reason == .storeEpochRebase)
            #expect(stillBelow.conflict?.sequenceFloor == 6)
            let rebased = try await ingest.ingest(Self.batch(seq: 3, readings: [6, 7], epoch: "epoch-b"))
            #expect(rebased.conflict == nil && rebased.stored == 2)
            #expect(try await Self.stored(hall) == [1, 2, 3, 4, 5, 6, 7])
        }
    }

    @Test("numbers at the wire's largest re-base above it; a device holding the largest integer is refused, not trapped", arguments: Backend.enabled)
    func hugeSequenceNumbers(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            let largest = SyncBatch.largestNumber
            #expect(try await ingest.ingest(Self.batch(seq: largest, readings: [largest], epoch: "epoch-a")).stored == 1)
            let restarted = try await ingest.ingest(Self.batch(seq: 1, readings: [1], epoch: "epoch-b"))
            #expect(restarted.conflict == IngestConflict(reason: .storeEpochRebase, sequenceFloor: largest + 1, batchSequenceFloor: largest + 1))
            // Nothing fits above Int64.max: the re-base is an error, the batch stores nothing, and
            // the store goes on serving other devices.
            try await Self.enrol("pi-0002", on: hall)
            #expect(try await ingest.ingest(Self.batch("pi-0002", seq: Int64.max, readings: [Int64.max], epoch: "epoch-a")).stored == 1)
            await #expect(throws: (any Error).self) {
                try await ingest.ingest(Self.batch("pi-0002", seq: 1, readings: [1], epoch: "epoch-b"))
            }
            #expect(try await Self.stored(hall, "pi-0002") == [Int64.max])
            #expect(try await ingest.ingest(Self.batch(seq: largest + 1, readings: [largest + 1], epoch: "epoch-b")).stored == 1)
        }
    }

    @Test("a batch whose write fails part-way leaves no trace: its key stays free and the retry is stored whole", arguments: Backend.enabled)
    func failedWriteLeavesNoTrace(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1], epoch: "epoch-a")).stored == 1)
            // The acknowledgements are read after the readings are written: with their table gone,
            // the batch fails after its readings went in.
            try await Self.execute("ALTER TABLE alerts RENAME TO alerts_away", on: hall)
            await #expect(throws: (any Error).self) {
                try await ingest.ingest(Self.batch(seq: 2, readings: [2, 3], epoch: "epoch-a"))
            }
            try await Self.execute("ALTER TABLE alerts_away RENAME TO alerts", on: hall)
            #expect(try await Self.stored(hall) == [1])
            let retried = try await ingest.ingest(Self.batch(seq: 2, readings: [2, 3], epoch: "epoch-a"))
            #expect(!retried.replayed && retried.stored == 2 && retried.conflict == nil)
            #expect(try await Self.stored(hall) == [1, 2, 3])
        }
    }

    /// Raw SQL on either backend (a test's own way to break the schema).
    static func execute(_ sql: String, on hall: any ServerStore) async throws {
        if let sqlite = hall as? SQLiteServerStore {
            try await sqlite.pool.write { db in try db.execute(sql: sql) }
            return
        }
        #if PostgreSQL
        if let postgres = hall as? PostgresServerStore {
            try await postgres.client.query(PostgresQuery(unsafeSQL: sql), logger: postgres.logger)
            return
        }
        #endif
        Issue.record("no raw SQL for \(hall.displayName)")
    }

    @Test("acknowledged alerts are handed to the device once, and again in the replay of the batch that carried them", arguments: Backend.enabled)
    func acknowledgementsHandedOver(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            let update = Sample.alert("pi-0001", id: "alert-1")
            let recorded = try await ingest.recordAlertUpdate(
                update,
                body: try StoreJSON.encode(update),
                feedData: "{}",
                receivedMilliseconds: Self.start
            )
            #expect(recorded == .accepted(AlertIntakeResult(duplicate: false, acknowledged: false)))
            #expect(
                try await hall.acknowledgeAlert(id: "alert-1", by: "dispatcher-1", atMilliseconds: Self.start + 1000)
                    == .acknowledged(deviceID: "pi-0001")
            )
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1])).acknowledgedAlerts == ["alert-1"])
            #expect(try await ingest.ingest(Self.batch(seq: 2, readings: [2])).acknowledgedAlerts == [])
            let replay = try await ingest.ingest(Self.batch(seq: 1, readings: [1]))
            #expect(replay.replayed && replay.acknowledgedAlerts == ["alert-1"])
        }
    }

    @Test("an alert update's answer says whether a dispatcher has acknowledged and resolved the alert", arguments: Backend.enabled)
    func alertStateInTheAnswer(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            let raised = Sample.alert("pi-0001", id: "alert-1")
            let body = try StoreJSON.encode(raised)
            let recorded = try await ingest.recordAlertUpdate(raised, body: body, feedData: "{}", receivedMilliseconds: Self.start)
            #expect(recorded == .accepted(.init(duplicate: false, acknowledged: false, resolved: false)))
            #expect(
                try await hall.acknowledgeAlert(id: "alert-1", by: "dispatcher-1", atMilliseconds: Self.start + 10)
                    == .acknowledged(deviceID: "pi-0001")
            )
            #expect(
                try await hall.resolveAlert(id: "alert-1", outcome: .helpArrived, by: "dispatcher-1", atMilliseconds: Self.start + 20)
                    == .resolved(deviceID: "pi-0001")
            )
            let position = Sample.alert("pi-0001", id: "alert-1", updateSeq: 1, type: .position)
            let afterwards = try await ingest.recordAlertUpdate(
                position,
                body: try StoreJSON.encode(position),
                feedData: "{}",
                receivedMilliseconds: Self.start + 30
            )
            #expect(afterwards == .accepted(.init(duplicate: false, acknowledged: true, resolved: true)))
        }
    }

    @Test("an alert update is stored once per sequence; another device's alert id is refused and changes nothing", arguments: Backend.enabled)
    func alertIntake(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            try await Self.enrol("pi-0002", on: hall)
            let raised = Sample.alert("pi-0001", id: "alert-1")
            let body = try StoreJSON.encode(raised)
            #expect(
                try await ingest.recordAlertUpdate(raised, body: body, feedData: "{}", receivedMilliseconds: Self.start)
                    == .accepted(.init(duplicate: false, acknowledged: false))
            )
            #expect(
                try await ingest.recordAlertUpdate(raised, body: body, feedData: "{}", receivedMilliseconds: Self.start + 5)
                    == .accepted(.init(duplicate: true, acknowledged: false))
            )
            let events = try await hall.feedEvents(after: 0, limit: 100).filter { $0.kind == FeedKind.alert }
            #expect(events.count == 1)
            let foreign = Sample.alert("pi-0002", id: "alert-1", updateSeq: 1, type: .position)
            #expect(
                try await ingest.recordAlertUpdate(foreign, body: try StoreJSON.encode(foreign), feedData: "{}", receivedMilliseconds: Self.start + 9)
                    == .foreignAlert
            )
            #expect(try await hall.alertUpdates(alertID: "alert-1").map(\.updateSequence) == [0])
        }
    }

    @Test("a heartbeat is contact: it ends a silence with one device_returned event", arguments: Backend.enabled)
    func heartbeatEndsSilence(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            #expect(try await ingest.ingest(Self.batch(seq: 1, readings: [1])).stored == 1)
            #expect(try await hall.markSilentDevices(lastSeenBefore: Self.start + 1, nowMilliseconds: Self.start + 100_000) == ["pi-0001"])
            try await ingest.recordHeartbeat(
                deviceID: "pi-0001",
                heartbeatJSON: #"{"strap":"connected"}"#,
                receivedMilliseconds: Self.start + 200_000
            )
            try await ingest.recordHeartbeat(deviceID: "pi-0001", heartbeatJSON: #"{"strap":"lost"}"#, receivedMilliseconds: Self.start + 205_000)
            let kinds = try await hall.feedEvents(after: 0, limit: 100).map(\.kind)
            #expect(kinds == [FeedKind.deviceSilent, FeedKind.deviceReturned])
            let contact = try await hall.deviceContact(id: "pi-0001")
            #expect(contact.heartbeatJSON == #"{"strap":"lost"}"# && contact.lastSeenMilliseconds == Self.start + 205_000)
        }
    }

    @Test("the device row intake files against, and no wipe order for a token never erased", arguments: Backend.enabled)
    func deviceAndWipeOrder(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, ingest in
            let device = try #require(try await ingest.device(id: "pi-0001"))
            #expect(try await hall.device(id: "pi-0001") == device)
            #expect(device.person.name == "Ada")
            #expect(try await ingest.device(id: "pi-none") == nil)
            #expect(try await ingest.wipeOrder(tokenDigest: WipeOrderDigest.of(tokenID: "tok-pi-0001", secretHash: "x")) == nil)
        }
    }
}
