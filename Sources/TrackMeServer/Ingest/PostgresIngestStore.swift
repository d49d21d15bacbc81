#if PostgreSQL
import Logging
import PostgresNIO
import TrackMeCore

/// Device intake on PostgreSQL: the hall store's connection pool, with intake's own group
/// commit; the reads intake shares with other rooms (the device row, wipe orders, whether an
/// alert is resolved) are the hall store's own.
final class PostgresIngestStore: HallBackedIngestStore {
    let store: PostgresServerStore
    private let client: PostgresClient
    private let logger: Logger
    let groupCommit: IngestGroupCommit

    init(_ store: PostgresServerStore) {
        self.store = store
        let client = store.client
        let logger = store.logger
        self.client = client
        self.logger = logger
        // Up to 8 groups side by side (of the pool's 32 connections): their device locks are
        // taken in one order, so they cannot deadlock.
        groupCommit = IngestGroupCommit(maxWriters: 8) { batches in try await Self.ingestGroup(batches, client: client, logger: logger) }
    }

    /// Batches from many devices arriving together are written in one transaction
    /// (`IngestGroupCommit`), each in a savepoint of its own.
    func ingest(_ batch: IncomingBatch) async throws -> IngestResult {
        // Sealed here, before the group's transaction: a key of a new person is in the key store
        // before the first value sealed under it is committed.
        var sealed = batch
        sealed.readings = try await store.personKeys.seal(batch.readings, owner: batch.deviceID)
        return try await groupCommit.ingest(sealed)
    }

    /// Writes a group of batches in one transaction and one round trip (`trackme_ingest_group`),
    /// device by device in one order (so two instances' groups cannot deadlock on the device rows
    /// they lock), each batch in its own savepoint (one that fails is rolled back alone), with
    /// each stored batch's reply news read in the same transaction.
    static func ingestGroup(_ batches: [IncomingBatch], client: PostgresClient, logger: Logger) async throws -> [Result<IngestResult, any Error>] {
        let order = batches.indices.sorted {
            (batches[$0].deviceID, batches[$0].batchSequence) < (batches[$1].deviceID, batches[$1].batchSequence)
        }
        var results = [Result<IngestResult, any Error>](
            repeating: .failure(StoreError(code: .inconsistent, message: "batch not written")),
            count: batches.count
        )
        var again: [Int] = []
        for (index, outcome) in zip(order, try await write(order.map { batches[$0] }, feedFirst: false, client: client, logger: logger)) {
            if let outcome { results[index] = outcome } else { again.append(index) }
        }
        // Went silent after the group's check while another transaction held the feed lock:
        // written again, the feed lock first (rare).
        if !again.isEmpty {
            for (index, outcome) in zip(again, try await write(again.map { batches[$0] }, feedFirst: true, client: client, logger: logger)) {
                results[index] = outcome ?? .failure(StoreError(code: .inconsistent, message: "feed lock busy although held"))
            }
        }
        return results
    }

    /// One transaction of `trackme_ingest_group`: a result per batch, in order, or nil for a
    /// batch that found the feed lock busy (it must not wait for it) and is to be written again.
    private static func write(
        _ batches: [IncomingBatch],
        feedFirst: Bool,
        client: PostgresClient,
        logger: Logger
    ) async throws -> [Result<IngestResult, any Error>?] {
        let call = IngestGroupCall(batches: batches, feedFirst: feedFirst)
        let outcomes = try await client.withTransaction(logger: logger) { connection in
            var rows: [IngestGroupCall.Row] = []
            rows.reserveCapacity(batches.count)
            for try await row in try await connection.execute(call, logger: logger) { rows.append(row) }
            // The group figures' counters of the batches stored, in the same transaction.
            let stored = zip(batches, rows).filter { $0.1.0 == "stored" }.map { batch, row in (batch.deviceID, batch.days(whenStored: row.1)) }
            if let add = DeviceDay.postgresAdd(stored) { _ = try await connection.query(add, logger: logger) }
            return rows
        }
        guard outcomes.count == batches.count else {
            throw StoreError(code: .inconsistent, message: "trackme_ingest_group returned \(outcomes.count) rows for \(batches.count) batches")
        }
        return try zip(batches, outcomes).map { batch, row -> Result<IngestResult, any Error>? in
            let (outcome, stored, duplicates, alerts, seqFloor, batchFloor, error, resolved, careVersion, careJSON, newsError) = row
            switch outcome {
            case "stored", "replayed":
                var result = IngestResult(
                    stored: stored,
                    duplicates: duplicates,
                    acknowledgedAlerts: try StoreJSON.decode(alerts),
                    replayed: outcome == "replayed"
                )
                if let newsError {
                    logger.warning(
                        "batch reply goes without resolved alerts and care settings",
                        metadata: ["device": "\(batch.deviceID)", "error": "\(newsError)"]
                    )
                } else {
                    result.news = DeviceNews(resolvedAlerts: resolved ?? [], careVersion: careVersion, careJSON: careJSON)
                }
                return .success(result)
            case "feed_lock_busy":
                return nil
            case "error":
                return .failure(
                    StoreError(code: .inconsistent, message: "batch \(batch.deviceID):\(batch.batchSequence) not stored: \(error ?? "?")")
                )
            default:
                return .success(
                    IngestResult(
                        stored: 0,
                        duplicates: 0,
                        acknowledgedAlerts: [],
                        replayed: false,
                        conflict: IngestConflict(
                            reason: BatchConflict.Reason(rawValue: outcome),
                            sequenceFloor: seqFloor ?? 1,
                            batchSequenceFloor: batchFloor ?? 1
                        )
                    )
                )
            }
        }
    }

    func recordHeartbeat(deviceID: String, heartbeatJSON: String, receivedMilliseconds: Int64) async throws {
        let logger = self.logger
        try await client.withTransaction(logger: logger) { connection in
            try await PostgresServerStore.lockFeed(connection, logger: logger)
            var wasSilent = false
            for try await silent in try await connection.query(
                "SELECT silent FROM devices WHERE device_id = \(deviceID) FOR UPDATE",
                logger: logger
            ).decode(Bool.self) {
                wasSilent = silent
            }
            try await connection.query(
                """
                UPDATE devices SET last_seen_ms = GREATEST(COALESCE(last_seen_ms, 0), \(receivedMilliseconds)), silent = FALSE,
                    heartbeat = \(heartbeatJSON) WHERE device_id = \(deviceID)
                """,
                logger: logger
            )
            if wasSilent {
                let data = try StoreJSON.encode(DeviceEventData(deviceID: deviceID, lastSeenMilliseconds: receivedMilliseconds))
                try await PostgresServerStore.appendFeed(
                    connection,
                    kind: FeedKind.deviceReturned,
                    data: data,
                    at: receivedMilliseconds,
                    logger: logger
                )
            }
        }
    }

    func recordAlertUpdate(_ update: AlertUpdate, body: String, feedData: String, receivedMilliseconds: Int64) async throws -> AlertIntakeOutcome {
        let record = try StoreJSON.encode(update.alert)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await PostgresServerStore.lockFeed(connection, logger: logger)
            var owner: String?
            for try await device in try await connection.query(
                "SELECT device_id FROM alerts WHERE alert_id = \(update.alert.id) FOR UPDATE",
                logger: logger
            ).decode(String.self) {
                owner = device
            }
            if let owner, owner != update.alert.deviceID { return .foreignAlert }
            let inserted = try await connection.query(
                """
                INSERT INTO alert_updates (alert_id, update_seq, device_id, type, body, received_ms)
                VALUES (\(update.alert.id), \(Int64(update.updateSequence)), \(update.alert.deviceID), \(update.type.rawValue), \(body), \(receivedMilliseconds))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).collect().count
            let duplicate = inserted == 0
            if !duplicate {
                try await connection.query(
                    """
                    INSERT INTO alerts (alert_id, device_id, kind, state, last_update_seq, record, created_ms, updated_ms)
                    VALUES (\(update.alert.id), \(update.alert.deviceID), \(update.alert.kind.rawValue), \(update.alert.state.rawValue),
                        \(Int64(update.updateSequence)), \(record), \(receivedMilliseconds), \(receivedMilliseconds))
                    ON CONFLICT (alert_id) DO UPDATE SET kind = excluded.kind, state = excluded.state, last_update_seq = excluded.last_update_seq,
                        record = excluded.record, updated_ms = excluded.updated_ms
                    WHERE excluded.last_update_seq > alerts.last_update_seq AND alerts.device_id = excluded.device_id
                    """,
                    logger: logger
                )
                try await PostgresServerStore.appendFeed(connection, kind: FeedKind.alert, data: feedData, at: receivedMilliseconds, logger: logger)
            }
            // With the update, so that no escalation pass comes between: a repeat counts too (its
            // first try may have reached the server before the device told the contact).
            for told in ContactAttempt.toldByDevice(update, receivedMilliseconds: receivedMilliseconds) {
                try await connection.query(
                    """
                    INSERT INTO contact_attempts (alert_id, contact_index, purpose, attempt, started_ms, finished_ms, result, detail)
                    VALUES (\(told.alertID), \(Int64(told.contactIndex)), \(told.purpose.rawValue), \(Int64(told.attempt)), \(told.startedMilliseconds),
                        \(told.finishedMilliseconds), \(told.result?.rawValue), \(told.detail))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            }
            var state = AlertIntakeResult(duplicate: duplicate, acknowledged: false)
            for try await (acknowledged, resolved) in try await connection.query(
                "SELECT acknowledged, outcome IS NOT NULL FROM alerts WHERE alert_id = \(update.alert.id)",
                logger: logger
            ).decode((Bool, Bool).self) {
                state.acknowledged = acknowledged
                state.resolved = resolved
            }
            return .accepted(state)
        }
    }
}
#endif
