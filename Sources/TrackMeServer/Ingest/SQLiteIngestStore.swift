import GRDB
import TrackMeCore

/// Device intake on the SQLite file: the hall store's `DatabasePool`, so that intake's writes
/// share its one writer (a queued alert goes between two groups of batches, not after the
/// backlog); the reads intake shares with other rooms (the device row, wipe orders, whether an
/// alert is resolved) are the hall store's own.
final class SQLiteIngestStore: HallBackedIngestStore {
    let store: SQLiteServerStore
    private let pool: DatabasePool
    let groupCommit: IngestGroupCommit

    init(_ store: SQLiteServerStore) {
        self.store = store
        let pool = store.pool
        self.pool = pool
        groupCommit = IngestGroupCommit { commit in SQLiteIngestStore.writeNextGroup(of: commit, on: pool) }
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
            if ingested.conflict == nil, !ingested.replayed {
                try addDays(batch.days(whenStored: ingested.stored), deviceID: batch.deviceID, in: db)
            }
            result = ingested
            return .commit
        }
        guard let result else { throw StoreError(code: .inconsistent, message: "batch not written") }
        return result
    }

    /// Adds a stored batch's counters to its device's days (`DeviceDay`).
    private static func addDays(_ days: [DeviceDay], deviceID: String, in db: Database) throws {
        guard !days.isEmpty else { return }
        let placeholders = Array(repeating: "?", count: DeviceDay.columns.count + 2).joined(separator: ", ")
        let statement = try db.cachedStatement(sql: DeviceDay.addSQL(rows: "VALUES (\(placeholders))"))
        for day in days {
            try statement.execute(arguments: StatementArguments([deviceID, day.day] + day.values.map { $0 as any DatabaseValueConvertible }))
        }
    }

    /// Batches from many devices arriving together are written in one transaction, one fsync
    /// for all of them (`IngestGroupCommit`); each in a savepoint of its own, so that one that
    /// fails is rolled back alone and the others are stored.
    func ingest(_ batch: IncomingBatch) async throws -> IngestResult {
        // Sealed here, before the group's transaction: a key of a new person is in the key store
        // before the first value sealed under it is committed.
        var sealed = batch
        sealed.readings = try await store.personKeys.seal(batch.readings, owner: batch.deviceID)
        return try await groupCommit.ingest(sealed)
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
            try SQLiteServerStore.appendFeed(db, kind: FeedKind.deviceReturned, data: data, at: receivedMilliseconds)
        }
    }

    func recordHeartbeat(deviceID: String, heartbeatJSON: String, receivedMilliseconds: Int64) async throws {
        try await pool.write { db in
            try Self.recordContact(db, deviceID: deviceID, heartbeatJSON: heartbeatJSON, receivedMilliseconds: receivedMilliseconds)
        }
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
                try SQLiteServerStore.appendFeed(db, kind: FeedKind.alert, data: feedData, at: receivedMilliseconds)
            }
            // With the update, so that no escalation pass comes between: a repeat counts too (its
            // first try may have reached the server before the device told the contact).
            for told in ContactAttempt.toldByDevice(update, receivedMilliseconds: receivedMilliseconds) {
                try db.execute(
                    sql: """
                        INSERT INTO contact_attempts (alert_id, contact_index, purpose, attempt, started_ms, finished_ms, result, detail)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                        """,
                    arguments: [
                        told.alertID, told.contactIndex, told.purpose.rawValue, told.attempt, told.startedMilliseconds, told.finishedMilliseconds,
                        told.result?.rawValue, told.detail,
                    ]
                )
            }
            let state = try Row.fetchOne(
                db,
                sql: "SELECT acknowledged, outcome IS NOT NULL AS resolved FROM alerts WHERE alert_id = ?",
                arguments: [update.alert.id]
            )
            return .accepted(
                AlertIntakeResult(
                    duplicate: duplicate,
                    acknowledged: try state?.decode(Bool.self, forColumn: "acknowledged") ?? false,
                    resolved: try state?.decode(Bool.self, forColumn: "resolved") ?? false
                )
            )
        }
    }
}
