import EdgeBenchmarks
import Foundation
import GRDB
import Logging
import Testing
import TrackMeCore

@testable import EdgeStore

let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A fresh directory per test, removed afterwards.
final class TemporaryDirectory {
    let path: String
    init() throws {
        path = NSTemporaryDirectory() + "edgestore-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    var storePath: String { path + "/store.sqlite" }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

func newReadings(_ range: Range<Int>, bootID: String = SyntheticReadings.bootID) -> [NewReading] {
    range.map { i in
        let (t, p) = SyntheticReadings.reading(i, bootID: bootID)
        return NewReading(timestamp: t, payload: p)
    }
}

func alertUpdate(id: String, at mono: UInt64, bootID: String = SyntheticReadings.bootID, updateSequence: Int = 0) -> AlertUpdate {
    let t = ReadingTimestamp(monotonicNanoseconds: mono, bootID: bootID, wallClockMilliseconds: nil, wallClockTrusted: false)
    let record = AlertRecord(id: id, deviceID: "pi-0042", kind: .noPulse, state: .raised, firstCritical: t, raised: t)
    return AlertUpdate(alert: record, updateSequence: updateSequence, type: updateSequence == 0 ? .raised : .position, sent: t)
}

@Suite("Reading body codec")
struct ReadingBodyCodecTests {
    static let payloads: [WireReading.Payload] = [
        .heartRate(HeartRateReading(bpm: 72, contact: .detected, energyExpendedKilojoules: nil, rrIntervals: [843, 829])),
        .heartRate(HeartRateReading(bpm: 0, contact: .notDetected, energyExpendedKilojoules: 65535, rrIntervals: [])),
        .heartRate(HeartRateReading(bpm: 300, contact: .unsupported, energyExpendedKilojoules: 12, rrIntervals: [UInt16.max, 0])),
        .position(
            PositionFix(
                time: "2034-11-27T20:26:40.000Z",
                mode: .threeDimensional,
                latitude: 44.068934,
                longitude: -121.3146,
                altitudeHAE: 1103.2,
                altitudeMSL: nil,
                speed: 0.03,
                track: nil,
                horizontalError: 4.1
            )
        ),
        .position(
            PositionFix(
                time: nil,
                mode: .none,
                latitude: nil,
                longitude: nil,
                altitudeHAE: nil,
                altitudeMSL: nil,
                speed: nil,
                track: nil,
                horizontalError: nil
            )
        ),
        // Values a scaled integer cannot carry exactly, and a time in a non-canonical form.
        .position(
            PositionFix(
                time: "2034-11-27T20:26:40Z",
                mode: .twoDimensional,
                latitude: 44.0689341234567891,
                longitude: -0.0,
                altitudeHAE: 1e300,
                altitudeMSL: -.pi,
                speed: .ulpOfOne,
                track: 359.9999,
                horizontalError: 0
            )
        ),
        .position(
            PositionFix(
                time: "1969-12-31T23:59:59.999Z",
                mode: .threeDimensional,
                latitude: -90,
                longitude: 180,
                altitudeHAE: -430.5,
                altitudeMSL: 8848.86,
                speed: 340.29,
                track: 0.001,
                horizontalError: 9999.999
            )
        ),
    ]

    @Test("payloads round-trip exactly", arguments: payloads, [true, false])
    func roundTrip(payload: WireReading.Payload, trusted: Bool) throws {
        let bytes = ReadingBodyCodec.encode(payload, wallClockTrusted: trusted)
        let decoded = try ReadingBodyCodec.decode(bytes)
        #expect(decoded.payload == payload)
        #expect(decoded.wallClockTrusted == trusted)
        if case .position(let fix) = payload, let lon = fix.longitude, case .position(let back) = decoded.payload {
            #expect(back.longitude?.sign == lon.sign)
        }
    }

    @Test("truncated bodies throw instead of trapping")
    func truncated() throws {
        for payload in Self.payloads {
            let bytes = ReadingBodyCodec.encode(payload, wallClockTrusted: true)
            for cut in 0..<bytes.count where cut < bytes.count - 0 {
                let prefix = Array(bytes[0..<cut])
                if (try? ReadingBodyCodec.decode(prefix))?.payload == payload { continue }
                #expect(throws: ReadingBodyCodec.DecodingFailure.self) { try ReadingBodyCodec.decode(prefix) }
            }
        }
    }

    /// Found by the reading-body fuzzer (issue 16): a fix whose time text length is a varint past
    /// Int.max trapped in Int(_:), and a time far outside years 0-9999 overflowed, instead of
    /// throwing.
    @Test("a time length past Int.max or a time past year 9999 throws instead of trapping")
    func hugeTimeLength() {
        let bytes: [UInt8] = [0xb5, 0x90, 0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x06]
        #expect(throws: ReadingBodyCodec.DecodingFailure.self) { try ReadingBodyCodec.decode(bytes) }
        let longText: [UInt8] = [0xb5, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]
        #expect(throws: ReadingBodyCodec.DecodingFailure.self) { try ReadingBodyCodec.decode(longText) }
        // And a time in milliseconds near Int64.min overflowed the calendar arithmetic.
        let farTime: [UInt8] = [0xb5, 0x90, 0x20, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7d, 0x00, 0x06]
        #expect(throws: ReadingBodyCodec.DecodingFailure.self) { try ReadingBodyCodec.decode(farTime) }
    }
}

@Suite("Reading store")
struct ReadingStoreTests {
    @Test("appended readings come back exactly, with strictly increasing sequence numbers, after reopening")
    func appendAndReopen() throws {
        let dir = try TemporaryDirectory()
        let input = newReadings(0..<300)
        var seqs: [Int64] = []
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            seqs = try store.append(Array(input[0..<100])) + store.append(Array(input[100..<300]))
            store.close()
        }
        #expect(seqs == seqs.sorted() && Set(seqs).count == seqs.count)
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let back = try store.allReadings()
        #expect(back.map(\.reading.sequence) == seqs)
        #expect(back.map { NewReading(timestamp: $0.reading.timestamp, payload: $0.reading.payload) } == input)
        #expect(back.allSatisfy { !$0.synced })
        #expect(try store.integrityCheck() == ["ok"])
        #expect(try store.readings(sequences: [seqs[5], seqs[0]]).map(\.sequence) == [seqs[0], seqs[5]])
    }

    @Test("a sequence number is never handed out again, even after the newest readings were evicted")
    func sequenceNeverReused() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, diskBudgetBytes: 1), logger: quiet)
        let first = try store.append(newReadings(0..<50))
        // A budget of one byte evicts everything unprotected after each commit.
        #expect(store.statistics().readings < 50)
        let second = try store.append(newReadings(50..<60))
        #expect(try #require(second.first) > (first.last ?? .max))
    }

    @Test("group commit: readings wait in memory until the interval passes on the clock, then commit together")
    func groupCommitOnClock() async throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let clock = VirtualClock()
        let (commits, continuation) = AsyncStream.makeStream(of: [Int64].self)
        let committer = GroupCommitter(store: store, clock: clock, interval: .seconds(1), maxGroupSize: 1000) { continuation.yield($0) }
        let runner = Task { await committer.run() }
        for r in newReadings(0..<5) { committer.append(r.payload, at: r.timestamp) }
        await clock.waitForSleepers(1)
        #expect(store.statistics().readings == 0)
        clock.advance(by: .seconds(1))
        var iterator = commits.makeAsyncIterator()
        let committed = try #require(await iterator.next())
        #expect(committed.count == 5)
        #expect(store.statistics().readings == 5)
        runner.cancel()
        _ = await runner.value
    }

    @Test("group commit: a full group commits at once, and flush() commits the rest")
    func groupCommitBySize() async throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let committer = GroupCommitter(store: store, clock: VirtualClock(), interval: .seconds(1), maxGroupSize: 4)
        for r in newReadings(0..<6) { committer.append(r.payload, at: r.timestamp) }
        #expect(store.statistics().readings == 4)
        #expect(committer.flush().count == 2)
        #expect(store.statistics().readings == 6)
    }

    @Test("an alert update is durable when appendAlert returns and survives reopening with its state")
    func alertJournal() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            #expect(store.appendAlert(alertUpdate(id: "a1", at: 5)) == .durable)
            var cancelled = alertUpdate(id: "a1", at: 5, updateSequence: 1)
            cancelled.type = .cancelled
            cancelled.alert.state = .cancelled
            cancelled.alert.cancelReason = .iAmSafe
            #expect(store.appendAlert(cancelled) == .durable)
            store.close()
        }
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(store.pendingAlertUpdates().map(\.updateSequence) == [0, 1])
        #expect(try store.alertStates().map(\.alert.state) == [.cancelled])
        store.markAlertUpdateDelivered(alertID: "a1", updateSequence: 0)
        #expect(store.pendingAlertUpdates().map(\.updateSequence) == [1])
    }

    @Test("after a restart an alert's next update is numbered above every one journaled or delivered (and one possibly sent unrecorded)")
    func nextAlertUpdateSequence() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            #expect(try store.nextAlertUpdateSequence(alertID: "a1") == 2)
            #expect(store.appendAlert(alertUpdate(id: "a1", at: 5)) == .durable)
            #expect(try store.nextAlertUpdateSequence(alertID: "a1") == 2)
            // Position updates are sent, not journaled: only their delivery is recorded.
            for sequence in 1...7 { store.markAlertUpdateDelivered(alertID: "a1", updateSequence: sequence) }
            store.markAlertUpdateDelivered(alertID: "a1", updateSequence: 3)
            store.markAlertUpdateDelivered(alertID: "a2", updateSequence: 99)
            #expect(try store.nextAlertUpdateSequence(alertID: "a1") == 9)
            store.close()
        }
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(try store.nextAlertUpdateSequence(alertID: "a1") == 9)
        #expect(try store.nextAlertUpdateSequence(alertID: "a2") == 101)
        #expect(store.appendAlert(alertUpdate(id: "a1", at: 5, updateSequence: 12)) == .durable)
        #expect(try store.nextAlertUpdateSequence(alertID: "a1") == 14)
    }

    @Test("hasPendingAlertUpdates: false on a fresh store, true once an update is journaled, false once it is delivered")
    func hasPendingAlertUpdates() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(!store.hasPendingAlertUpdates())
        #expect(store.appendAlert(alertUpdate(id: "a1", at: 5)) == .durable)
        #expect(store.hasPendingAlertUpdates())
        #expect(store.appendAlert(alertUpdate(id: "a1", at: 5, updateSequence: 1)) == .durable)
        store.markAlertUpdateDelivered(alertID: "a1", updateSequence: 0)
        #expect(store.hasPendingAlertUpdates())
        store.markAlertUpdateDelivered(alertID: "a1", updateSequence: 1)
        #expect(!store.hasPendingAlertUpdates())
        #expect(store.pendingAlertUpdates().isEmpty)
        // Held in memory while the disk refuses it: still pending.
        try store.simulate(.diskFull)
        guard case .memoryOnly = store.appendAlert(alertUpdate(id: "a2", at: 9)) else {
            Issue.record("the alert journal wrote on a failing disk")
            return
        }
        #expect(store.hasPendingAlertUpdates())
        // Delivered while the disk still refuses to record it: no longer pending.
        store.markAlertUpdateDelivered(alertID: "a2", updateSequence: 0)
        #expect(!store.hasPendingAlertUpdates())
        #expect(store.pendingAlertUpdates().isEmpty)
    }

    @Test("a reserved batch survives a restart unchanged, and only its acknowledgement marks readings synced")
    func syncCursor() throws {
        let dir = try TemporaryDirectory()
        var reserved: ReservedBatch
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            try store.append(newReadings(0..<30))
            let beat = DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: 30, storeBytes: 1)
            reserved = try store.reserveBatch(deviceID: "pi-0042", readings: try store.oldestUnsynced(limit: 10), heartbeat: beat)
            #expect(try store.oldestUnsynced(limit: 100).count == 20)
            store.close()
        }
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let again = try store.inFlightBatches(deviceID: "pi-0042")
        #expect(again == [reserved])
        #expect(store.statistics().unsyncedReadings == 30)
        try store.acknowledge(batchSequence: reserved.batch.batchSequence)
        #expect(store.statistics().unsyncedReadings == 20)
        #expect(try store.inFlightBatches(deviceID: "pi-0042").isEmpty)
        let next = try store.reserveBatch(deviceID: "pi-0042", readings: [], heartbeat: nil)
        #expect(next.batch.batchSequence > reserved.batch.batchSequence)
    }

    @Test("disk budget: synced readings go first, then the oldest unsynced; alerts and their window stay; drops are reported")
    func budgetDropOrder() throws {
        let dir = try TemporaryDirectory()
        let budget: Int64 = 200_000
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: dir.storePath, diskBudgetBytes: budget, alertWindow: .seconds(30)),
            logger: quiet
        )
        // 2000 readings, the first 600 synced.
        let early = try store.append(newReadings(0..<2000))
        let syncedBatch = try store.reserveBatch(deviceID: "d", readings: try store.readings(sequences: Array(early[0..<600])), heartbeat: nil)
        try store.acknowledge(batchSequence: syncedBatch.batch.batchSequence)
        // An alert around reading 1000 (mono 1 s + 1000 * 0.5 s): readings within 30 s are kept.
        let alertMono = UInt64(1_000_000_000) + 1000 * 500_000_000
        #expect(store.appendAlert(alertUpdate(id: "sos", at: alertMono)) == .durable)
        // A long offline window: keep appending far beyond the budget.
        var all = early
        for chunk in stride(from: 2000, to: 30_000, by: 1000) { all += try store.append(newReadings(chunk..<chunk + 1000)) }
        #expect(try store.usedBytes() <= budget)

        let remaining = try store.allReadings()
        let kept = Set(remaining.map(\.reading.sequence))
        let dropped = all.filter { !kept.contains($0) }
        let window = Set(all.indices.filter { abs($0 - 1000) <= 60 }.map { all[$0] })
        #expect(window.isSubset(of: kept), "readings around the alert were dropped")
        #expect(try store.alertStates().map(\.alert.id) == ["sos"])
        // Synced readings outside the window went before any unsynced one.
        let syncedOutside = Set(early[0..<600]).subtracting(window)
        #expect(syncedOutside.isDisjoint(with: kept))
        // Unsynced readings were dropped oldest first: every kept unsynced reading outside the
        // window is newer than every dropped one.
        let droppedUnsynced = dropped.filter { !syncedOutside.contains($0) }
        let keptUnsynced = remaining.filter { !$0.synced && !window.contains($0.reading.sequence) }.map(\.reading.sequence)
        #expect(try #require(keptUnsynced.min()) > (droppedUnsynced.max() ?? 0))
        #expect(!droppedUnsynced.isEmpty)
        // The count reaches the server with the next batch.
        let stats = store.statistics()
        #expect(stats.droppedByBudgetTotal == Int64(droppedUnsynced.count))
        let next = try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil)
        #expect(next.batch.droppedByBudget == Int64(droppedUnsynced.count))
        #expect(try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil).batch.droppedByBudget == 0)
    }

    @Test("disk budget: the commit that crosses the budget evicts before it returns; commits under it evict nothing")
    func budgetCrossedByOneCommit() throws {
        let dir = try TemporaryDirectory()
        let budget: Int64 = 120_000
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, diskBudgetBytes: budget), logger: quiet)
        var appended = 0
        var evictedAt: Int?
        for chunk in stride(from: 0, to: 8000, by: 100) {
            let before = try store.usedBytes()
            try store.append(newReadings(chunk..<chunk + 100))
            appended += 100
            let stats = store.statistics()
            #expect(stats.usedBytes <= budget, "commit \(chunk / 100) left the store over budget")
            #expect(stats.usedBytes == (try store.usedBytes()))
            if evictedAt == nil, stats.readings < appended {
                evictedAt = appended
                // The first eviction comes from the commit that crossed the budget: the store
                // was under it before, and the readings would not all have fitted.
                #expect(before <= budget)
            }
            if evictedAt == nil { #expect(stats.readings == appended) }
        }
        #expect(evictedAt != nil)
        #expect(store.statistics().droppedByBudgetTotal > 0)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test("a week of 1 Hz heart rate and 1 Hz GPS fits in 64 MB (measured on 40,000 readings)")
    func bytesPerReading() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, diskBudgetBytes: 1 << 40), logger: quiet)
        for chunk in stride(from: 0, to: 40_000, by: 2000) { try store.append(newReadings(chunk..<chunk + 2000)) }
        let perReading = Double(try store.usedBytes()) / 40_000
        let week = perReading * 2 * 7 * 86_400
        #expect(week < 64 * 1024 * 1024, "\(perReading) bytes per reading")
    }

    @Test(
        "disk full / read-only: writes fail with a typed error, alerts stay in memory, everything is written when the disk recovers",
        arguments: [ReadingStore.SimulatedFault.diskFull, .readOnly]
    )
    func diskFailure(fault: ReadingStore.SimulatedFault) async throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let committer = GroupCommitter(store: store, clock: VirtualClock(), maxGroupSize: 100_000)
        try store.append(newReadings(0..<10))
        try store.simulate(fault)
        let input = newReadings(10..<3000)
        for r in input { committer.append(r.payload, at: r.timestamp) }
        #expect(committer.flush().isEmpty)
        let expected: StoreError.Code = fault == .diskFull ? .diskFull : .readOnly
        #expect(committer.lastError?.code == expected)
        #expect(store.health != .healthy)
        let update = alertUpdate(id: "while-full", at: 7)
        guard case .memoryOnly(let error) = store.appendAlert(update) else {
            Issue.record("the alert journal wrote on a failing disk")
            return
        }
        #expect(error.code == expected)
        #expect(store.pendingAlertUpdates().contains(update))
        #expect(store.statistics().memoryOnlyAlertUpdates == 1)

        try store.simulate(.none)
        let committed = committer.flush()
        #expect(committed.count == input.count)
        #expect(store.health == .healthy)
        #expect(store.statistics().memoryOnlyAlertUpdates == 0)
        store.close()
        let reopened = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(reopened.statistics().readings == 3000)
        #expect(reopened.pendingAlertUpdates() == [update])
    }

    @Test("a corrupt store is moved aside, a fresh one opened and counted, and numbers are not reused")
    func corruptAtStartUp() throws {
        let dir = try TemporaryDirectory()
        var oldSeqs: [Int64] = []
        var oldBatch: Int64 = 0
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            oldSeqs = try store.append(newReadings(0..<500))
            oldBatch = try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil).batch.batchSequence
            store.close()
        }
        // Scribble over the middle of the file (past the header, across b-tree pages).
        let handle = try #require(FileHandle(forWritingAtPath: dir.storePath))
        try handle.seek(toOffset: 4096)
        handle.write(Data(repeating: 0xA5, count: 16_384))
        try handle.close()

        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let moved = try #require(store.openReport.movedAsidePath)
        #expect(FileManager.default.fileExists(atPath: moved))
        #expect(store.openReport.createdFresh)
        #expect(store.statistics().corruptStoresMovedAside == 1)
        // What is still readable of the old file's unsynced readings is salvaged (issue 16).
        #expect(Int64(store.statistics().readings) == store.statistics().salvagedReadings)
        let fresh = try store.append(newReadings(0..<3))
        #expect(try #require(fresh.first) > (oldSeqs.last ?? .max))
        #expect(try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil).batch.batchSequence > oldBatch)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test("a store that cannot be opened on disk at all runs from memory and says so")
    func cannotOpen() throws {
        let dir = try TemporaryDirectory()
        // A regular file where the store's directory should be: SQLite cannot create the file.
        try Data().write(to: URL(fileURLWithPath: dir.path + "/not-a-directory"))
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.path + "/not-a-directory/store.sqlite"), logger: quiet)
        let reason = try #require(store.openReport.memoryFallback)
        #expect([StoreError.Code.readOnly, .ioError].contains(reason.code))
        #expect(store.health != .healthy)
        let seqs = try store.append(newReadings(0..<3))
        #expect(try #require(seqs.first) > Int64(1) << 40, "memory sequence numbers must not collide with the disk store's")
        guard case .memoryOnly = store.appendAlert(alertUpdate(id: "m", at: 1)) else {
            Issue.record("an alert reported durable from a memory-only store")
            return
        }
        #expect(store.pendingAlertUpdates().map(\.alert.id) == ["m"])
    }

    @Test("a file that is not a database at all is moved aside too")
    func garbageFile() throws {
        let dir = try TemporaryDirectory()
        try Data("this is not sqlite".utf8).write(to: URL(fileURLWithPath: dir.storePath))
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(store.openReport.movedAsidePath != nil)
        #expect(try store.append(newReadings(0..<1)).count == 1)
    }
}

/// The durability the configuration asks for is the one in force from the first commit: GRDB's
/// WAL set-up used to leave `synchronous = NORMAL` until a batch acknowledgement set it again.
@Suite("store durability")
struct StoreDurabilityTests {
    @Test(
        "synchronous is FULL for power-loss durability and NORMAL for process-crash, from the moment the store opens",
        arguments: [
            (CommitDurability.powerLoss, 2), (CommitDurability.processCrash, 1),
        ]
    )
    func synchronousFromOpen(durability: CommitDurability, expected: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for _ in 0..<2 {  // a new store, then the same file reopened
            let store = try ReadingStore(
                configuration: StoreConfiguration(path: directory.appendingPathComponent("s.sqlite").path, durability: durability),
                logger: Logger(label: "test")
            )
            #expect(store.synchronousSetting == expected)
            store.close()
        }
    }
}
