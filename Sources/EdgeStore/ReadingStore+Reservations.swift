import Foundation
import GRDB
import Logging
import Synchronization
public import TrackMeCore

/// A batch reserved for sending: its number and readings are on disk before the first send,
/// so after a crash the very same batch goes out again under the same idempotency key.
public struct ReservedBatch: Hashable, Sendable {
    public var batch: SyncBatch
    /// A small batch of the newest heart rate and position, sent ahead of the backlog.
    public var isLatest: Bool
}

/// The `in_flight` table and the batch numbering in `meta`: what the sync lane reserves (on disk
/// before the first send, so that a batch goes again unchanged after a crash), acknowledges,
/// abandons, or re-bases on the server's answer to a 409.
extension ReadingStore {
    /// Reserves the next batch number for `readings` and writes the batch (its number, its
    /// readings' sequence numbers, the drop count it reports and the heartbeat) to disk before
    /// returning, so that it can be resent unchanged after a crash. Reserving a new latest batch
    /// abandons an older unacknowledged latest batch: its key is never sent again and its
    /// readings go back to the backlog (the server keeps `(device_id, seq)` once, so a reading
    /// that did reach it under the old key is only counted as a duplicate).
    public func reserveBatch(
        deviceID: String,
        readings: [WireReading],
        heartbeat: DeviceHeartbeat?,
        isLatest: Bool = false
    ) throws(StoreError) -> ReservedBatch {
        do {
            return try write { db -> ReservedBatch in
                let metaValue = try db.cachedStatement(sql: "SELECT value FROM meta WHERE key = ?")
                let batchSeq = try Int64.fetchOne(metaValue, arguments: [MetaKey.nextBatchSequence]) ?? 1
                let dropped = try Int64.fetchOne(metaValue, arguments: [MetaKey.droppedUnreported]) ?? 0
                if isLatest {
                    try db.cachedStatement(sql: "DELETE FROM in_flight WHERE latest = 1 AND dropped = 0").execute()
                }
                let setMeta = try db.cachedStatement(sql: "UPDATE meta SET value = ? WHERE key = ?")
                try setMeta.execute(arguments: [batchSeq + 1, MetaKey.nextBatchSequence])
                try setMeta.execute(arguments: [0, MetaKey.droppedUnreported])
                let heartbeatBytes = try heartbeat.map { try WireCodec.encode($0) }
                try db.cachedStatement(sql: "INSERT INTO in_flight (batch_seq, latest, dropped, heartbeat, seqs) VALUES (?, ?, ?, ?, ?)")
                    .execute(arguments: [
                        batchSeq, isLatest ? 1 : 0, dropped, heartbeatBytes, Data(SequenceList.encode(readings.map(\.sequence))),
                    ])
                let batch = SyncBatch(
                    deviceID: deviceID,
                    batchSequence: batchSeq,
                    storeEpoch: storeEpoch,
                    droppedByBudget: dropped,
                    heartbeat: heartbeat,
                    readings: readings
                )
                return ReservedBatch(batch: batch, isLatest: isLatest)
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// Forgets a batch the server refused as a whole (it stored nothing of it): its readings go
    /// back to the backlog and its drop count back to the next batch; its key is never used
    /// again.
    public func abandonBatch(batchSequence: Int64) throws(StoreError) {
        do {
            try write { db in
                let droppedOf = try db.cachedStatement(sql: "SELECT dropped FROM in_flight WHERE batch_seq = ?")
                let dropped = try Int64.fetchOne(droppedOf, arguments: [batchSequence]) ?? 0
                try db.cachedStatement(sql: "DELETE FROM in_flight WHERE batch_seq = ?").execute(arguments: [batchSequence])
                try db.cachedStatement(sql: "UPDATE meta SET value = value + ? WHERE key = ?")
                    .execute(arguments: [dropped, MetaKey.droppedUnreported])
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// Batches reserved but not yet acknowledged, oldest first, rebuilt exactly as reserved.
    public func inFlightBatches(deviceID: String) throws(StoreError) -> [ReservedBatch] {
        defer { quarantineFailedRows() }
        let epoch = storeEpoch
        return try read { db in
            let batches = try db.cachedStatement(sql: "SELECT batch_seq, latest, dropped, heartbeat, seqs FROM in_flight ORDER BY batch_seq")
            return try Row.fetchAll(batches).map { row in
                guard let batchSeq = row[0] as Int64?, let dropped = row[2] as Int64?, let seqBlob = row[4] as Data? else {
                    throw StoreError(code: .badRecord, message: "in_flight row with nulls", path: self.configuration.path)
                }
                let heartbeat = try (row[3] as Data?).map { try WireCodec.decode(DeviceHeartbeat.self, from: $0) }
                let readings = try self.fetchReadings(try SequenceList.decode(Array(seqBlob)), db)
                let batch = SyncBatch(
                    deviceID: deviceID,
                    batchSequence: batchSeq,
                    storeEpoch: epoch,
                    droppedByBudget: dropped,
                    heartbeat: heartbeat,
                    readings: readings
                )
                return ReservedBatch(batch: batch, isLatest: (row[1] as Int64?) == 1)
            }
        }
    }

    /// Marks a batch's readings synced and forgets the batch: called only on the server's
    /// acknowledgement.
    public func acknowledge(batchSequence: Int64) throws(StoreError) {
        do {
            let newlySynced = try writeWithoutFsync { db -> Int in
                guard
                    let blob = try Data.fetchOne(
                        db.cachedStatement(sql: "SELECT seqs FROM in_flight WHERE batch_seq = ?"),
                        arguments: [batchSequence]
                    )
                else { return 0 }
                let seqs = try SequenceList.decode(Array(blob))
                try db.cachedStatement(sql: "UPDATE readings SET synced = 1 WHERE synced = 0 AND seq IN (SELECT value FROM json_each(?))")
                    .execute(arguments: [Self.jsonArray(seqs)])
                let changed = db.changesCount
                try db.cachedStatement(sql: "DELETE FROM in_flight WHERE batch_seq = ?").execute(arguments: [batchSequence])
                return changed
            }
            state.withLock { $0.unsyncedCount -= newlySynced }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// Re-bases the store's numbering on the server's answer to a batch it refused with 409
    /// (`BatchConflict`: a store that started its numbering over, or a key reused with other
    /// content): every batch in flight is forgotten unacknowledged (its readings go back to the
    /// backlog, its drop count to the next batch), readings are renumbered so that the lowest
    /// is at least `sequenceFloor` (order kept), and batch numbers go on from `batchFloor`.
    /// Nothing is marked synced. One transaction, fsynced.
    public func rebase(sequenceFloor: Int64, batchFloor: Int64) throws(StoreError) {
        do {
            try write { db in
                let dropped = try Int64.fetchOne(db, sql: "SELECT coalesce(sum(dropped), 0) FROM in_flight") ?? 0
                try db.execute(sql: "DELETE FROM in_flight")
                try db.execute(
                    sql: "UPDATE meta SET value = value + ? WHERE key = ?",
                    arguments: [dropped, MetaKey.droppedUnreported]
                )
                if let lowest = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM readings"), lowest < sequenceFloor {
                    let delta = sequenceFloor - lowest
                    if let cipher {
                        try self.resealForRenumbering(db, cipher: cipher, delta: delta)
                    }
                    // Through negative numbers so that no intermediate row meets another's key.
                    try db.execute(sql: "UPDATE readings SET seq = -(seq + ?)", arguments: [delta])
                    try db.execute(sql: "UPDATE readings SET seq = -seq")
                }
                let highest = max(sequenceFloor - 1, try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM readings") ?? 0)
                try db.execute(sql: "DELETE FROM sqlite_sequence WHERE name = 'readings'")
                try db.execute(
                    sql: "INSERT INTO sqlite_sequence (name, seq) SELECT 'readings', max(?, coalesce((SELECT max(seq) FROM quarantine), 0))",
                    arguments: [highest]
                )
                try db.execute(
                    sql: "UPDATE meta SET value = max(value, ?) WHERE key = ?",
                    arguments: [batchFloor, MetaKey.nextBatchSequence]
                )
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
        state.withLock { $0.unsyncedFloor = 0 }
        logger.info(
            "store numbering re-based on the server's answer",
            metadata: ["store.seq_floor": "\(sequenceFloor)", "store.batch_floor": "\(batchFloor)"]
        )
    }

    /// The sequence numbers named by batches in flight (of backlog batches only when
    /// `includingLatest` is false): never offered for another batch, never evicted while unsynced.
    func reservedSequences(_ db: Database, includingLatest: Bool = true) throws -> Set<Int64> {
        var out = Set<Int64>()
        let sql = includingLatest ? "SELECT seqs FROM in_flight" : "SELECT seqs FROM in_flight WHERE latest = 0"
        for blob in try Data.fetchAll(db.cachedStatement(sql: sql)) {
            out.formUnion(try SequenceList.decode(Array(blob)))
        }
        return out
    }

    /// Before a renumbering by `delta`: every reading body opened under its old number and
    /// sealed under its new one, its CRC recomputed. A row that does not open stays as it is
    /// (it fails at its new number too and is quarantined on the next read).
    private func resealForRenumbering(_ db: Database, cipher: RowCipher, delta: Int64) throws {
        let update = try db.cachedStatement(sql: "UPDATE readings SET body = ?, crc = ? WHERE seq = ?")
        for row in try Row.fetchAll(db, sql: "SELECT seq, boot, mono_ns, wall_ms, body FROM readings") {
            guard let seq = row[0] as Int64?, let boot = row[1] as Int64?, let mono = row[2] as Int64?, let stored = row[4] as Data?,
                let plain = try? cipher.open(stored, .reading(seq))
            else { continue }
            let wall = row[3] as Int64?
            let sealed = Array(try cipher.seal(plain, .reading(seq + delta)))
            let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: sealed)
            try update.execute(arguments: [Data(sealed), crc, seq])
        }
    }
}

/// A list of sequence numbers as varint deltas (a batch in flight keeps one of these).
enum SequenceList {
    static func encode(_ seqs: [Int64]) -> [UInt8] {
        var out: [UInt8] = []
        var previous: Int64 = 0
        for s in seqs {
            ReadingBodyCodec.appendVarint(ReadingBodyCodec.zigzag(s &- previous), to: &out)
            previous = s
        }
        return out
    }

    static func decode(_ bytes: [UInt8]) throws -> [Int64] {
        var reader = ReadingBodyCodec.Reader(bytes: bytes)
        var out: [Int64] = []
        var previous: Int64 = 0
        while reader.offset < bytes.count {
            previous = previous &+ ReadingBodyCodec.unzigzag(try reader.varint("sequence delta"))
            out.append(previous)
        }
        return out
    }
}
