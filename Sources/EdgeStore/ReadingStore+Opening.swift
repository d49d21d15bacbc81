import Foundation
import GRDB
import Logging
import Synchronization
import TrackMeCore

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

/// Opening and recovery: the checks at start-up, a corrupt file moved aside, a new generation when
/// a file starts over, running from memory when the disk refuses the store, and reopening on
/// disk later.
extension ReadingStore {
    /// What `open` hands to `init`: the connection and what was read from it.
    struct Opened {
        var queue: DatabaseQueue
        var pageSize: Int64
        var epoch: String
        var state: State
        var report: StoreOpenReport
    }

    /// Opens the store at `configuration.path` for `init`, creating it if needed. A database found
    /// corrupt is moved aside to `PATH.corrupt-N` (with its WAL) and a fresh one created; a disk
    /// that refuses even to open it (or a store sealed under a key not given) leaves the store
    /// running from memory.
    static func open(configuration: StoreConfiguration, logger: Logger) throws -> Opened {
        let started = ContinuousClock.now
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
                    metadata: ["store.path": "\(path)", "store.moved_to": "\(movedAside ?? "")", "store.reason": "\(error.message)"]
                )
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
        let pageSize = try Self.wrap(path: path) {
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
        let report = StoreOpenReport(
            movedAsidePath: movedAside,
            createdFresh: fresh,
            memoryFallback: fallback,
            openDuration: ContinuousClock.now - started
        )
        return Opened(queue: queue, pageSize: pageSize, epoch: Self.epochText(epoch ?? 0), state: initial, report: report)
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

    private static func wrap<T>(path: String, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw storeError(error, path: path)
        }
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
                metadata: ["store.path": "\(configuration.path)", "store.readings": "\(harvest.readings.count)"]
            )
            return true
        }
    }
}
