import Foundation
import GRDB
import Logging
import Synchronization
public import TrackMeCore

/// A reading on its way into the store; the store gives it its sequence number when it commits.
public struct NewReading: Hashable, Sendable {
    public var timestamp: ReadingTimestamp
    public var payload: WireReading.Payload

    public init(timestamp: ReadingTimestamp, payload: WireReading.Payload) {
        self.timestamp = timestamp
        self.payload = payload
    }
}

/// The `readings` table: append (a group of readings in one commit, then the disk budget), the
/// queries the sync lane and the tools make, and the integrity quarantine (a row that fails its
/// check on read is skipped and moved to `quarantine` after the read).
extension ReadingStore {
    /// Commits `readings` in one transaction and returns their sequence numbers, in order. When
    /// this returns the readings are durable. Enforces the disk budget afterwards.
    @discardableResult
    public func append(_ readings: [NewReading]) throws(StoreError) -> [Int64] {
        retryMemoryAlerts()
        guard !readings.isEmpty else { return [] }
        let seqs: [Int64]
        let used: Int64
        do {
            (seqs, used) = try write { db -> ([Int64], Int64) in
                var out: [Int64] = []
                out.reserveCapacity(readings.count)
                if cipher == nil {
                    let statement = try db.cachedStatement(
                        sql: "INSERT INTO readings (boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?)"
                    )
                    for reading in readings {
                        let boot = try bootRef(reading.timestamp.bootID, db)
                        let body = ReadingBodyCodec.encode(reading.payload, wallClockTrusted: reading.timestamp.wallClockTrusted)
                        let mono = Int64(bitPattern: reading.timestamp.monotonicNanoseconds)
                        let wall = reading.timestamp.wallClockMilliseconds
                        let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: body)
                        try statement.execute(arguments: [boot, mono, wall, Data(body), crc])
                        out.append(db.lastInsertedRowID)
                    }
                } else {
                    // Sealed under its sequence number, so the number is chosen before the
                    // insert: the one AUTOINCREMENT would give (above every number ever handed
                    // out, which `sqlite_sequence` keeps); an explicit higher seq moves it on.
                    var next =
                        try Int64.fetchOne(
                            db.cachedStatement(
                                sql: """
                                    SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'readings'), 0),
                                        coalesce((SELECT max(seq) FROM readings), 0)) + 1
                                    """
                            )
                        ) ?? 1
                    let statement = try db.cachedStatement(
                        sql: "INSERT INTO readings (seq, boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?, ?)"
                    )
                    for reading in readings {
                        let boot = try bootRef(reading.timestamp.bootID, db)
                        let encoded = ReadingBodyCodec.encode(reading.payload, wallClockTrusted: reading.timestamp.wallClockTrusted)
                        let body = try storedReadingBody(encoded, seq: next)
                        let mono = Int64(bitPattern: reading.timestamp.monotonicNanoseconds)
                        let wall = reading.timestamp.wallClockMilliseconds
                        let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: body)
                        try statement.execute(arguments: [next, boot, mono, wall, Data(body), crc])
                        out.append(next)
                        next += 1
                    }
                }
                let dropped = state.withLock { s -> Int64 in
                    defer { s.pendingDroppedInMemory = 0 }
                    return s.pendingDroppedInMemory
                }
                if dropped > 0 { try addDropped(dropped, db) }
                // Measured inside the commit's own transaction (it sees its own pages), so a
                // commit under budget needs no second transaction for the check.
                return (out, try self.usedBytes(db))
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
        state.withLock { s in
            s.rowCount += seqs.count
            s.unsyncedCount += seqs.count
            if s.memoryFallback == nil { s.health = .healthy }
        }
        // The readings are committed whatever happens next: a failing eviction is recorded in
        // `health` and retried after the next commit, never reported as a failed append (the
        // caller would append the same readings again).
        try? enforceBudget(used: used)
        return seqs
    }

    /// Counts readings that never reached the disk (held in memory while it failed, then
    /// dropped to bound memory); reported to the server like budget drops.
    public func countDroppedInMemory(_ count: Int) {
        state.withLock { $0.pendingDroppedInMemory += Int64(count) }
    }

    /// Readings by sequence number, in ascending order (missing ones are skipped).
    public func readings(sequences: [Int64]) throws(StoreError) -> [WireReading] {
        defer { quarantineFailedRows() }
        return try read { db in try self.fetchReadings(sequences, db) }
    }

    /// Every reading on disk with its synced flag, in sequence order (tests and tools).
    public func allReadings() throws(StoreError) -> [(reading: WireReading, synced: Bool)] {
        defer { quarantineFailedRows() }
        return try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc, synced FROM readings ORDER BY seq").compactMap { row in
                try self.decodeReading(row).map { ($0, (row[6] as Int64?) == 1) }
            }
        }
    }

    /// Every sequence number on disk, ascending (cheap: no payload is decoded).
    public func sequenceNumbers() throws(StoreError) -> [Int64] {
        try read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM readings ORDER BY seq") }
    }

    /// The oldest unsynced readings that are not part of a batch in flight.
    public func oldestUnsynced(limit: Int) throws(StoreError) -> [WireReading] {
        // A row that fails its check is skipped here (sync goes on with the next one) and
        // moved to the quarantine table right after the read.
        defer { quarantineFailedRows() }
        return try read { db in
            let reserved = try self.reservedSequences(db)
            var out: [WireReading] = []
            // Start at the lowest sequence that may still be unsynced instead of scanning the
            // synced prefix every time (readings only ever go from unsynced to synced, and new
            // ones get higher numbers, so the floor only moves up).
            let floor = self.state.withLock { $0.unsyncedFloor }
            let cursor = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings WHERE seq >= ? AND synced = 0 ORDER BY seq"),
                arguments: [floor]
            )
            var first = true
            while out.count < limit, let row = try cursor.next() {
                guard let seq = row[0] as Int64? else { continue }
                if first {
                    first = false
                    self.state.withLock { $0.unsyncedFloor = max($0.unsyncedFloor, seq) }
                }
                guard !reserved.contains(seq), let reading = try self.decodeReading(row) else { continue }
                out.append(reading)
            }
            return out
        }
    }

    /// The newest unsynced heart rate and the newest unsynced fix, oldest first, leaving out
    /// readings of backlog batches in flight (but not of a latest batch in flight, so that an
    /// unchanged latest batch is recognised and resent rather than replaced).
    public func newestUnsynced() throws(StoreError) -> [WireReading] {
        defer { quarantineFailedRows() }
        return try read { db in
            let reserved = try self.reservedSequences(db, includingLatest: false)
            var heartRate: WireReading?
            var fix: WireReading?
            let cursor = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings WHERE synced = 0 ORDER BY seq DESC")
            )
            var scanned = 0
            // Bounded scan: the two kinds interleave at 1 Hz each, so both show up at once.
            while heartRate == nil || fix == nil, scanned < 10_000, let row = try cursor.next() {
                scanned += 1
                guard let seq = row[0] as Int64?, !reserved.contains(seq), let reading = try self.decodeReading(row) else { continue }
                switch reading.payload {
                case .heartRate: if heartRate == nil { heartRate = reading }
                case .position: if fix == nil { fix = reading }
                }
            }
            return [heartRate, fix].compactMap { $0 }.sorted { $0.sequence < $1.sequence }
        }
    }

    /// Readings by sequence number, ascending, missing ones skipped: one cached statement for
    /// any number of them (the numbers travel as one JSON array argument).
    func fetchReadings(_ sequences: [Int64], _ db: Database) throws -> [WireReading] {
        guard !sequences.isEmpty else { return [] }
        let statement = try db.cachedStatement(
            sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq"
        )
        return try Row.fetchAll(statement, arguments: [Self.jsonArray(sequences)]).compactMap { try self.decodeReading($0) }
    }

    /// The reading of a row `seq, boot, mono_ns, wall_ms, body, crc`, or nil when the row fails
    /// its integrity check or cannot be decoded: the row is then noted for the quarantine
    /// (`quarantineFailedRows`, after the read) and the caller goes on with the next one, so one
    /// damaged row never stops sync.
    private func decodeReading(_ row: Row) throws -> WireReading? {
        guard let seq = row[0] as Int64? else { return nil }
        func reject(_ reason: String) -> WireReading? {
            state.withLock { $0.failedRows[seq] = reason }
            return nil
        }
        guard let boot = row[1] as Int64?, let mono = row[2] as Int64?, let body = row[4] as Data? else {
            return reject("reading row with nulls")
        }
        let bytes = Array(body)
        if let stored = row[5] as Int64? {
            let wall = row[3] as Int64?
            let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: bytes)
            guard crc == stored else { return reject("checksum mismatch (stored \(stored), computed \(crc))") }
        }
        guard let bootID = state.withLock({ $0.bootIDs[boot] }) else {
            return reject("names an unknown boot \(boot)")
        }
        let decoded: (payload: WireReading.Payload, wallClockTrusted: Bool)
        do {
            decoded = try ReadingBodyCodec.decode(try readingBody(bytes, seq: seq))
        } catch {
            return reject("\(error)")
        }
        return WireReading(
            sequence: seq,
            timestamp: ReadingTimestamp(
                monotonicNanoseconds: UInt64(bitPattern: mono),
                bootID: bootID,
                wallClockMilliseconds: row[3] as Int64?,
                wallClockTrusted: decoded.wallClockTrusted
            ),
            payload: decoded.payload
        )
    }

    /// Moves the rows that failed their check during the last read to the quarantine table
    /// (kept byte for byte, with the reason) and counts them. If the disk cannot take the move
    /// now, the rows stay where they are, are skipped by every read, and are moved later.
    func quarantineFailedRows() {
        let failed = state.withLock { s -> [Int64: String] in
            defer { s.failedRows = [:] }
            return s.failedRows
        }
        guard !failed.isEmpty else { return }
        do {
            let (moved, unsynced) = try write { db -> (Int, Int) in
                var moved = 0
                var unsynced = 0
                for (seq, reason) in failed.sorted(by: { $0.key < $1.key }) {
                    guard let synced = try Int64.fetchOne(db, sql: "SELECT synced FROM readings WHERE seq = ?", arguments: [seq]) else {
                        continue
                    }
                    try db.execute(
                        sql: """
                            INSERT INTO quarantine (seq, synced, boot, mono_ns, wall_ms, body, crc, reason)
                            SELECT seq, synced, boot, mono_ns, wall_ms, body, crc, ? FROM readings WHERE seq = ?
                            """,
                        arguments: [reason, seq]
                    )
                    try db.execute(sql: "DELETE FROM readings WHERE seq = ?", arguments: [seq])
                    moved += 1
                    if synced == 0 { unsynced += 1 }
                }
                if moved > 0 {
                    try db.execute(
                        sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                        arguments: [MetaKey.quarantinedTotal, moved]
                    )
                }
                return (moved, unsynced)
            }
            state.withLock { s in
                s.rowCount -= moved
                s.unsyncedCount -= unsynced
            }
            for (seq, reason) in failed.sorted(by: { $0.key < $1.key }) {
                logger.info("reading failed its integrity check, quarantined", metadata: ["store.seq": "\(seq)", "store.reason": "\(reason)"])
            }
        } catch {
            noteFailure(Self.storeError(error, path: configuration.path))
        }
    }

    /// Rows in the quarantine table: sequence number and why (tests and tools).
    public func quarantinedRows() throws(StoreError) -> [(sequence: Int64, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, reason FROM quarantine ORDER BY rowid").map { ($0[0] as Int64? ?? 0, $0[1] as String? ?? "") }
        }
    }
}
