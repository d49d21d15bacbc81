import Foundation
import GRDB
public import Logging
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

/// What the store looks like right now, for the heartbeat, status and tests.
public struct StoreStatistics: Hashable, Sendable {
    /// Readings on disk, synced or not.
    public var readings: Int
    /// Readings on disk the server has not acknowledged yet.
    public var unsyncedReadings: Int
    public var inFlightBatches: Int
    /// Bytes taken by the database's live pages (what the budget limits).
    public var usedBytes: Int64
    /// Readings dropped by the disk budget over the store's life.
    public var droppedByBudgetTotal: Int64
    public var health: StoreHealth
    /// Corrupt databases found at start-up and moved aside over the device's life.
    public var corruptStoresMovedAside: Int64
    /// Alert updates the journal could not write yet, held in memory.
    public var memoryOnlyAlertUpdates: Int
    /// Readings that failed their integrity check on read, moved to the quarantine table over
    /// the store's life (kept there, never sent).
    public var quarantinedReadings: Int64 = 0
    /// Set while the store runs from memory because the disk refused it at start-up: why.
    /// Nothing written while it is set survives a restart.
    public var memoryOnlyReason: String? = nil
    /// Readings salvaged from stores moved aside as corrupt, and rows that could not be read.
    public var salvagedReadings: Int64 = 0
    public var unsalvageableRows: Int64 = 0
    /// The fingerprint of the key the store on disk is sealed under (issue 17), or nil in clear
    /// (and while the store runs from memory).
    public var encryptionKeyID: String? = nil

    /// `disk` or `memory_only`: what the heartbeat and `status` call the store's state.
    public var storeState: String { memoryOnlyReason == nil ? "disk" : "memory_only" }
}

/// What happened when the store was opened.
public struct StoreOpenReport: Hashable, Sendable {
    /// Where a corrupt database found at start-up was moved to (kept for later recovery).
    public var movedAsidePath: String?
    /// Whether a new, empty database was created.
    public var createdFresh: Bool
    /// Set when the store could not be opened on disk at all (read-only file system, disk
    /// full, I/O error) and runs from memory instead: nothing is durable, every alert journal
    /// write reports `.memoryOnly`, and the agent should reopen the store later.
    public var memoryFallback: StoreError?
    public var openDuration: Duration
}

/// Whether an alert update reached the disk.
public enum AlertJournalOutcome: Hashable, Sendable {
    /// Committed and fsynced before the call returned.
    case durable
    /// The journal could not be written (disk full, read-only, I/O error). The update is held
    /// in memory, offered to the sync lane as pending, and written when the store recovers; the
    /// caller must hand it to the dispatch lane from memory and must not wait for the disk.
    case memoryOnly(StoreError)
}

/// A batch reserved for sending: its number and readings are on disk before the first send,
/// so after a crash the very same batch goes out again under the same idempotency key.
public struct ReservedBatch: Hashable, Sendable {
    public var batch: SyncBatch
    /// A small batch of the newest heart rate and position, sent ahead of the backlog.
    public var isLatest: Bool
}

/// The device's durable buffer: readings, the alert journal and the sync cursor in one SQLite
/// file in WAL mode.
///
/// Durability settings, chosen for an SD card on a Pi that may lose power at any moment:
/// - `journal_mode=WAL`: a commit appends to the WAL and never rewrites the database in place,
///   so a torn write can only lose the transaction being written, never older ones.
/// - `synchronous=FULL`: the WAL is fsynced at every commit, so a commit the store has
///   acknowledged survives power loss (with `NORMAL` it would survive a crash of the process but
///   not of the power, and acknowledged readings could vanish). The cost is one fsync per
///   commit; `GroupCommitter` keeps that to about one per second by committing readings in
///   groups, and only alerts commit on their own (they are rare and must not wait). A batch
///   reservation is FULL too (it must be on disk before the batch is sent: a batch number
///   reused after a power cut would be answered from the server's cache for different
///   readings); the acknowledgement of a batch commits without an fsync of its own (NORMAL),
///   because losing it only means the batch is resent, and the next FULL commit makes it durable.
///   (`CommitDurability.processCrash` makes every commit NORMAL: for the simulation only.)
/// - `wal_autocheckpoint=1000` pages (SQLite's default, 4 MB): checkpoints (which fsync the
///   database file too) come every few minutes at 2 readings/s rather than constantly;
///   `journal_size_limit=4 MB` keeps the WAL file from growing beyond that after a long
///   offline burst, and it is otherwise reused in place (no reallocation on the card).
/// - `page_size=4096`: matches the card's flash page; `busy_timeout` 5 s in case a tool opens
///   the file at the same time.
public final class ReadingStore: Sendable {
    public let configuration: StoreConfiguration
    public let openReport: StoreOpenReport
    /// The connection: replaced once when a memory-only store is reopened on disk.
    private let connection: Mutex<DatabaseQueue>

    /// The connection's `PRAGMA synchronous` (2 FULL, 1 NORMAL), for tests of durability.
    var synchronousSetting: Int? {
        try? connection.withLock { queue in try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } }
    }
    private var db: DatabaseQueue { connection.withLock { $0 } }
    let logger: Logger
    /// Fixed when the file was created (WAL mode cannot change it).
    private let pageSize: Int64
    /// Seals and opens row bodies when the store is encrypted at rest (issue 17); nil in clear.
    let cipher: RowCipher?
    private let state: Mutex<State>

    private struct State {
        var bootRefs: [String: Int64] = [:]
        var bootIDs: [Int64: String] = [:]
        var health: StoreHealth = .healthy
        var rowCount = 0
        var unsyncedCount = 0
        var memoryAlerts: [AlertUpdate] = []
        /// `alert_id:update_seq` delivered to the server but not yet recorded as such on disk.
        var deliveredUnrecorded: Set<AlertUpdateKey> = []
        var generation: StoreGeneration
        var pendingDroppedInMemory: Int64 = 0
        var simulatedFault: SimulatedFault = .none
        var closed = false
        var memoryFallback: StoreError?
        /// No reading below this sequence number is unsynced.
        var unsyncedFloor: Int64 = 0
        /// Rows that failed their integrity check during a read, by sequence number, with why:
        /// moved to the quarantine table after the read.
        var failedRows: [Int64: String] = [:]
        /// Alert journal rows that failed to open or decode during a read, with why: moved to
        /// `alert_quarantine` after the read.
        var failedAlertRows: [AlertUpdateKey: String] = [:]
    }

    /// This file's epoch as sent in `store_epoch` (16 hex digits), fixed when the file was
    /// created: a store that starts its numbering over has a new one (WIRE.md).
    public var storeEpoch: String { epoch.withLock { $0 } }
    private let epoch: Mutex<String>

    /// Opens the store at `configuration.path`, creating it if needed. A database found corrupt
    /// is moved aside to `PATH.corrupt-N` (with its WAL) and a fresh one created; the event is
    /// logged, counted in `statistics().corruptStoresMovedAside` and described in `openReport`.
    public init(configuration: StoreConfiguration, logger: Logger = Logger(label: "trackme.store")) throws {
        let started = ContinuousClock.now
        self.configuration = configuration
        self.logger = logger
        let path = configuration.path
        let existed = FileManager.default.fileExists(atPath: path)
        var generation = StoreGeneration.load(forStore: path) ?? StoreGeneration(generation: 0, corruptionsMovedAside: 0)
        var movedAside: String?
        var queue: DatabaseQueue
        var fallback: StoreError?
        let key = configuration.encryptionKey
        do {
            do {
                queue = try Self.openChecked(path: path, durability: configuration.durability, key: key, logger: logger)
            } catch let error as StoreError where error.code == .corrupt {
                movedAside = try Self.moveAside(path: path, generation: generation.corruptionsMovedAside + 1)
                generation.corruptionsMovedAside += 1
                logger.info(
                    "store corrupt at start-up, moved aside",
                    metadata: ["store.path": "\(path)", "store.moved_to": "\(movedAside ?? "")", "store.reason": "\(error.message)"])
                queue = try Self.openChecked(path: path, durability: configuration.durability, key: key, logger: logger)
            }
        } catch let error as StoreError
            where error.code == .readOnly || error.code == .diskFull || error.code == .ioError || error.code == .keyMissing
            || error.code == .wrongKey
        {
            // The disk refuses even to open the store (read-only, full, failing card), or the
            // store is encrypted under a key we do not have (the file is left exactly as it is):
            // run from memory so that monitoring and alerts go on; nothing is durable until the
            // agent reopens the store on a healthy disk with its key.
            logger.info("store cannot open on disk, running from memory", metadata: ["store.path": "\(path)", "store.error": "\(error)"])
            fallback = error
            queue = try Self.wrap(path: path) {
                let memory = try DatabaseQueue()
                try StoreSchema.migrator().migrate(memory)
                if let key { try Self.adoptKey(memory, key: key, logger: logger) }
                return memory
            }
        }
        cipher = key.map { RowCipher(key: $0) }
        connection = Mutex(queue)
        // A database created where one existed before (moved aside, or deleted by hand) starts a
        // new generation so that no sequence or batch number is ever handed out twice.
        let fresh = !existed || movedAside != nil
        let isNewFile =
            try Self.wrap(path: path) {
                try queue.read { db in
                    try Int64.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = ?", arguments: [MetaKey.nextBatchSequence]) ?? 0
                }
            } == 0
        // A store moved aside as corrupt is the same logical store in a new file: it keeps the
        // old file's epoch when that can still be read, so that its salvaged readings keep their
        // numbers and the server recognises any it already has (WIRE.md).
        let adoptedEpoch = isNewFile && fallback == nil ? movedAside.flatMap { Self.readEpoch(ofMovedAside: $0) } : nil
        if isNewFile {
            if fallback == nil, existed || movedAside != nil || StoreGeneration.load(forStore: path) != nil {
                generation.generation += 1
            }
            // From memory: the upper half of the next generation's range, which the disk store
            // cannot reach (2^39 readings) before it would itself move to that generation.
            let base =
                fallback == nil
                ? generation.sequenceBase
                : ((generation.generation + 1) << StoreGeneration.sequenceShift) + (1 << (StoreGeneration.sequenceShift - 1))
            try Self.wrap(path: path) {
                try queue.write { db in
                    if base > 0 {
                        try db.execute(sql: "INSERT INTO sqlite_sequence(name, seq) VALUES ('readings', ?)", arguments: [base])
                    }
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, ?)", arguments: [MetaKey.nextBatchSequence, base + 1])
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, 0)", arguments: [MetaKey.droppedUnreported])
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, 0)", arguments: [MetaKey.droppedTotal])
                    try db.execute(sql: "INSERT INTO meta(key, value) VALUES (?, ?)", arguments: [MetaKey.generation, generation.generation])
                    if let adoptedEpoch {
                        try db.execute(sql: "UPDATE meta SET value = ? WHERE key = ?", arguments: [adoptedEpoch, MetaKey.storeEpoch])
                    }
                }
            }
        }
        // Written only when it changed: a write is a temp file and a rename, and a start killed
        // between the two left the temp file behind (one more on every such kill; the agent's
        // crash soak found them).
        if fallback == nil, StoreGeneration.load(forStore: path) != generation { try? generation.save(forStore: path) }
        var initial = State(generation: generation)
        initial.memoryFallback = fallback
        if let fallback { initial.health = Self.health(for: fallback) ?? .ioError }
        pageSize = try Self.wrap(path: path) {
            try queue.read { db in
                for row in try Row.fetchAll(db, sql: "SELECT id, boot_id FROM boots") {
                    if let id = row[0] as Int64?, let boot = row[1] as String? {
                        initial.bootRefs[boot] = id
                        initial.bootIDs[id] = boot
                    }
                }
                initial.rowCount = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM readings") ?? 0
                initial.unsyncedCount = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM readings WHERE synced = 0") ?? 0
                return try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            }
        }
        let epoch = try Self.wrap(path: path) {
            try queue.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.storeEpoch]) }
        }
        self.epoch = Mutex(Self.epochText(epoch ?? 0))
        state = Mutex(initial)
        openReport = StoreOpenReport(
            movedAsidePath: movedAside, createdFresh: fresh, memoryFallback: fallback, openDuration: ContinuousClock.now - started)
        if fallback == nil { salvageMovedAsideStores() }
    }

    static func epochText(_ value: Int64) -> String {
        let hex = String(UInt64(bitPattern: value), radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }

    private static func openChecked(path: String, durability: CommitDurability, key: StoreKey?, logger: Logger) throws -> DatabaseQueue {
        var config = Configuration()
        config.busyMode = .timeout(5)
        config.journalMode = .wal
        config.prepareDatabase { db in
            try db.execute(sql: durability.synchronousPragma)
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 1000")
            try db.execute(sql: "PRAGMA journal_size_limit = 4194304")
        }
        do {
            // The key first, through a read-only connection that changes nothing: GRDB's WAL
            // set-up (below) creates and drops a table, which rewrites the file's header, and a
            // read-write connection closing last checkpoints and deletes the WAL (the crash test
            // caught that as lost commits when it raced a killed writer's WAL). A store sealed
            // under another key, or under a key not given, is left byte for byte as it is, and
            // not moved aside either.
            if FileManager.default.fileExists(atPath: path) {
                var plain = Configuration()
                plain.readonly = true
                plain.busyMode = .timeout(5)
                let probe = try DatabaseQueue(path: path, configuration: plain)
                defer { try? probe.close() }
                try checkKey(probe, key: key, path: path)
            }
            let queue = try DatabaseQueue(path: path, configuration: config)
            // quick_check reads every page once (milliseconds for a 10 MB store) but skips the
            // index cross-checks of integrity_check, keeping start-up within the second.
            let verdict = try queue.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            guard verdict == ["ok"] else {
                try? queue.close()
                throw StoreError(code: .corrupt, message: verdict.prefix(3).joined(separator: "; "), path: path)
            }
            try StoreSchema.migrator().migrate(queue)
            if let key { try adoptKey(queue, key: key, logger: logger) }
            // Again, last: GRDB's WAL set-up runs after `prepareDatabase` and leaves the
            // connection at `synchronous = NORMAL`, which held until the first batch was
            // acknowledged (a commit before it could be lost to a power cut).
            try queue.writeWithoutTransaction { db in try db.execute(sql: durability.synchronousPragma) }
            return queue
        } catch let error as StoreError {
            throw error
        } catch {
            throw storeError(error, path: path)
        }
    }

    private static func moveAside(path: String, generation: Int64) throws -> String {
        let fm = FileManager.default
        var n = generation
        while fm.fileExists(atPath: "\(path).corrupt-\(n)") { n += 1 }
        let target = "\(path).corrupt-\(n)"
        do {
            try fm.moveItem(atPath: path, toPath: target)
            for suffix in ["-wal", "-shm"] where fm.fileExists(atPath: path + suffix) {
                try fm.moveItem(atPath: path + suffix, toPath: target + suffix)
            }
        } catch {
            throw StoreError(code: .ioError, message: "could not move the corrupt store aside: \(error)", path: path)
        }
        return target
    }

    // MARK: - Readings

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
                        sql: "INSERT INTO readings (boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?)")
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
                                    """)) ?? 1
                    let statement = try db.cachedStatement(
                        sql: "INSERT INTO readings (seq, boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?, ?)")
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
                arguments: [floor])
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
                db.cachedStatement(sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings WHERE synced = 0 ORDER BY seq DESC"))
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

    // MARK: - Sync cursor

    /// Reserves the next batch number for `readings` and writes the batch (its number, its
    /// readings' sequence numbers, the drop count it reports and the heartbeat) to disk before
    /// returning, so that it can be resent unchanged after a crash. Reserving a new latest batch
    /// abandons an older unacknowledged latest batch: its key is never sent again and its
    /// readings go back to the backlog (the server keeps `(device_id, seq)` once, so a reading
    /// that did reach it under the old key is only counted as a duplicate).
    public func reserveBatch(
        deviceID: String, readings: [WireReading], heartbeat: DeviceHeartbeat?, isLatest: Bool = false
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
                    deviceID: deviceID, batchSequence: batchSeq, storeEpoch: storeEpoch, droppedByBudget: dropped, heartbeat: heartbeat,
                    readings: readings)
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
                    deviceID: deviceID, batchSequence: batchSeq, storeEpoch: epoch, droppedByBudget: dropped, heartbeat: heartbeat,
                    readings: readings)
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
                        db.cachedStatement(sql: "SELECT seqs FROM in_flight WHERE batch_seq = ?"), arguments: [batchSequence])
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
                    sql: "UPDATE meta SET value = value + ? WHERE key = ?", arguments: [dropped, MetaKey.droppedUnreported])
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
                    arguments: [highest])
                try db.execute(
                    sql: "UPDATE meta SET value = max(value, ?) WHERE key = ?", arguments: [batchFloor, MetaKey.nextBatchSequence])
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
        state.withLock { $0.unsyncedFloor = 0 }
        logger.info(
            "store numbering re-based on the server's answer",
            metadata: ["store.seq_floor": "\(sequenceFloor)", "store.batch_floor": "\(batchFloor)"])
    }

    /// Moves the rows that failed their check during the last read to the quarantine table
    /// (kept byte for byte, with the reason) and counts them. If the disk cannot take the move
    /// now, the rows stay where they are, are skipped by every read, and are moved later.
    private func quarantineFailedRows() {
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
                            """, arguments: [reason, seq])
                    try db.execute(sql: "DELETE FROM readings WHERE seq = ?", arguments: [seq])
                    moved += 1
                    if synced == 0 { unsynced += 1 }
                }
                if moved > 0 {
                    try db.execute(
                        sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                        arguments: [MetaKey.quarantinedTotal, moved])
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

    /// Writes what `harvest` read from a moved-aside file, with the `salvage` row naming the
    /// file, in one transaction; returns how many readings were new here.
    func salvageWrite(file: String, harvest: SalvageHarvest) throws -> Int {
        let (inserted, unsynced) = try write { db -> (Int, Int) in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO readings (seq, boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?, ?)")
            var inserted = 0
            for row in harvest.readings {
                let boot = try bootRef(row.bootID, db)
                let body = try storedReadingBody(row.body, seq: row.seq)
                let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: row.mono, wallMilliseconds: row.wall, body: body)
                try insert.execute(arguments: [row.seq, boot, row.mono, row.wall, Data(body), crc])
                inserted += db.changesCount
            }
            for update in harvest.alerts {
                let boot = try bootRef(update.alert.firstCritical.bootID, db)
                try db.execute(
                    sql: "INSERT OR IGNORE INTO alert_updates (alert_id, update_seq, boot, mono_ns, body, delivered) VALUES (?, ?, ?, ?, ?, 0)",
                    arguments: [
                        update.alert.id, update.updateSequence, boot, Int64(bitPattern: update.alert.firstCritical.monotonicNanoseconds),
                        try storedAlertBody(update),
                    ])
            }
            if harvest.dropped > 0 { try addDropped(harvest.dropped, db) }
            let bump = "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value"
            try db.execute(sql: bump, arguments: [MetaKey.salvagedTotal, inserted])
            try db.execute(sql: bump, arguments: [MetaKey.unsalvageableTotal, harvest.unreadable])
            try db.execute(
                sql: "INSERT OR REPLACE INTO salvage (path, salvaged, unreadable, note) VALUES (?, ?, ?, ?)",
                arguments: [file, inserted, harvest.unreadable, harvest.notes.prefix(5).joined(separator: "; ")])
            return (inserted, inserted)
        }
        state.withLock { s in
            s.rowCount += inserted
            s.unsyncedCount += unsynced
            s.unsyncedFloor = 0
        }
        return inserted
    }

    /// For a store running from memory (`openReport.memoryFallback`): tries to open the store on
    /// disk again and, when the disk takes it, moves everything not yet synced (readings with
    /// their numbers, alert updates, drop counts) from memory into the disk file in one
    /// transaction and goes on from the disk. Returns true when the store is on disk afterwards.
    /// The agent calls it periodically while `statistics().memoryOnlyReason` is set.
    @discardableResult
    public func reopenIfMemoryOnly() -> Bool {
        guard state.withLock({ $0.memoryFallback != nil }) else { return true }
        let disk: ReadingStore
        do {
            disk = try ReadingStore(configuration: configuration, logger: logger)
        } catch {
            return false
        }
        guard disk.openReport.memoryFallback == nil else { return false }
        return db.writeWithoutTransaction { memory -> Bool in
            // Holding the memory connection: no write slips in between the copy and the switch.
            var harvest = Self.harvest(cipher: cipher) { body in try body(memory) }
            let inMemory = state.withLock { $0.memoryAlerts }
            harvest.alerts += inMemory
            harvest.dropped += state.withLock { $0.pendingDroppedInMemory }
            do {
                _ = try disk.salvageWrite(file: "memory:\(disk.storeEpoch):\(UUID().uuidString)", harvest: harvest)
            } catch {
                return false
            }
            let adopted = disk.state.withLock { $0 }
            state.withLock { s in
                let delivered = s.deliveredUnrecorded
                s = adopted
                s.deliveredUnrecorded.formUnion(delivered)
            }
            connection.withLock { $0 = disk.db }
            epoch.withLock { $0 = disk.storeEpoch }
            logger.info(
                "store reopened on disk; memory contents moved there",
                metadata: ["store.path": "\(configuration.path)", "store.readings": "\(harvest.readings.count)"])
            return true
        }
    }

    /// Moved-aside files salvaged into this store: the file, readings salvaged, rows unreadable.
    public func salvageRecords() throws(StoreError) -> [(path: String, salvaged: Int64, unreadable: Int64)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT path, salvaged, unreadable FROM salvage ORDER BY rowid").map {
                ($0[0] as String? ?? "", $0[1] as Int64? ?? 0, $0[2] as Int64? ?? 0)
            }
        }
    }

    /// Rows in the quarantine table: sequence number and why (tests and tools).
    public func quarantinedRows() throws(StoreError) -> [(sequence: Int64, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT seq, reason FROM quarantine ORDER BY rowid").map { ($0[0] as Int64? ?? 0, $0[1] as String? ?? "") }
        }
    }

    // MARK: - Alert journal

    /// Journals an alert update durably at once (its own transaction and fsync: alerts never
    /// wait for a group commit). If the disk fails the update is kept in memory (see
    /// `AlertJournalOutcome.memoryOnly`) and written when the store recovers.
    public func appendAlert(_ update: AlertUpdate) -> AlertJournalOutcome {
        retryMemoryAlerts()
        do {
            try writeAlert(update)
            if let fallback = state.withLock({ $0.memoryFallback }) { return .memoryOnly(fallback) }
            return .durable
        } catch {
            state.withLock { s in
                if !s.memoryAlerts.contains(where: { $0.alert.id == update.alert.id && $0.updateSequence == update.updateSequence }) {
                    s.memoryAlerts.append(update)
                }
            }
            logger.info(
                "alert journal write failed, alert kept in memory",
                metadata: ["alert.id": "\(update.alert.id)", "store.error": "\(error)"])
            return .memoryOnly(error)
        }
    }

    private func writeAlert(_ update: AlertUpdate) throws(StoreError) {
        let delivered = state.withLock { $0.deliveredUnrecorded.contains(AlertUpdateKey(update)) }
        do {
            let body = try storedAlertBody(update)
            try write { db in
                let boot = try bootRef(update.alert.firstCritical.bootID, db)
                try db.cachedStatement(
                    sql: "INSERT OR IGNORE INTO alert_updates (alert_id, update_seq, boot, mono_ns, body, delivered) VALUES (?, ?, ?, ?, ?, ?)"
                ).execute(
                    arguments: [
                        update.alert.id, update.updateSequence, boot, Int64(bitPattern: update.alert.firstCritical.monotonicNanoseconds), body,
                        delivered ? 1 : 0,
                    ])
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// One update of one alert.
    struct AlertUpdateKey: Hashable, Sendable {
        var alertID: String
        var updateSequence: Int

        init(alertID: String, updateSequence: Int) {
            self.alertID = alertID
            self.updateSequence = updateSequence
        }

        init(_ update: AlertUpdate) {
            self.init(alertID: update.alert.id, updateSequence: update.updateSequence)
        }
    }

    /// Writes alert updates held in memory, and deliveries not yet recorded, once the disk
    /// accepts writes again.
    public func retryMemoryAlerts() {
        let (pending, delivered) = state.withLock { ($0.memoryAlerts, $0.deliveredUnrecorded) }
        if pending.isEmpty, delivered.isEmpty { return }
        for update in pending {
            do {
                try writeAlert(update)
                state.withLock { s in
                    s.memoryAlerts.removeAll { $0.alert.id == update.alert.id && $0.updateSequence == update.updateSequence }
                    if s.memoryFallback == nil { s.health = .healthy }
                }
            } catch {
                return
            }
        }
        for key in delivered {
            do {
                try recordDelivered(alertID: key.alertID, updateSequence: key.updateSequence)
                state.withLock { _ = $0.deliveredUnrecorded.remove(key) }
            } catch {
                return
            }
        }
    }

    /// Alert updates not yet delivered to the server, journaled or memory-only, in the order they
    /// must be sent (by alert, then update sequence).
    public func pendingAlertUpdates() -> [AlertUpdate] {
        let memory = state.withLock { $0.memoryAlerts }
        let rows =
            (try? readStatement { db in
                try Row.fetchAll(db.cachedStatement(sql: "SELECT alert_id, update_seq, body FROM alert_updates WHERE delivered = 0 ORDER BY rowid"))
            }) ?? []
        if rows.isEmpty, memory.isEmpty { return [] }
        let journaled = decodeAlertRows(rows)
        quarantineFailedAlertRows()
        var seen = state.withLock { $0.deliveredUnrecorded }
        var out: [AlertUpdate] = []
        // Local state records (numbered from `localAlertStateSequenceBase`) never leave the device.
        for u in journaled + memory where u.updateSequence < Self.localAlertStateSequenceBase && seen.insert(AlertUpdateKey(u)).inserted {
            out.append(u)
        }
        return out
    }

    /// Whether `pendingAlertUpdates()` has anything to offer, without decoding any update: cheap
    /// enough to ask every second. (An update whose journal row cannot be opened or decoded
    /// counts as pending here until `pendingAlertUpdates()` has moved it to `alert_quarantine`.)
    public func hasPendingAlertUpdates() -> Bool {
        let (memory, deliveredUnrecorded) = state.withLock { (!$0.memoryAlerts.isEmpty, !$0.deliveredUnrecorded.isEmpty) }
        // Deliveries the disk has not recorded yet hide rows the journal still calls pending:
        // only the full answer can tell (rare: the disk failed while an alert was out).
        if deliveredUnrecorded { return !pendingAlertUpdates().isEmpty }
        if memory { return true }
        let exists = try? readStatement { db in
            // Local state records never leave the device (see `pendingAlertUpdates()`): they are
            // not pending, or a lane waiting for the journal to empty would wait for ever.
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM alert_updates WHERE delivered = 0 AND update_seq < ?)"),
                arguments: [Self.localAlertStateSequenceBase])
        }
        return (exists ?? nil) ?? false
    }

    /// Records that the server has an alert update; it is not offered again. When the disk
    /// cannot record it, the delivery is remembered in memory and recorded later.
    public func markAlertUpdateDelivered(alertID: String, updateSequence: Int) {
        state.withLock { _ = $0.deliveredUnrecorded.insert(AlertUpdateKey(alertID: alertID, updateSequence: updateSequence)) }
        retryMemoryAlerts()
    }

    private func recordDelivered(alertID: String, updateSequence: Int) throws(StoreError) {
        do {
            try write { db in
                try db.cachedStatement(sql: "UPDATE alert_updates SET delivered = 1 WHERE alert_id = ? AND update_seq = ?")
                    .execute(arguments: [alertID, updateSequence])
                // Position and escalation updates are sent, not journaled; their numbers are
                // remembered so that a restarted agent goes on above them.
                if updateSequence < Self.localAlertStateSequenceBase {
                    try db.cachedStatement(
                        sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)"
                    ).execute(arguments: [MetaKey.alertDelivered(alertID), updateSequence])
                }
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    /// Update numbers from here on are the agent's own records of an alert's state for its
    /// restart; they never go to the server.
    public static let localAlertStateSequenceBase = 1_000_000

    /// The number for an alert's next update after a restart: above every update of it the
    /// journal holds or the server was seen to take (the server ignores a number it already
    /// has, so a restarted agent that numbered from 1 again would go unheard), skipping one:
    /// the dispatch lane sends one update at a time, so at most one may have reached the
    /// server without its delivery being recorded before the agent stopped. (The end-to-end
    /// test caught exactly that: a SIGTERM during a position update, and the cancellation
    /// after the restart took that update's number and was ignored.)
    public func nextAlertUpdateSequence(alertID: String) throws(StoreError) -> Int {
        let highest = try read { db in
            let journaled = try Int.fetchOne(
                db, sql: "SELECT MAX(update_seq) FROM alert_updates WHERE alert_id = ? AND update_seq < ?",
                arguments: [alertID, Self.localAlertStateSequenceBase])
            let delivered = try Int.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.alertDelivered(alertID)])
            return max(journaled ?? 0, delivered ?? 0)
        }
        let unrecorded = state.withLock { s in
            s.deliveredUnrecorded.filter { $0.alertID == alertID && $0.updateSequence < Self.localAlertStateSequenceBase }
                .map(\.updateSequence).max() ?? 0
        }
        return max(highest, unrecorded) + 2
    }

    /// The latest journaled update of every alert (its current state), oldest alert first.
    /// A row that cannot be opened or decoded is left out and moved to `alert_quarantine`.
    public func alertStates() throws(StoreError) -> [AlertUpdate] {
        defer { quarantineFailedAlertRows() }
        let rows = try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT alert_id, update_seq, body FROM alert_updates a WHERE update_seq = (
                        SELECT MAX(update_seq) FROM alert_updates b WHERE b.alert_id = a.alert_id) ORDER BY rowid
                    """)
        }
        return decodeAlertRows(rows)
    }

    func notedFailedAlertRow(_ key: AlertUpdateKey, _ reason: String) {
        state.withLock { $0.failedAlertRows[key] = reason }
    }

    /// Moves the alert journal rows that failed during the last read to `alert_quarantine`
    /// (byte for byte, with the reason) and logs them; if the disk cannot take it now, the next
    /// read notes them again.
    private func quarantineFailedAlertRows() {
        let failed = state.withLock { s -> [AlertUpdateKey: String] in
            defer { s.failedAlertRows = [:] }
            return s.failedAlertRows
        }
        guard !failed.isEmpty else { return }
        let ordered = failed.sorted { ($0.key.alertID, $0.key.updateSequence) < ($1.key.alertID, $1.key.updateSequence) }
        do {
            try write { db in
                var moved = 0
                for (key, reason) in ordered {
                    try db.execute(
                        sql: """
                            INSERT INTO alert_quarantine (alert_id, update_seq, boot, mono_ns, body, delivered, reason)
                            SELECT alert_id, update_seq, boot, mono_ns, body, delivered, ? FROM alert_updates WHERE alert_id = ? AND update_seq = ?
                            """, arguments: [reason, key.alertID, key.updateSequence])
                    try db.execute(
                        sql: "DELETE FROM alert_updates WHERE alert_id = ? AND update_seq = ?", arguments: [key.alertID, key.updateSequence])
                    moved += db.changesCount
                }
                if moved > 0 {
                    try db.execute(
                        sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
                        arguments: [MetaKey.alertQuarantinedTotal, moved])
                }
            }
            for (key, reason) in ordered {
                logger.info(
                    "alert journal row failed to open or decode, quarantined",
                    metadata: ["alert.id": "\(key.alertID)", "alert.update_seq": "\(key.updateSequence)", "store.reason": "\(reason)"])
            }
        } catch {
            noteFailure(Self.storeError(error, path: configuration.path))
        }
    }

    /// Rows in `alert_quarantine`: alert id, update number and why (tests and tools).
    public func quarantinedAlertRows() throws(StoreError) -> [(alertID: String, updateSequence: Int, reason: String)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT alert_id, update_seq, reason FROM alert_quarantine ORDER BY rowid").map {
                ($0[0] as String? ?? "", $0[1] as Int? ?? 0, $0[2] as String? ?? "")
            }
        }
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

    // MARK: - Status

    public var health: StoreHealth { state.withLock { $0.health } }

    /// Readings not yet acknowledged by the server, counted in memory (no query).
    public var unsyncedReadingCount: Int { state.withLock { $0.unsyncedCount } }

    public func statistics() -> StoreStatistics {
        let figures = try? readStatement { db -> (Int64, Int64, Int, [Int64]) in
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT (SELECT value FROM meta WHERE key = ?), (SELECT COUNT(*) FROM in_flight),
                            (SELECT value FROM meta WHERE key = ?), (SELECT value FROM meta WHERE key = ?), (SELECT value FROM meta WHERE key = ?)
                        """),
                arguments: [MetaKey.droppedTotal, MetaKey.quarantinedTotal, MetaKey.salvagedTotal, MetaKey.unsalvageableTotal])
            return (
                try self.usedBytes(db), row?[0] as Int64? ?? 0, row?[1] as Int? ?? 0,
                [row?[2] as Int64? ?? 0, row?[3] as Int64? ?? 0, row?[4] as Int64? ?? 0]
            )
        }
        let (used, dropped, inFlight, counters) = figures ?? (-1, 0, 0, [0, 0, 0])
        return state.withLock { s in
            var stats = StoreStatistics(
                readings: s.rowCount, unsyncedReadings: s.unsyncedCount, inFlightBatches: inFlight, usedBytes: used,
                droppedByBudgetTotal: dropped, health: s.health, corruptStoresMovedAside: s.generation.corruptionsMovedAside,
                memoryOnlyAlertUpdates: s.memoryAlerts.count)
            stats.quarantinedReadings = counters[0]
            stats.salvagedReadings = counters[1]
            stats.unsalvageableRows = counters[2]
            stats.memoryOnlyReason = s.memoryFallback.map { "\($0.code): \($0.message)" }
            stats.encryptionKeyID = s.memoryFallback == nil ? cipher?.key.idText : nil
            return stats
        }
    }

    /// `PRAGMA integrity_check`'s verdict: `["ok"]` for a healthy file.
    public func integrityCheck() throws(StoreError) -> [String] {
        try read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    /// Bytes of the database's live pages: (page_count - freelist_count) * page_size.
    public func usedBytes() throws(StoreError) -> Int64 {
        try readStatement { db in try self.usedBytes(db) }
    }

    /// Inside a write transaction this counts the transaction's own pages too. Two cached PRAGMA
    /// statements rather than one query over `pragma_page_count()`: the table-valued forms
    /// compile their PRAGMA again on every call.
    private func usedBytes(_ db: Database) throws -> Int64 {
        let pages = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA page_count")) ?? 0
        let free = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA freelist_count")) ?? 0
        return (pages - free) * pageSize
    }

    /// Stops using the database: later calls fail with a store error. The SQLite connection
    /// itself closes when the last reference to the store goes away (closing it under a sync
    /// task still holding the store would let that task reach a closed connection).
    public func close() {
        db.writeWithoutTransaction { _ in state.withLock { $0.closed = true } }
    }

    // MARK: - Fault injection (tests)

    /// Makes SQLite behave as on a full disk (`SQLITE_FULL` once the file would grow) or a
    /// read-only file system (`SQLITE_READONLY` on every write), or removes either.
    package enum SimulatedFault: Sendable { case none, diskFull, readOnly }

    /// The fault is injected in front of every write transaction, as the error SQLite reports
    /// for it (`SQLITE_FULL`, `SQLITE_READONLY`), so the whole error path from SQLite's result
    /// code up is exercised. (Limiting `max_page_count` alone is not enough: in WAL mode a
    /// commit that fits into free pages still succeeds, where a full disk refuses the WAL append.)
    package func simulate(_ fault: SimulatedFault) throws {
        state.withLock { $0.simulatedFault = fault }
    }

    /// A transaction committed with `synchronous=NORMAL`: no fsync of its own, made durable by
    /// the next FULL commit (which fsyncs the WAL with every frame before it). Used only where
    /// losing the transaction to a power cut is harmless: an acknowledgement lost that way
    /// just means the batch is resent and answered from the server's cache.
    private func writeWithoutFsync<T>(_ updates: (Database) throws -> T) throws -> T {
        try injectedFault()
        return try db.writeWithoutTransaction { db in
            try checkOpen()
            try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
            defer { try? db.cachedStatement(sql: configuration.durability.synchronousPragma).execute() }
            var result: T?
            try db.inTransaction {
                result = try updates(db)
                return .commit
            }
            guard let result else { throw StoreError(code: .database, message: "transaction produced nothing", path: configuration.path) }
            return result
        }
    }

    private func injectedFault() throws {
        switch state.withLock({ $0.simulatedFault }) {
        case .none: break
        case .diskFull: throw DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full (simulated)")
        case .readOnly: throw DatabaseError(resultCode: .SQLITE_READONLY, message: "attempt to write a readonly database (simulated)")
        }
    }

    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try injectedFault()
        return try db.write { db in
            try checkOpen()
            return try updates(db)
        }
    }

    // MARK: - Budget

    /// `measured`: the bytes in use as the commit that just ended saw them.
    private func enforceBudget(used measured: Int64) throws(StoreError) {
        let budget = configuration.diskBudgetBytes
        guard measured > budget else { return }
        do {
            var used = measured
            // Drop down to 95% of the budget so the next few commits do not each evict again.
            let target = budget - budget / 20
            var rounds = 0
            while used > target, rounds < 64 {
                rounds += 1
                let rows = state.withLock { $0.rowCount }
                let perRow = max(16, used / Int64(max(rows, 1)))
                let excess = Int((used - target) / perRow) + 32
                let (synced, unsynced, usedAfter) = try write { db -> (Int, Int, Int64) in
                    let protect = try self.protectionClause(db)
                    let reserved = try self.reservedSequences(db)
                    try db.execute(
                        sql: """
                            DELETE FROM readings WHERE seq IN (
                                SELECT seq FROM readings WHERE synced = 1 AND NOT (\(protect.sql)) ORDER BY seq LIMIT ?)
                            """, arguments: protect.arguments + [excess])
                    let synced = db.changesCount
                    var unsynced = 0
                    if synced < excess {
                        let candidates = try Int64.fetchAll(
                            db, sql: "SELECT seq FROM readings WHERE synced = 0 AND NOT (\(protect.sql)) ORDER BY seq LIMIT ?",
                            arguments: protect.arguments + [excess - synced + reserved.count]
                        ).filter { !reserved.contains($0) }.prefix(excess - synced)
                        if !candidates.isEmpty {
                            try db.cachedStatement(sql: "DELETE FROM readings WHERE seq IN (SELECT value FROM json_each(?))")
                                .execute(arguments: [Self.jsonArray(candidates)])
                            unsynced = db.changesCount
                        }
                        if unsynced > 0 { try self.addDropped(Int64(unsynced), db) }
                    }
                    return (synced, unsynced, try self.usedBytes(db))
                }
                state.withLock { s in
                    s.rowCount -= synced + unsynced
                    s.unsyncedCount -= unsynced
                }
                if unsynced > 0 {
                    logger.info("disk budget reached, unsynced readings dropped", metadata: ["store.dropped": "\(unsynced)"])
                }
                if synced + unsynced == 0 { break }
                used = usedAfter
            }
        } catch {
            let failure = Self.storeError(error, path: configuration.path)
            noteFailure(failure)
            throw failure
        }
    }

    private func addDropped(_ count: Int64, _ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE meta SET value = value + ? WHERE key IN (?, ?)")
            .execute(arguments: [count, MetaKey.droppedUnreported, MetaKey.droppedTotal])
    }

    /// Readings within `alertWindow` of a journaled alert's first critical observation (same
    /// boot) are kept. One correlated `EXISTS` over the `alert_updates_window` index (v2), so its
    /// size and cost per reading stay the same however many alerts the journal holds: this runs
    /// in every commit that evicts, and it used to be an `OR` of one term per alert ever
    /// journaled, which made a device's commits slower with every alert of its life.
    private func protectionClause(_ db: Database) throws -> (sql: String, arguments: StatementArguments) {
        let window = Int64(configuration.alertWindow.components.seconds) * 1_000_000_000
            + configuration.alertWindow.components.attoseconds / 1_000_000_000
        return (
            """
            EXISTS (SELECT 1 FROM alert_updates a WHERE a.boot = readings.boot
                AND a.mono_ns BETWEEN readings.mono_ns - ? AND readings.mono_ns + ?)
            """,
            [window, window]
        )
    }

    private func reservedSequences(_ db: Database, includingLatest: Bool = true) throws -> Set<Int64> {
        var out = Set<Int64>()
        let sql = includingLatest ? "SELECT seqs FROM in_flight" : "SELECT seqs FROM in_flight WHERE latest = 0"
        for blob in try Data.fetchAll(db.cachedStatement(sql: sql)) {
            out.formUnion(try SequenceList.decode(Array(blob)))
        }
        return out
    }

    // MARK: - Helpers

    /// Readings by sequence number, ascending, missing ones skipped: one cached statement for
    /// any number of them (the numbers travel as one JSON array argument).
    private func fetchReadings(_ sequences: [Int64], _ db: Database) throws -> [WireReading] {
        guard !sequences.isEmpty else { return [] }
        let statement = try db.cachedStatement(
            sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq")
        return try Row.fetchAll(statement, arguments: [Self.jsonArray(sequences)]).compactMap { try self.decodeReading($0) }
    }

    /// `[1,2,3]`: sequence numbers as a JSON array for `json_each`.
    static func jsonArray(_ values: some Sequence<Int64>) -> String {
        var out = "["
        var first = true
        for value in values {
            if !first { out += "," }
            first = false
            out += String(value)
        }
        return out + "]"
    }

    private func bootRef(_ bootID: String, _ db: Database) throws -> Int64 {
        if let id = state.withLock({ $0.bootRefs[bootID] }) { return id }
        try db.execute(sql: "INSERT OR IGNORE INTO boots (boot_id) VALUES (?)", arguments: [bootID])
        guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM boots WHERE boot_id = ?", arguments: [bootID]) else {
            throw StoreError(code: .database, message: "boot id not interned", path: configuration.path)
        }
        // Cached only after the transaction commits would be stricter; a rolled-back insert is
        // harmless because the next transaction inserts it again (INSERT OR IGNORE).
        state.withLock { s in
            s.bootRefs[bootID] = id
            s.bootIDs[id] = bootID
        }
        return id
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
                monotonicNanoseconds: UInt64(bitPattern: mono), bootID: bootID, wallClockMilliseconds: row[3] as Int64?,
                wallClockTrusted: decoded.wallClockTrusted),
            payload: decoded.payload)
    }

    /// A read of a single statement, outside a transaction: SQLite runs a lone statement on one
    /// consistent snapshot anyway, and the BEGIN and COMMIT of `read` would cost two statements
    /// more to parse (GRDB does not cache them) for the cheap reads asked several times a second.
    func readStatement<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try db.unsafeRead { db in
                try checkOpen()
                return try body(db)
            }
        } catch {
            throw Self.storeError(error, path: configuration.path)
        }
    }

    /// A read transaction of several statements. Not GRDB's `read`: that one sets and clears
    /// `PRAGMA query_only` around every read, and SQLite expires every prepared statement of the
    /// connection whenever a flag pragma changes, so each read would make all cached statements
    /// compile again on their next use.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        do {
            return try db.unsafeRead { db in
                try checkOpen()
                var result: T?
                try db.inTransaction(.deferred) {
                    result = try body(db)
                    return .commit
                }
                guard let result else { throw StoreError(code: .database, message: "read produced nothing", path: configuration.path) }
                return result
            }
        } catch {
            throw Self.storeError(error, path: configuration.path)
        }
    }

    private func checkOpen() throws {
        if state.withLock({ $0.closed }) {
            throw StoreError(code: .database, message: "the store is closed", path: configuration.path)
        }
    }

    private static func health(for error: StoreError) -> StoreHealth? {
        switch error.code {
        case .diskFull: .diskFull
        case .readOnly: .readOnly
        case .ioError: .ioError
        case .keyMissing, .wrongKey: .keyUnavailable
        default: nil
        }
    }

    private func noteFailure(_ error: StoreError) {
        guard let health = Self.health(for: error) else { return }
        let changed = state.withLock { s -> Bool in
            defer { s.health = health }
            return s.health != health
        }
        if changed { logger.info("store cannot write", metadata: ["store.health": "\(health.rawValue)", "store.error": "\(error.message)"]) }
    }

    private static func wrap<T>(path: String, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw storeError(error, path: path)
        }
    }

    /// The one place SQLite result codes become store error codes.
    static func storeError(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? DatabaseError else {
            return StoreError(code: .badRecord, message: "\(error)", path: path)
        }
        let message = error.message ?? "\(error.resultCode)"
        switch error.resultCode {
        case .SQLITE_FULL: return StoreError(code: .diskFull, message: message, path: path)
        case .SQLITE_READONLY: return StoreError(code: .readOnly, message: message, path: path)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return StoreError(code: .corrupt, message: message, path: path)
        case .SQLITE_IOERR, .SQLITE_CANTOPEN:
            if isReadOnlyFileSystem(path) { return StoreError(code: .readOnly, message: message, path: path) }
            return StoreError(code: .ioError, message: message, path: path)
        default: return StoreError(code: .database, message: message, path: path)
        }
    }

    private static func isReadOnlyFileSystem(_ path: String) -> Bool {
        let directory = (path as NSString).deletingLastPathComponent
        return !FileManager.default.isWritableFile(atPath: directory.isEmpty ? "." : directory)
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
