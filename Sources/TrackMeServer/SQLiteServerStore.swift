import Foundation
import GRDB
import TrackMeCore

#if canImport(Glibc)
import Glibc
#endif

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
    let groupCommit: IngestGroupCommit

    var displayName: String { "sqlite:\(path)" }

    init(path: String, durability: CommitDurability = .powerLoss) throws {
        self.path = path
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
        let pool = self.pool
        groupCommit = IngestGroupCommit { commit in SQLiteServerStore.writeNextGroup(of: commit, on: pool) }
    }

    /// One group per turn of GRDB's writer queue, in one transaction, each batch in a savepoint
    /// of its own; then the next group in a turn of its own, so that another write queued
    /// meanwhile (an alert) goes in between rather than after the whole backlog.
    private static func writeNextGroup(of commit: IngestGroupCommit, on pool: DatabasePool) {
        pool.asyncWriteWithoutTransaction { db in
            guard let group = commit.nextGroup() else { return }
            do {
                var results: [Result<IngestResult, any Error>] = []
                try db.inTransaction {
                    results = group.batches.map { batch in Result { try ingestInSavepoint(batch, in: db) } }
                    return .commit
                }
                group.complete(results)
            } catch {
                group.fail(error)
            }
            writeNextGroup(of: commit, on: pool)
        }
    }

    /// One batch of a group and its reply's news, in a savepoint of its own: one that throws is
    /// rolled back alone.
    private static func ingestInSavepoint(_ batch: IncomingBatch, in db: Database) throws -> IngestResult {
        var result: IngestResult?
        try db.inSavepoint {
            var ingested = try ingest(batch, in: db)
            if ingested.conflict == nil { ingested.news = try news(deviceID: batch.deviceID, in: db) }
            result = ingested
            return .commit
        }
        guard let result else { throw StoreError(code: .inconsistent, message: "batch not written") }
        return result
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
        let person = try StoreJSON.encode(device.person)
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
        let person: PersonProfile = try StoreJSON.decode(found.person)
        return DeviceRow(deviceID: id, person: person, enrolledMilliseconds: found.enrolled)
    }

    /// Batches from many devices arriving together are written in one transaction, one fsync
    /// for all of them (`IngestGroupCommit`); each in a savepoint of its own, so that one that
    /// fails is rolled back alone and the others are stored.
    func ingest(_ batch: IncomingBatch) async throws -> IngestResult {
        try await groupCommit.ingest(batch)
    }

    /// One batch inside the group's transaction.
    static func ingest(_ batch: IncomingBatch, in db: Database) throws -> IngestResult {
        try Self.recordContact(db, deviceID: batch.deviceID, heartbeatJSON: batch.heartbeatJSON, receivedMilliseconds: batch.receivedMilliseconds)
        if let epoch = batch.storeEpoch {
            let registered = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT seq_floor, batch_floor FROM device_epochs WHERE device_id = ? AND store_epoch = ?"),
                arguments: [batch.deviceID, epoch]
            )
            let (seqFloor, batchFloor): (Int64, Int64)
            if let registered {
                (seqFloor, batchFloor) = (try registered.decode(atIndex: 0), try registered.decode(atIndex: 1))
            } else {
                // The device's first epoch (a new device, or one whose agent predates epochs
                // and resends what it had in flight) is taken as it is; a later new epoch is
                // a store that started over and must number above everything held.
                let first =
                    try Bool.fetchOne(
                        db.cachedStatement(sql: "SELECT NOT EXISTS (SELECT 1 FROM device_epochs WHERE device_id = ?)"),
                        arguments: [batch.deviceID]
                    ) ?? true
                (seqFloor, batchFloor) = first ? (1, 1) : try Self.floors(db, deviceID: batch.deviceID)
                try db.execute(
                    sql: "INSERT INTO device_epochs (device_id, store_epoch, seq_floor, batch_floor, first_seen_ms) VALUES (?, ?, ?, ?, ?)",
                    arguments: [batch.deviceID, epoch, seqFloor, batchFloor, batch.receivedMilliseconds]
                )
            }
            let lowest = batch.readings.map(\.sequence).min() ?? Int64.max
            if batch.batchSequence < batchFloor || lowest < seqFloor {
                return try Self.conflict(db, .storeEpochRebase, batch: batch)
            }
        }
        try db.cachedStatement(
            sql: "INSERT INTO batches (device_id, batch_seq, received_ms, store_epoch, digest) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
        ).execute(
            arguments: [batch.deviceID, batch.batchSequence, batch.receivedMilliseconds, batch.storeEpoch, batch.digest])
        if db.changesCount == 0 {
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: "SELECT stored, duplicates, acknowledged_alerts, store_epoch, digest FROM batches WHERE device_id = ? AND batch_seq = ?"
                ),
                arguments: [batch.deviceID, batch.batchSequence]
            )
            guard let row else { throw StoreError(code: .inconsistent, message: "claimed batch row vanished") }
            let storedEpoch: String? = try row.decode(forColumn: "store_epoch")
            let storedDigest: String? = try row.decode(forColumn: "digest")
            if BatchDigest.conflicts(storedEpoch: storedEpoch, storedDigest: storedDigest, batch: batch) {
                return try Self.conflict(db, .idempotencyKeyReused, batch: batch)
            }
            let alerts: [String] = try StoreJSON.decode(try row.decode(String.self, forColumn: "acknowledged_alerts"))
            return IngestResult(
                stored: try row.decode(forColumn: "stored"),
                duplicates: try row.decode(forColumn: "duplicates"),
                acknowledgedAlerts: alerts,
                replayed: true
            )
        }
        var stored = 0
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO readings (device_id, seq, kind, placed_ms, received_ms, wall_ms, time_flag, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """
        )
        for reading in batch.readings {
            try insert.execute(arguments: [
                batch.deviceID, reading.sequence, reading.kind.rawValue, reading.placedMilliseconds,
                batch.receivedMilliseconds, reading.wallMilliseconds, reading.timeFlag?.rawValue, reading.body,
            ])
            stored += db.changesCount
        }
        let alerts = try String.fetchAll(
            db.cachedStatement(sql: "SELECT alert_id FROM alerts WHERE device_id = ? AND acknowledged = 1 AND ack_delivered = 0 ORDER BY alert_id"),
            arguments: [batch.deviceID]
        )
        if !alerts.isEmpty {
            try db.cachedStatement(
                sql: "UPDATE alerts SET ack_delivered = 1 WHERE device_id = ? AND acknowledged = 1 AND ack_delivered = 0"
            ).execute(
                arguments: [batch.deviceID])
        }
        let duplicates = batch.readings.count - stored
        try db.cachedStatement(
            sql: "UPDATE batches SET stored = ?, duplicates = ?, acknowledged_alerts = ? WHERE device_id = ? AND batch_seq = ?"
        ).execute(
            // Nearly always none: "[]" without a JSON encoder, which showed in the ingest profile.
            arguments: [stored, duplicates, alerts.isEmpty ? "[]" : try StoreJSON.encode(alerts), batch.deviceID, batch.batchSequence])
        if batch.droppedByBudget != 0 {
            try db.cachedStatement(
                sql: "UPDATE devices SET dropped_by_budget = dropped_by_budget + ? WHERE device_id = ?"
            ).execute(
                arguments: [batch.droppedByBudget, batch.deviceID])
        }
        return IngestResult(stored: stored, duplicates: duplicates, acknowledgedAlerts: alerts, replayed: false)
    }

    /// What the batch's reply tells the device, read in the batch's transaction.
    static func news(deviceID: String, in db: Database) throws -> DeviceNews {
        var news = DeviceNews()
        news.resolvedAlerts = try String.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT alert_id FROM alerts WHERE device_id = ? AND outcome IS NOT NULL AND state NOT IN ('resolved', 'cancelled')
                    ORDER BY alert_id
                    """
            ),
            arguments: [deviceID]
        )
        let care = try Row.fetchOne(db.cachedStatement(sql: "SELECT version, settings FROM care_settings WHERE device_id = ?"), arguments: [deviceID])
        if let care {
            news.careVersion = try care.decode(forColumn: "version")
            news.careJSON = try care.decode(forColumn: "settings")
        }
        return news
    }

    /// Above every reading and batch number the server holds for the device, and every floor
    /// it handed out before. "One above" is added here, checked, not in SQL: SQLite turns an
    /// integer that overflows into a REAL.
    private static func floors(_ db: Database, deviceID: String) throws -> (Int64, Int64) {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT coalesce((SELECT max(seq) FROM readings WHERE device_id = ?), 0),
                           coalesce((SELECT max(seq_floor) FROM device_epochs WHERE device_id = ?), 1),
                           coalesce((SELECT max(batch_seq) FROM batches WHERE device_id = ?), 0),
                           coalesce((SELECT max(batch_floor) FROM device_epochs WHERE device_id = ?), 1)
                    """
            ),
            arguments: [deviceID, deviceID, deviceID, deviceID]
        )
        guard let row else { return (1, 1) }
        return (
            try oneAbove(try row.decode(atIndex: 0), floor: try row.decode(atIndex: 1), what: "seq", deviceID: deviceID),
            try oneAbove(try row.decode(atIndex: 2), floor: try row.decode(atIndex: 3), what: "batch_seq", deviceID: deviceID)
        )
    }

    private static func oneAbove(_ highest: Int64, floor: Int64, what: String, deviceID: String) throws -> Int64 {
        let (next, overflow) = highest.addingReportingOverflow(1)
        guard !overflow else {
            throw StoreError(code: .inconsistent, message: "device \(deviceID) holds \(what) \(highest): nothing fits above it")
        }
        return max(next, floor)
    }

    /// Nothing of the batch is stored: the device re-bases above everything the server holds
    /// for it, and the epoch's floors move there too so that nothing numbered before the
    /// re-base is taken afterwards.
    private static func conflict(_ db: Database, _ reason: BatchConflict.Reason, batch: IncomingBatch) throws -> IngestResult {
        let (seqFloor, batchFloor) = try floors(db, deviceID: batch.deviceID)
        if let epoch = batch.storeEpoch {
            try db.execute(
                sql: "UPDATE device_epochs SET seq_floor = ?, batch_floor = ? WHERE device_id = ? AND store_epoch = ?",
                arguments: [seqFloor, batchFloor, batch.deviceID, epoch]
            )
        }
        return IngestResult(
            stored: 0,
            duplicates: 0,
            acknowledgedAlerts: [],
            replayed: false,
            conflict: IngestConflict(reason: reason, sequenceFloor: seqFloor, batchSequenceFloor: batchFloor)
        )
    }

    /// Any batch, a heartbeat or a replay, is contact: it moves `last_seen` and ends a silence.
    private static func recordContact(_ db: Database, deviceID: String, heartbeatJSON: String?, receivedMilliseconds: Int64) throws {
        let wasSilent = try Bool.fetchOne(db.cachedStatement(sql: "SELECT silent FROM devices WHERE device_id = ?"), arguments: [deviceID]) ?? false
        try db.cachedStatement(
            sql:
                "UPDATE devices SET last_seen_ms = max(coalesce(last_seen_ms, 0), ?), silent = 0, heartbeat = coalesce(?, heartbeat) WHERE device_id = ?"
        ).execute(
            arguments: [receivedMilliseconds, heartbeatJSON, deviceID])
        if wasSilent {
            let data = try StoreJSON.encode(DeviceEventData(deviceID: deviceID, lastSeenMilliseconds: receivedMilliseconds))
            try appendFeed(db, kind: FeedKind.deviceReturned, data: data, at: receivedMilliseconds)
        }
    }

    func recordHeartbeat(deviceID: String, heartbeatJSON: String, receivedMilliseconds: Int64) async throws {
        try await pool.write { db in
            try Self.recordContact(db, deviceID: deviceID, heartbeatJSON: heartbeatJSON, receivedMilliseconds: receivedMilliseconds)
        }
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
        var info = statvfs()
        let mounted = statvfs(path, &info) == 0
        if !files.isWritableFile(atPath: path) || !files.isWritableFile(atPath: directory.isEmpty ? "." : directory)
            || (mounted && info.f_flag & UInt(ST_RDONLY) != 0)
        {
            readiness.writable = false
            readiness.problems.append("the database file \(path) or its directory is read-only")
        }
        if mounted {
            // What an unprivileged writer may still use (f_bavail), not the root reserve.
            let free = Int64(clamping: UInt64(info.f_bavail) &* UInt64(info.f_frsize))
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

    func recordAlertUpdate(_ update: AlertUpdate, body: String, feedData: String, receivedMilliseconds: Int64) async throws -> AlertIntakeOutcome {
        let record = try StoreJSON.encode(update.alert)
        return try await pool.write { db in
            let owner = try String.fetchOne(db, sql: "SELECT device_id FROM alerts WHERE alert_id = ?", arguments: [update.alert.id])
            if let owner, owner != update.alert.deviceID { return .foreignAlert }
            try db.execute(
                sql: """
                    INSERT INTO alert_updates (alert_id, update_seq, device_id, type, body, received_ms)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [update.alert.id, update.updateSequence, update.alert.deviceID, update.type.rawValue, body, receivedMilliseconds]
            )
            let duplicate = db.changesCount == 0
            if !duplicate {
                try db.execute(
                    sql: """
                        INSERT INTO alerts (alert_id, device_id, kind, state, last_update_seq, record, created_ms, updated_ms)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (alert_id) DO UPDATE SET kind = excluded.kind, state = excluded.state, last_update_seq = excluded.last_update_seq,
                            record = excluded.record, updated_ms = excluded.updated_ms
                        WHERE excluded.last_update_seq > alerts.last_update_seq
                        """,
                    arguments: [
                        update.alert.id, update.alert.deviceID, update.alert.kind.rawValue, update.alert.state.rawValue,
                        update.updateSequence, record, receivedMilliseconds, receivedMilliseconds,
                    ]
                )
                try Self.appendFeed(db, kind: FeedKind.alert, data: feedData, at: receivedMilliseconds)
            }
            let acknowledged = try Bool.fetchOne(db, sql: "SELECT acknowledged FROM alerts WHERE alert_id = ?", arguments: [update.alert.id]) ?? false
            return .accepted(AlertIntakeResult(duplicate: duplicate, acknowledged: acknowledged))
        }
    }

    func acknowledgeAlert(id: String, by tokenID: String, atMilliseconds: Int64) async throws -> AcknowledgeOutcome {
        try await pool.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT device_id, acknowledged FROM alerts WHERE alert_id = ?", arguments: [id]) else {
                return .notFound
            }
            let deviceID: String = try row.decode(forColumn: "device_id")
            if try row.decode(Bool.self, forColumn: "acknowledged") { return .alreadyAcknowledged(deviceID: deviceID) }
            try db.execute(
                sql: "UPDATE alerts SET acknowledged = 1, acknowledged_ms = ?, acknowledged_by = ? WHERE alert_id = ?",
                arguments: [atMilliseconds, tokenID, id]
            )
            let data = try StoreJSON.encode(AlertAcknowledgedData(alertID: id, deviceID: deviceID, acknowledgedMilliseconds: atMilliseconds))
            try Self.appendFeed(db, kind: FeedKind.alertAcknowledged, data: data, at: atMilliseconds)
            return .acknowledged(deviceID: deviceID)
        }
    }

    func feedEvents(after id: Int64, limit: Int) async throws -> [FeedEvent] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, kind, data FROM feed WHERE id > ? ORDER BY id LIMIT ?", arguments: [id, limit]).map {
                FeedEvent(id: try $0.decode(forColumn: "id"), kind: try $0.decode(forColumn: "kind"), data: try $0.decode(forColumn: "data"))
            }
        }
    }

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        var sql = "SELECT seq, body, placed_ms, received_ms, time_flag FROM readings WHERE device_id = ? AND seq > ?"
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
        let finalSQL = sql
        let finalArguments = arguments
        return try await pool.read { db in
            try Row.fetchAll(db, sql: finalSQL, arguments: finalArguments).map { row in
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
            return db.changesCount
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
    }
}
