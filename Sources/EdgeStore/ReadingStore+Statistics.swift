import GRDB
import Synchronization

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
    /// The fingerprint of the key the store on disk is sealed under, or nil in clear
    /// (and while the store runs from memory).
    public var encryptionKeyID: String? = nil

    /// `disk` or `memory_only`: what the heartbeat and `status` call the store's state.
    public var storeState: String { memoryOnlyReason == nil ? "disk" : "memory_only" }
}

/// The `meta` counters and what the store reports about itself: statistics for the heartbeat and
/// `status`, health, bytes in use (what the budget limits), integrity.
extension ReadingStore {
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
                        """
                ),
                arguments: [MetaKey.droppedTotal, MetaKey.quarantinedTotal, MetaKey.salvagedTotal, MetaKey.unsalvageableTotal]
            )
            return (
                try self.usedBytes(db), row?[0] as Int64? ?? 0, row?[1] as Int? ?? 0,
                [row?[2] as Int64? ?? 0, row?[3] as Int64? ?? 0, row?[4] as Int64? ?? 0]
            )
        }
        let (used, dropped, inFlight, counters) = figures ?? (-1, 0, 0, [0, 0, 0])
        return state.withLock { s in
            var stats = StoreStatistics(
                readings: s.rowCount,
                unsyncedReadings: s.unsyncedCount,
                inFlightBatches: inFlight,
                usedBytes: used,
                droppedByBudgetTotal: dropped,
                health: s.health,
                corruptStoresMovedAside: s.generation.corruptionsMovedAside,
                memoryOnlyAlertUpdates: s.memoryAlerts.count
            )
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
    func usedBytes(_ db: Database) throws -> Int64 {
        let pages = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA page_count")) ?? 0
        let free = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA freelist_count")) ?? 0
        return (pages - free) * pageSize
    }

    /// Counts `count` readings dropped (by the budget, or in memory before they reached the disk):
    /// in the total, and in what the next batch reports to the server.
    func addDropped(_ count: Int64, _ db: Database) throws {
        try db.cachedStatement(sql: "UPDATE meta SET value = value + ? WHERE key IN (?, ?)")
            .execute(arguments: [count, MetaKey.droppedUnreported, MetaKey.droppedTotal])
    }
}
