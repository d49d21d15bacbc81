import Foundation
import GRDB
import TrackMeCore
import TrackMeSystem

/// The default store: one SQLite file in WAL mode (GRDB `DatabasePool`: one writer, concurrent
/// readers).
///
/// `synchronous = FULL`: a batch is acknowledged only after its transaction is on disk, because
/// the device deletes its copy once acknowledged; NORMAL would be faster but could lose the last
/// acknowledged batches on power loss. (`CommitDurability.processCrash` chooses NORMAL: the
/// simulation only.)
final class SQLiteServerStore: ServerStore {
    let path: String
    let pool: DatabasePool
    /// Token lookups' own read-only connection (`token(id:)`).
    private let tokenReader: DatabaseQueue

    /// Sealed per-person keys: contacts, notes and reading bodies are sealed and opened here.
    let personKeys: PersonKeys

    var displayName: String { "sqlite:\(path)" }

    init(path: String, durability: CommitDurability = .powerLoss, personKeys: PersonKeys = .off) throws {
        self.path = path
        self.personKeys = personKeys
        try PrivateFile.prepareDatabase(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in try db.execute(sql: durability.synchronousPragma) }
        pool = try DatabasePool(path: path, configuration: configuration)
        // Again on the writer, last: GRDB's WAL set-up runs after `prepareDatabase` and leaves the
        // writer at NORMAL, so acknowledged batches could be lost to a power cut.
        try pool.writeWithoutTransaction { db in try db.execute(sql: durability.synchronousPragma) }
        var readOnly = Configuration()
        readOnly.readonly = true
        readOnly.busyMode = .timeout(10)
        tokenReader = try DatabaseQueue(path: path, configuration: readOnly)
    }

    func migrate() async throws {
        var migrator = DatabaseMigrator()
        // Append-only: a landed migration is never edited, a change is a new one.
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE tokens (
                        id TEXT PRIMARY KEY,
                        secret_hash TEXT NOT NULL,
                        role TEXT NOT NULL,
                        device_id TEXT,
                        created_ms INTEGER NOT NULL
                    );
                    CREATE TABLE devices (
                        device_id TEXT PRIMARY KEY,
                        person TEXT NOT NULL,
                        enrolled_ms INTEGER NOT NULL,
                        last_seen_ms INTEGER,
                        silent INTEGER NOT NULL DEFAULT 0,
                        heartbeat TEXT,
                        dropped_by_budget INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE batches (
                        device_id TEXT NOT NULL,
                        batch_seq INTEGER NOT NULL,
                        received_ms INTEGER NOT NULL,
                        stored INTEGER NOT NULL DEFAULT 0,
                        duplicates INTEGER NOT NULL DEFAULT 0,
                        acknowledged_alerts TEXT NOT NULL DEFAULT '[]',
                        PRIMARY KEY (device_id, batch_seq)
                    );
                    CREATE TABLE readings (
                        device_id TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        placed_ms INTEGER NOT NULL,
                        received_ms INTEGER NOT NULL,
                        wall_ms INTEGER,
                        time_flag TEXT,
                        body TEXT NOT NULL,
                        PRIMARY KEY (device_id, seq)
                    );
                    CREATE INDEX readings_placed ON readings (placed_ms);
                    CREATE TABLE alerts (
                        alert_id TEXT PRIMARY KEY,
                        device_id TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        state TEXT NOT NULL,
                        last_update_seq INTEGER NOT NULL,
                        record TEXT NOT NULL,
                        created_ms INTEGER NOT NULL,
                        updated_ms INTEGER NOT NULL,
                        acknowledged INTEGER NOT NULL DEFAULT 0,
                        acknowledged_ms INTEGER,
                        acknowledged_by TEXT,
                        ack_delivered INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX alerts_undelivered_acks ON alerts (device_id) WHERE acknowledged = 1 AND ack_delivered = 0;
                    CREATE TABLE alert_updates (
                        alert_id TEXT NOT NULL,
                        update_seq INTEGER NOT NULL,
                        device_id TEXT NOT NULL,
                        type TEXT NOT NULL,
                        body TEXT NOT NULL,
                        received_ms INTEGER NOT NULL,
                        PRIMARY KEY (alert_id, update_seq)
                    );
                    CREATE TABLE feed (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        kind TEXT NOT NULL,
                        data TEXT NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v2-epochs-digest-clock") { db in
            // Store epochs and batch digests (WIRE.md, "Store epochs and conflicts"); the last
            // trusted wall time of the retention job (a clock that jumped is not acted on).
            try db.execute(
                sql: """
                    ALTER TABLE batches ADD COLUMN store_epoch TEXT;
                    ALTER TABLE batches ADD COLUMN digest TEXT;
                    CREATE TABLE device_epochs (
                        device_id TEXT NOT NULL,
                        store_epoch TEXT NOT NULL,
                        seq_floor INTEGER NOT NULL,
                        batch_floor INTEGER NOT NULL,
                        first_seen_ms INTEGER NOT NULL,
                        PRIMARY KEY (device_id, store_epoch)
                    );
                    CREATE TABLE server_clock (id INTEGER PRIMARY KEY CHECK (id = 1), trusted_wall_ms INTEGER NOT NULL);
                    """
            )
        }
        migrator.registerMigration("v3-token-expiry") { db in
            // Dispatcher tokens end by themselves; device tokens have no expiry.
            try db.execute(sql: "ALTER TABLE tokens ADD COLUMN expires_ms INTEGER")
        }
        ConsoleSchema.register(in: &migrator)
        CareSchema.register(in: &migrator)
        PeopleSchema.register(in: &migrator)
        RaceSchema.register(in: &migrator)
        AlertsSchema.register(in: &migrator)
        AccountSchema.register(in: &migrator)
        FleetSchema.register(in: &migrator)
        try migrator.migrate(pool)
    }

    func insertToken(_ token: StoredToken, createdMilliseconds: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO tokens (id, secret_hash, role, device_id, created_ms, expires_ms) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [token.id, token.secretHash, token.role.rawValue, token.deviceID, createdMilliseconds, token.expiresMilliseconds]
            )
        }
    }

    /// Read on the calling thread, on a connection of its own, not handed to a reader's queue
    /// and back: every request reads its token, and the lookup (one primary-key row, tens of
    /// microseconds) is shorter than the two thread hand-offs around it. Not the pool's readers:
    /// a synchronous read waits for a free one, and an async read holds one until its task
    /// resumes on the cooperative pool, so pool threads waiting here could starve the very
    /// reads they wait for (it hung at 18,000 devices). This connection serves only this lookup,
    /// which never waits for anything but another lookup.
    func token(id: String) async throws -> StoredToken? {
        let readNow: ((Database) throws -> StoredToken?) throws -> StoredToken? = tokenReader.read
        return try readNow { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT secret_hash, role, device_id, expires_ms FROM tokens WHERE id = ?"),
                    arguments: [id]
                ),
                let role = Role(rawValue: try row.decode(forColumn: "role"))
            else { return nil }
            return StoredToken(
                id: id,
                secretHash: try row.decode(forColumn: "secret_hash"),
                role: role,
                deviceID: try row.decode(forColumn: "device_id"),
                expiresMilliseconds: try row.decode(forColumn: "expires_ms")
            )
        }
    }

    func enrolDevice(_ device: DeviceRow, token: StoredToken) async throws -> Bool {
        let person = try await personKeys.sealProfile(try StoreJSON.encode(device.person), owner: device.deviceID)
        return try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO devices (device_id, person, enrolled_ms) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [device.deviceID, person, device.enrolledMilliseconds]
            )
            guard db.changesCount == 1 else { return false }
            try db.execute(
                sql: "INSERT INTO tokens (id, secret_hash, role, device_id, created_ms) VALUES (?, ?, ?, ?, ?)",
                arguments: [token.id, token.secretHash, token.role.rawValue, token.deviceID, device.enrolledMilliseconds]
            )
            return true
        }
    }

    func device(id: String) async throws -> DeviceRow? {
        let found = try await pool.read { db -> (person: String, enrolled: Int64)? in
            guard let row = try Row.fetchOne(db, sql: "SELECT person, enrolled_ms FROM devices WHERE device_id = ?", arguments: [id]) else {
                return nil
            }
            return (try row.decode(forColumn: "person"), try row.decode(forColumn: "enrolled_ms"))
        }
        guard let found else { return nil }
        let person: PersonProfile = try StoreJSON.decode(try await personKeys.readableProfile(found.person, owner: id))
        return DeviceRow(deviceID: id, person: person, enrolledMilliseconds: found.enrolled)
    }

    func deviceContact(id: String) async throws -> (heartbeatJSON: String?, lastSeenMilliseconds: Int64?) {
        try await pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT heartbeat, last_seen_ms FROM devices WHERE device_id = ?", arguments: [id])
            guard let row else { return (nil, nil) }
            return (try row.decode(forColumn: "heartbeat"), try row.decode(forColumn: "last_seen_ms"))
        }
    }

    func trustedWallTime() async throws -> Int64? {
        try await pool.read { db in try Int64.fetchOne(db, sql: "SELECT trusted_wall_ms FROM server_clock WHERE id = 1") }
    }

    func setTrustedWallTime(_ milliseconds: Int64) async throws {
        try await pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO server_clock (id, trusted_wall_ms) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET trusted_wall_ms = excluded.trusted_wall_ms",
                arguments: [milliseconds]
            )
        }
    }

    func integrityProblem() async -> String? {
        do {
            let verdict = try await pool.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            return verdict == ["ok"] ? nil : verdict.prefix(3).joined(separator: "; ")
        } catch {
            return "\(error)"
        }
    }

    /// A read on the pool, the file and its directory writable (the journal and WAL are created
    /// beside it), and room left on the file system: SQLite's SQLITE_FULL comes only with the
    /// write that needed the room.
    func readiness(minimumFreeBytes: Int64) async -> StoreReadiness {
        var readiness = StoreReadiness()
        do {
            _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
        } catch {
            readiness.answers = false
            readiness.problems.append("the database does not answer a read: \(error)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        let files = FileManager.default
        let space = FileSystemSpace.of(path)
        if !files.isWritableFile(atPath: path) || !files.isWritableFile(atPath: directory.isEmpty ? "." : directory)
            || space?.readOnly == true
        {
            readiness.writable = false
            readiness.problems.append("the database file \(path) or its directory is read-only")
        }
        if let space {
            let free = space.availableBytes
            readiness.freeBytes = free
            if free < minimumFreeBytes {
                readiness.writable = false
                readiness.problems.append("\(free) bytes free on the database's file system, under the \(minimumFreeBytes) a write needs: free space")
            }
        }
        return readiness
    }

    /// `at` is the server's wall time of the change: replay is bounded by it (`FeedReplay`).
    static func appendFeed(_ db: Database, kind: String, data: String, at: Int64? = nil) throws {
        try db.execute(sql: "INSERT INTO feed (kind, data, at_ms) VALUES (?, ?, ?)", arguments: [kind, data, at])
    }

    /// The rows `query` selects, in sequence order, at most its limit: the statement behind
    /// the readings and counts below.
    private static func readingRows(_ query: ReadingQuery, columns: String) -> (sql: String, arguments: StatementArguments) {
        var sql = "SELECT \(columns) FROM readings WHERE device_id = ? AND seq > ?"
        var arguments: StatementArguments = [query.deviceID, query.afterSequence]
        if let from = query.fromMilliseconds {
            sql += " AND placed_ms >= ?"
            arguments += [from]
        }
        if let to = query.toMilliseconds {
            sql += " AND placed_ms < ?"
            arguments += [to]
        }
        if let kind = query.kind {
            sql += " AND kind = ?"
            arguments += [kind.rawValue]
        }
        sql += " ORDER BY seq LIMIT ?"
        arguments += [query.limit]
        return (sql, arguments)
    }

    /// How many rows `query` selects (at most its limit), on the caller's connection: the one
    /// count behind `readingCount` and `readingCountOnThisThread`.
    private static func readingCount(_ db: Database, _ query: ReadingQuery) throws -> Int {
        let (rows, arguments) = readingRows(query, columns: "1")
        return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(rows))", arguments: arguments) ?? 0
    }

    /// The rows `query` selects as stored (bodies still sealed), on the caller's connection.
    private static func sealedReadingRows(_ db: Database, _ query: ReadingQuery) throws -> [StoredReadingRow] {
        let (sql, arguments) = readingRows(query, columns: "seq, body, placed_ms, received_ms, time_flag")
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            let flag: String? = try row.decode(forColumn: "time_flag")
            return StoredReadingRow(
                sequence: try row.decode(forColumn: "seq"),
                body: try row.decode(forColumn: "body"),
                placedMilliseconds: try row.decode(forColumn: "placed_ms"),
                receivedMilliseconds: try row.decode(forColumn: "received_ms"),
                timeFlag: flag.flatMap(TimeFlag.init(rawValue:))
            )
        }
    }

    func readingCountOnThisThread(_ query: ReadingQuery) throws -> Int {
        try pool.read { db in try Self.readingCount(db, query) }
    }

    func sealedReadingRows(_ query: ReadingQuery) throws -> [StoredReadingRow] {
        try pool.read { db in try Self.sealedReadingRows(db, query) }
    }

    func readingCount(_ query: ReadingQuery) async throws -> Int {
        try await pool.read { db in try Self.readingCount(db, query) }
    }

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        let rows = try await pool.read { db in try Self.sealedReadingRows(db, query) }
        return try await personKeys.open(rows, owner: query.deviceID)
    }

    func markSilentDevices(lastSeenBefore: Int64, nowMilliseconds: Int64) async throws -> [String] {
        try await pool.write { db in
            let rows = try Row.fetchAll(
                db,
                sql:
                    "SELECT device_id, last_seen_ms FROM devices WHERE silent = 0 AND last_seen_ms IS NOT NULL AND last_seen_ms < ? ORDER BY device_id",
                arguments: [lastSeenBefore]
            )
            var ids: [String] = []
            for row in rows {
                let id: String = try row.decode(forColumn: "device_id")
                let lastSeen: Int64 = try row.decode(forColumn: "last_seen_ms")
                try db.execute(sql: "UPDATE devices SET silent = 1 WHERE device_id = ?", arguments: [id])
                let data = try StoreJSON.encode(
                    DeviceEventData(deviceID: id, lastSeenMilliseconds: lastSeen, silentForMilliseconds: nowMilliseconds - lastSeen)
                )
                try Self.appendFeed(db, kind: FeedKind.deviceSilent, data: data, at: nowMilliseconds)
                ids.append(id)
            }
            return ids
        }
    }

    func deleteReadings(placedBefore cutoff: Int64) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM readings WHERE placed_ms < ?", arguments: [cutoff])
            let deleted = db.changesCount
            // The day summaries go with their readings, the cut-off's own day too (part of it went).
            try db.execute(sql: "DELETE FROM heart_rate_days WHERE day <= ?", arguments: [HeartRateDays.day(cutoff)])
            return deleted
        }
    }

    func counts() async throws -> StoreCounts {
        try await pool.read { db in
            StoreCounts(
                devices: try Int64.fetchOne(db, sql: "SELECT count(*) FROM devices") ?? 0,
                readings: try Int64.fetchOne(db, sql: "SELECT count(*) FROM readings") ?? 0,
                alerts: try Int64.fetchOne(db, sql: "SELECT count(*) FROM alerts") ?? 0,
                silentDevices: try Int64.fetchOne(db, sql: "SELECT count(*) FROM devices WHERE silent = 1") ?? 0
            )
        }
    }

    func close() async throws {
        // A cleanly stopped server leaves one self-contained file (no WAL to copy with it): the
        // pool's writer, closing last, checkpoints and removes it.
        try tokenReader.close()
        _ = try? await pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
        try pool.close()
        try await personKeys.close()
    }
}
