import Foundation
import GRDB
public import Logging
import Synchronization
import TrackMeCore

/// The device's durable buffer: readings, the alert journal and the sync cursor in one SQLite
/// file in WAL mode.
///
/// Where each part lives (one type, its extensions by table):
/// - this file: the connection, the in-memory state, transactions and how SQLite errors become
///   `StoreError`s;
/// - ReadingStore+Opening: opening, recovery from a corrupt file, running from memory and
///   reopening on disk;
/// - ReadingStore+Readings: the `readings` table (append, queries, the integrity quarantine);
/// - ReadingStore+Reservations: `in_flight`, the batches the sync lane reserves, acknowledges,
///   abandons or re-bases;
/// - ReadingStore+AlertJournal: `alert_updates` and its quarantine;
/// - ReadingStore+Statistics: the `meta` counters, statistics and health; ReadingStore+DeviceState:
///   `device_state`;
/// - ReadingStore+Budget: eviction over the disk budget, as `BudgetEvictionPolicy` decides it;
/// - ReadingStore+Encryption and +Salvage: sealing at rest and salvage of moved-aside files;
/// - ReadingStore+FaultInjection: the disk faults tests inject.
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
    let connection: Mutex<DatabaseQueue>

    /// The connection's `PRAGMA synchronous` (2 FULL, 1 NORMAL), for tests of durability.
    var synchronousSetting: Int? {
        try? connection.withLock { queue in try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } }
    }
    var db: DatabaseQueue { connection.withLock { $0 } }
    let logger: Logger
    /// Fixed when the file was created (WAL mode cannot change it).
    let pageSize: Int64
    /// Seals and opens row bodies when the store is encrypted at rest; nil in clear.
    let cipher: RowCipher?
    let state: Mutex<State>

    struct State {
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
    let epoch: Mutex<String>

    /// Opens the store at `configuration.path`, creating it if needed. A database found corrupt
    /// is moved aside to `PATH.corrupt-N` (with its WAL) and a fresh one created; the event is
    /// logged, counted in `statistics().corruptStoresMovedAside` and described in `openReport`.
    /// (How: `ReadingStore.open`, in ReadingStore+Opening.)
    public init(configuration: StoreConfiguration, logger: Logger = Logger(label: "trackme.store")) throws {
        let opened = try Self.open(configuration: configuration, logger: logger)
        self.configuration = configuration
        self.logger = logger
        cipher = configuration.encryptionKey.map { RowCipher(key: $0) }
        connection = Mutex(opened.queue)
        pageSize = opened.pageSize
        epoch = Mutex(opened.epoch)
        state = Mutex(opened.state)
        openReport = opened.report
        if opened.report.memoryFallback == nil { salvageMovedAsideStores() }
    }

    /// Stops using the database: later calls fail with a store error. The SQLite connection
    /// itself closes when the last reference to the store goes away (closing it under a sync
    /// task still holding the store would let that task reach a closed connection).
    public func close() {
        db.writeWithoutTransaction { _ in state.withLock { $0.closed = true } }
    }

    // MARK: - Transactions

    /// A write transaction, committed with the store's durability (`synchronous=FULL` on the
    /// device), behind the injected fault if there is one.
    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try injectedFault()
        return try db.write { db in
            try checkOpen()
            return try updates(db)
        }
    }

    /// A transaction committed with `synchronous=NORMAL`: no fsync of its own, made durable by
    /// the next FULL commit (which fsyncs the WAL with every frame before it). Used only where
    /// losing the transaction to a power cut is harmless: an acknowledgement lost that way
    /// just means the batch is resent and answered from the server's cache.
    func writeWithoutFsync<T>(_ updates: (Database) throws -> T) throws -> T {
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

    // MARK: - Errors

    static func health(for error: StoreError) -> StoreHealth? {
        switch error.code {
        case .diskFull: .diskFull
        case .readOnly: .readOnly
        case .ioError: .ioError
        case .keyMissing, .wrongKey: .keyUnavailable
        default: nil
        }
    }

    func noteFailure(_ error: StoreError) {
        guard let health = Self.health(for: error) else { return }
        let changed = state.withLock { s -> Bool in
            defer { s.health = health }
            return s.health != health
        }
        if changed { logger.info("store cannot write", metadata: ["store.health": "\(health.rawValue)", "store.error": "\(error.message)"]) }
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

    // MARK: - Shared by the tables

    /// The `boots` row of `bootID`: readings and alert updates name their boot by this number.
    func bootRef(_ bootID: String, _ db: Database) throws -> Int64 {
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
}
