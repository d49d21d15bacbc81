import EdgeBenchmarks
import Foundation
import GRDB
import Testing
import TrackMeCore

@testable import EdgeStore

/// Issue 16: a damaged row never wedges sync nor sends a wrong value; a store that starts its
/// numbering over is recognisable and can be re-based; a memory-only store says so.
@Suite("Store integrity")
struct StoreIntegrityTests {
    /// Changes one reading's body behind the store's back, as a bad SD card sector or a stray
    /// write would: `quick_check` still passes (SQLite does not look inside values).
    static func damage(_ path: String, seq: Int64, _ change: (inout [UInt8]) -> Void) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            let blob = try #require(try Data.fetchOne(db, sql: "SELECT body FROM readings WHERE seq = ?", arguments: [seq]))
            var bytes = Array(blob)
            change(&bytes)
            try db.execute(sql: "UPDATE readings SET body = ? WHERE seq = ?", arguments: [Data(bytes), seq])
        }
        #expect(try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") } == ["ok"])
        try queue.close()
    }

    @Test("a flipped bpm byte and an unreadable body are quarantined; sync goes on with the next readings and reports them")
    func corruptBodies() throws {
        let dir = try TemporaryDirectory()
        var seqs: [Int64] = []
        var original: WireReading?
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            seqs = try store.append(newReadings(0..<10))
            original = try store.readings(sequences: [seqs[2]]).first
            store.close()
        }
        // Reading 2 is a heart rate: its second byte is the bpm varint; one bit flipped still
        // decodes, to another bpm. Reading 4's body is cut to its first byte: it cannot decode.
        try Self.damage(dir.storePath, seq: seqs[2]) { $0[1] ^= 0x04 }
        try Self.damage(dir.storePath, seq: seqs[4]) { $0 = [$0[0]] }

        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        for attempt in 0..<2 {
            let batch = try store.oldestUnsynced(limit: 100)
            #expect(batch.map(\.sequence) == seqs.filter { $0 != seqs[2] && $0 != seqs[4] }, "attempt \(attempt)")
            // Never the changed value (on main, reading 2 went out with bpm ^ 2).
            #expect(!batch.contains { $0.sequence == seqs[2] && $0.payload != original?.payload })
        }
        let stats = store.statistics()
        #expect(stats.quarantinedReadings == 2)
        #expect(stats.unsyncedReadings == 8)
        #expect(stats.readings == 8)
        let quarantined = try store.quarantinedRows()
        #expect(quarantined.map(\.sequence) == [seqs[2], seqs[4]])
        #expect(quarantined[0].reason.contains("checksum"))
        // The rest syncs: reserve, acknowledge, nothing left.
        let reserved = try store.reserveBatch(deviceID: "d", readings: try store.oldestUnsynced(limit: 100), heartbeat: nil)
        try store.acknowledge(batchSequence: reserved.batch.batchSequence)
        #expect(store.statistics().unsyncedReadings == 0)
        // Kept, and counted across a restart.
        store.close()
        let reopened = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(reopened.statistics().quarantinedReadings == 2)
        #expect(try reopened.quarantinedRows().count == 2)
    }

    @Test("a flipped byte in a timestamp column is caught by the row checksum too")
    func corruptTimestamp() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let seqs = try store.append(newReadings(0..<4))
        let queue = try DatabaseQueue(path: dir.storePath)
        try queue.write { db in try db.execute(sql: "UPDATE readings SET mono_ns = mono_ns + 1 WHERE seq = ?", arguments: [seqs[1]]) }
        try queue.close()
        #expect(try store.oldestUnsynced(limit: 10).map(\.sequence) == [seqs[0], seqs[2], seqs[3]])
        #expect(store.statistics().quarantinedReadings == 1)
    }

    @Test("every store file has its own epoch, kept across reopening; a wiped store gets a new one")
    func epochs() throws {
        let dir = try TemporaryDirectory()
        let first = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet).storeEpoch
        #expect(first.count == 16)
        let again = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(again.storeEpoch == first)
        let batch = try again.reserveBatch(deviceID: "d", readings: [], heartbeat: nil)
        #expect(batch.batch.storeEpoch == first)
        #expect(try again.inFlightBatches(deviceID: "d").first?.batch.storeEpoch == first)
        again.close()
        for suffix in ["", "-wal", "-shm", ".generation"] { try? FileManager.default.removeItem(atPath: dir.storePath + suffix) }
        let wiped = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(wiped.storeEpoch != first)
    }

    /// Found by the agent's crash soak: every start rewrote the generation file (a temp file and
    /// a rename), and a kill between the two left a `.dat.nosync*` file beside the store.
    @Test("reopening a store does not rewrite its generation file; a new generation does")
    func generationWrittenOnlyWhenChanged() throws {
        let dir = try TemporaryDirectory()
        try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet).close()
        let file = dir.storePath + ".generation"
        let inode = { (try FileManager.default.attributesOfItem(atPath: file)[.systemFileNumber] as? NSNumber)?.uint64Value }
        let written = try #require(try inode())
        for _ in 0..<3 { try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet).close() }
        #expect(try inode() == written, "a plain reopen replaced the generation file")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dir.storePath + suffix) }
        try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet).close()
        #expect(try inode() != written, "a store created where one was must record its new generation")
        #expect(StoreGeneration.load(forStore: dir.storePath)?.generation == 1)
    }

    @Test("re-basing renumbers every reading above the floor in order, forgets batches in flight, marks nothing synced")
    func rebase() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        let seqs = try store.append(newReadings(0..<6))
        let before = try store.allReadings().map(\.reading.payload)
        let first = try store.reserveBatch(deviceID: "d", readings: try store.readings(sequences: Array(seqs.prefix(2))), heartbeat: nil)
        try store.acknowledge(batchSequence: first.batch.batchSequence)
        _ = try store.reserveBatch(deviceID: "d", readings: try store.readings(sequences: [seqs[2], seqs[3]]), heartbeat: nil)
        try store.rebase(sequenceFloor: 3, batchFloor: 40)
        #expect(try store.sequenceNumbers() == Array(3...8))
        #expect(try store.allReadings().map(\.reading.payload) == before)
        #expect(try store.inFlightBatches(deviceID: "d").isEmpty)
        #expect(store.statistics().unsyncedReadings == 4)
        #expect(try store.oldestUnsynced(limit: 10).map(\.sequence) == [5, 6, 7, 8])
        #expect(try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil).batch.batchSequence == 40)
        #expect(try store.append(newReadings(6..<7)) == [9])
        // A floor below every number changes nothing but the batch counter.
        try store.rebase(sequenceFloor: 1, batchFloor: 1)
        #expect(try store.sequenceNumbers() == Array(3...9))
        #expect(try store.reserveBatch(deviceID: "d", readings: [], heartbeat: nil).batch.batchSequence == 41)
    }

    @Test("a store running from memory says so in its statistics, with why")
    func memoryOnlyReported() throws {
        let dir = try TemporaryDirectory()
        try Data().write(to: URL(fileURLWithPath: dir.path + "/not-a-directory"))
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.path + "/not-a-directory/store.sqlite"), logger: quiet)
        let stats = store.statistics()
        #expect(stats.storeState == "memory_only")
        #expect(stats.memoryOnlyReason != nil)
        let healthy = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(healthy.statistics().storeState == "disk")
        #expect(healthy.statistics().memoryOnlyReason == nil)
    }

    @Test(
        "a store moved aside as corrupt: its readable unsynced readings and alerts come back with their numbers and epoch; what could not be read is counted; salvage runs once"
    )
    func salvage() throws {
        let dir = try TemporaryDirectory()
        var seqs: [Int64] = []
        var epoch = ""
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            seqs = try store.append(newReadings(0..<3000))
            epoch = store.storeEpoch
            let synced = try store.reserveBatch(deviceID: "d", readings: try store.readings(sequences: Array(seqs.prefix(1000))), heartbeat: nil)
            try store.acknowledge(batchSequence: synced.batch.batchSequence)
            #expect(store.appendAlert(alertUpdate(id: "salvaged-alert", at: 1)) == .durable)
        }
        // One page in the second half of the file scribbled over: quick_check fails at start.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.storePath)[.size] as? Int)
        let handle = try #require(FileHandle(forWritingAtPath: dir.storePath))
        try handle.seek(toOffset: UInt64((size / 4096 * 3 / 4) * 4096))
        handle.write(Data(repeating: 0xA5, count: 4096))
        try handle.close()

        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(store.openReport.movedAsidePath != nil)
        let stats = store.statistics()
        #expect(stats.salvagedReadings > 1000, "most unsynced readings are readable")
        #expect(stats.unsalvageableRows > 0, "the scribbled page is reported")
        #expect(store.storeEpoch == epoch, "the new file continues the old store's epoch")
        let salvaged = try store.sequenceNumbers()
        #expect(Int64(salvaged.count) == stats.salvagedReadings)
        #expect(Set(salvaged).isSubset(of: Set(seqs.dropFirst(1000))), "only unsynced readings, with their own numbers")
        let firstSalvaged = try #require(salvaged.first)
        let original = try #require(try store.readings(sequences: [firstSalvaged]).first)
        #expect(original.payload == newReadings(Int(firstSalvaged) - 1..<Int(firstSalvaged)).first?.payload)
        #expect(store.pendingAlertUpdates().map(\.alert.id) == ["salvaged-alert"])
        #expect(store.statistics().unsyncedReadings == salvaged.count)
        // New readings go above every salvaged number.
        #expect(try store.append(newReadings(0..<1)).first ?? 0 > seqs.last ?? .max)
        store.close()
        let again = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(again.statistics().salvagedReadings == stats.salvagedReadings, "salvage runs once per moved-aside file")
    }

    @Test("a memory-only store is reopened on disk once the disk takes it: readings and alerts move over, the state says disk")
    func reopenFromMemory() throws {
        let dir = try TemporaryDirectory()
        let blocker = dir.path + "/data"
        try Data().write(to: URL(fileURLWithPath: blocker))
        let path = blocker + "/store.sqlite"
        let store = try ReadingStore(configuration: StoreConfiguration(path: path), logger: quiet)
        #expect(store.statistics().storeState == "memory_only")
        let seqs = try store.append(newReadings(0..<20))
        let synced = try store.reserveBatch(deviceID: "d", readings: try store.readings(sequences: Array(seqs.prefix(5))), heartbeat: nil)
        try store.acknowledge(batchSequence: synced.batch.batchSequence)
        _ = store.appendAlert(alertUpdate(id: "from-memory", at: 1))
        #expect(!store.reopenIfMemoryOnly(), "the disk still refuses")
        // The operator fixes the disk.
        try FileManager.default.removeItem(atPath: blocker)
        try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: true)
        #expect(store.reopenIfMemoryOnly())
        #expect(FileManager.default.fileExists(atPath: path))
        let stats = store.statistics()
        #expect(stats.storeState == "disk")
        #expect(stats.unsyncedReadings == 15)
        #expect(try store.oldestUnsynced(limit: 100).map(\.sequence) == Array(seqs.dropFirst(5)))
        #expect(store.pendingAlertUpdates().map(\.alert.id) == ["from-memory"])
        #expect(store.appendAlert(alertUpdate(id: "on-disk", at: 2)) == .durable)
        store.close()
        let reopened = try ReadingStore(configuration: StoreConfiguration(path: path), logger: quiet)
        #expect(reopened.statistics().unsyncedReadings == 15)
        #expect(Set(reopened.pendingAlertUpdates().map(\.alert.id)) == ["from-memory", "on-disk"])
    }
}
