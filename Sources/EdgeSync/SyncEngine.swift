public import EdgeStore
import Foundation
import GzipCodec
public import Logging
public import TrackMeCore

/// Something the sync engine did that its owner may want to know.
public enum SyncEvent: Hashable, Sendable {
    case batchAcknowledged(batchSequence: Int64, readings: Int, stored: Int, duplicates: Int, isLatest: Bool)
    /// A send failed and will be retried after `retryIn`.
    case sendFailed(SyncError, retryIn: Duration)
    /// The store could not reserve a batch (its disk is full or failing) and the heartbeat went
    /// alone (`POST /v1/heartbeats`).
    case heartbeatSentAlone
    /// The server refused (4xx other than 408/429): not retried blindly; retried only after the
    /// backoff cap, in case the operator fixes the server or the token.
    case rejected(SyncError)
    /// The server's reply carried orders (new care settings, a wipe), whatever its status; the
    /// agent's `SyncReplyOrders` carries them out.
    case orders(SyncOrders)
}

/// What one step of the readings lane did.
public enum ReadingsStepOutcome: Hashable, Sendable {
    case sent(batchSequence: Int64, readings: Int, isLatest: Bool)
    case failed(SyncError)
    case idle
}

/// The readings lane: moves the store's readings to the server. (Alerts are the dispatch lane's:
/// `EdgeDispatch.DispatchLane` is the one sender of alert updates.)
///
/// - Batches (`POST /v1/batches`), gzip-compressed, each with
///   `Idempotency-Key: DEVICE_ID:BATCH_SEQ`. Before each batch the lane awaits `alertsFirst`
///   (the dispatch lane's `alertsFirst()`), so alerts always go first and the backlog uses what
///   is left. A batch is reserved in the store before its first send and resent unchanged until
///   acknowledged; only the acknowledgement marks its readings synced. After a failure or a
///   restart the newest heart rate and fix go first in a small batch of their own, so the
///   server learns where the wearer is now before the backlog drains.
/// - A batch goes out at least every `heartbeatInterval`, empty if need be, carrying the
///   heartbeat (no separate endpoint). Its acknowledgement carries the alerts dispatchers
///   acknowledged or resolved (`onAlertsAcknowledged`, `onAlertsResolved`).
///
/// All waiting is on the injected clock.
///
/// Wiring in the agent (one store, one committer, one engine, each run as a task or Service;
/// `AgentCore` does this):
///
/// ```swift
/// let store = try ReadingStore(configuration: StoreConfiguration(path: "/var/lib/trackme/store.sqlite"))
/// let committer = GroupCommitter(store: store, clock: ContinuousClock())
/// let engine = SyncEngine(
///     store: store, transport: CurlTransport(baseURL: serverURL),
///     configuration: SyncConfiguration(deviceID: id, token: token), clock: ContinuousClock(),
///     heartbeat: { _ in DeviceHeartbeat(strap: strap.state, gpsd: gps.state, storeDepth: 0, storeBytes: 0) },
///     onAlertsAcknowledged: { ids in sos.dispatcherAcknowledged(ids) },
///     alertsFirst: { await dispatchLane.alertsFirst() })
/// // readings:  committer.append(.heartRate(hr), at: timestamp)
/// // run:       async let a: Void = committer.run(); async let b: Void = engine.run()
/// ```
public actor SyncEngine {
    public let store: ReadingStore
    private let transport: any HTTPTransport
    private let configuration: SyncConfiguration
    private let clock: any Clock<Duration>
    private let heartbeat: @Sendable (StoreStatistics) -> DeviceHeartbeat
    private let onAlertsAcknowledged: @Sendable ([String]) -> Void
    private let onAlertsResolved: @Sendable ([String]) -> Void
    private let onEvent: @Sendable (SyncEvent) -> Void
    /// Returns when no alert update is waiting to go now (the one signal between the lanes).
    private let alertsFirst: @Sendable () async -> Void
    /// Corrects untrusted wall times just before a batch goes out; given the batch's
    /// sequence number, so that a resent batch carries what it carried the first time.
    private let correctTimes: @Sendable (Int64, [WireReading]) -> [WireReading]
    private let logger: Logger
    private var random: SplitMix64

    /// The readings lane's decisions (what is due, which batch, heartbeat, backoff).
    private var policy: ReadingsLanePolicy
    /// The lane clock's time since this engine started (the policy's `now`).
    private let stopwatch: Stopwatch
    /// Bytes of request bodies sent (after compression) and readings sent, for the benchmark.
    public private(set) var bodyBytesSent = 0
    public private(set) var uncompressedBytesSent = 0
    public private(set) var readingsSent = 0
    /// The heartbeat interval the lane keeps now (the server may have asked a shorter one).
    public var heartbeatInterval: Duration { policy.heartbeatInterval }

    /// - Parameters:
    ///   - heartbeat: the strap, gpsd and battery state now, given the store's figures the engine
    ///     read for this heartbeat (read once: they cost a query); the engine fills in the
    ///     store's depth and size from the same figures.
    ///   - onAlertsAcknowledged: the `acknowledged_alerts` of every acknowledgement, for the SOS
    ///     engine (a dispatcher has acknowledged these alerts).
    ///   - onAlertsResolved: the `resolved_alerts` of every acknowledgement (a dispatcher closed
    ///     these alerts; the SOS engine closes them too).
    ///   - correctTimes: applied to a batch's readings as it is sent (the agent's
    ///     `WallClockCorrection`); the store keeps what was recorded.
    ///   - alertsFirst: awaited before each batch; returns when the dispatch lane has no alert
    ///     update to send now (`DispatchLane.alertsFirst()`).
    public init(
        store: ReadingStore,
        transport: any HTTPTransport,
        configuration: SyncConfiguration,
        clock: any Clock<Duration>,
        heartbeat: @escaping @Sendable (StoreStatistics) -> DeviceHeartbeat = { _ in
            DeviceHeartbeat(strap: "searching", gpsd: "no_device", storeDepth: 0, storeBytes: 0)
        },
        onAlertsAcknowledged: @escaping @Sendable ([String]) -> Void = { _ in },
        onAlertsResolved: @escaping @Sendable ([String]) -> Void = { _ in },
        onEvent: @escaping @Sendable (SyncEvent) -> Void = { _ in },
        logger: Logger = Logger(label: "trackme.sync"),
        seed: UInt64 = UInt64.random(in: 0...UInt64.max),
        correctTimes: @escaping @Sendable (Int64, [WireReading]) -> [WireReading] = { $1 },
        alertsFirst: @escaping @Sendable () async -> Void = {}
    ) {
        self.alertsFirst = alertsFirst
        self.correctTimes = correctTimes
        self.store = store
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.heartbeat = heartbeat
        self.onAlertsAcknowledged = onAlertsAcknowledged
        self.onAlertsResolved = onAlertsResolved
        self.onEvent = onEvent
        self.logger = logger
        // The lane's policy draws its jitter from the seed; `drain`'s backoff from its own stream.
        self.random = SplitMix64(seed: seed &+ 0x5A5A_5A5A)
        self.policy = ReadingsLanePolicy(
            settings: ReadingsLanePolicy.Settings(
                maxBatchReadings: configuration.maxBatchReadings,
                heartbeatInterval: configuration.heartbeatInterval,
                pollInterval: configuration.pollInterval,
                sendInterval: configuration.sendInterval,
                backoff: configuration.backoff,
                latestFirst: configuration.latestFirst
            ),
            seed: seed
        )
        self.stopwatch = Stopwatch(clock)
    }

    /// Runs the readings lane until the task is cancelled.
    public func run() async {
        await runReadingsLane()
    }

    // MARK: - Readings lane

    private func runReadingsLane() async {
        while !Task.isCancelled {
            let wait = await readingsVisit()
            do { try await clock.sleep(for: wait) } catch { return }
        }
    }

    /// One visit of the readings lane, as `ReadingsLanePolicy` decides: sends what is due now,
    /// batch after batch (a backlog goes back to back), and returns how long until the next
    /// visit (the poll interval when idle, the backoff after a failure). The daemon's lane loops
    /// on it on the real clock; the simulation calls it when the virtual clock its event loop
    /// advances reaches the time it returned. `drain`: partly filled batches go at once too
    /// (the simulation's end of run).
    public func readingsVisit(drain: Bool = false) async -> Duration {
        while true {
            let outcome = await readingsStep(draining: drain)
            switch lastNext {
            case .now:
                continue
            case .wait(let wait, let afterFailure, let refused):
                if afterFailure, case .failed(let error) = outcome {
                    onEvent(refused ? .rejected(error) : .sendFailed(error, retryIn: wait))
                }
                return wait
            }
        }
    }

    /// The policy's answer to the last step.
    private var lastNext: ReadingsLanePolicy.Next = .now

    /// Sends until no reading is unsynced and no batch is in flight, retrying failures with
    /// backoff on the clock. For draining a backlog in tests and benchmarks.
    public func drain(maxFailures: Int = 1000) async throws(SyncError) {
        var failures = 0
        while true {
            let stats = store.statistics()
            if stats.unsyncedReadings == 0, stats.inFlightBatches == 0 { return }
            switch await readingsStep(heartbeatDue: false, draining: true) {
            case .sent: failures = 0
            case .idle: return
            case .failed(let error):
                failures += 1
                if failures >= maxFailures || (!error.isRetryable && error.status != 413) { throw error }
                if error.status == 413 || error.code == .rebased { continue }
                let wait = configuration.backoff.delay(afterFailures: failures, retryAfter: error.retryAfter, using: &random)
                do { try await clock.sleep(for: wait) } catch { throw SyncError(code: .transport, message: "cancelled") }
            }
        }
    }

    /// Picks and sends one batch: the newest readings after a failure or restart, else the
    /// oldest batch in flight, else the oldest unsynced readings, else an empty heartbeat batch
    /// when one is due. `draining`: a partly filled batch goes at once. The policy learns the
    /// outcome.
    public func readingsStep(heartbeatDue: Bool? = nil, draining: Bool = false) async -> ReadingsStepOutcome {
        await alertsFirst()
        let due = heartbeatDue ?? policy.heartbeatDue(now: stopwatch.elapsed)
        let reserved: ReservedBatch
        do {
            guard let next = try nextBatch(heartbeatDue: due, draining: draining) else {
                lastNext = policy.receive(.idle, now: stopwatch.elapsed)
                return .idle
            }
            reserved = next
        } catch {
            logger.info("store could not prepare a batch", metadata: ["store.error": "\(error)"])
            // A full or failing disk must not make the device look silent: the heartbeat goes
            // alone, from memory, without a batch key.
            if due { await sendHeartbeatAlone() }
            let failure = SyncError(code: .storeUnavailable, message: "\(error)")
            lastNext = policy.receive(.notPrepared(retryable: failure.isRetryable, retryAfter: failure.retryAfter), now: stopwatch.elapsed)
            return .failed(failure)
        }
        let result = await post(reserved)
        switch result {
        case .sent:
            lastNext = policy.receive(.sent, now: stopwatch.elapsed)
        case .failed(let error):
            // 413: the server stored nothing of it (WIRE.md), so the key can be abandoned and
            // the readings go again in smaller batches.
            if error.status == 413 { try? store.abandonBatch(batchSequence: reserved.batch.batchSequence) }
            lastNext = policy.receive(
                .sendFailed(
                    readings: reserved.batch.readings.count,
                    retryable: error.isRetryable,
                    retryAfter: error.retryAfter,
                    tooLarge: error.status == 413,
                    rebased: error.code == .rebased
                ),
                now: stopwatch.elapsed
            )
        case .idle:
            lastNext = policy.receive(.idle, now: stopwatch.elapsed)
        }
        return result
    }

    /// `POST /v1/heartbeats` with the current heartbeat; on success the heartbeat interval
    /// starts over. Failures are only logged: the readings lane's backoff retries.
    public func sendHeartbeatAlone() async {
        let message = HeartbeatMessage(deviceID: configuration.deviceID, heartbeat: currentHeartbeat())
        guard let body = try? WireCodec.encode(message) else { return }
        do {
            let response = try await transport.post(
                path: "/v1/heartbeats",
                headers: ["Authorization": "Bearer \(configuration.token)", "Content-Type": "application/json"],
                body: Array(body)
            )
            if let orders = SyncOrders.inReply(response.body) { onEvent(.orders(orders)) }
            if (200..<300).contains(response.status) {
                policy.heartbeatSentAlone(now: stopwatch.elapsed)
                onEvent(.heartbeatSentAlone)
            } else {
                logger.info("heartbeat refused", metadata: ["sync.status": "\(response.status)"])
            }
        } catch {
            logger.info("heartbeat not delivered", metadata: ["sync.error": "\(error)"])
        }
    }

    private func nextBatch(heartbeatDue: Bool, draining: Bool) throws(StoreError) -> ReservedBatch? {
        let deviceID = configuration.deviceID
        // A batch reserved and not acknowledged goes again first; the store is asked only when
        // one may be there (after a start or a failure), so an idle visit reads nothing.
        let inFlight = policy.mayHaveInFlight ? try store.inFlightBatches(deviceID: deviceID) : []
        if inFlight.isEmpty { policy.foundNoneInFlight() }
        if policy.takeLatestTurn() {
            let newest = try store.newestUnsynced()
            let stats = store.statistics()
            // Only worth a batch of its own when there is a backlog behind it.
            if !newest.isEmpty, stats.unsyncedReadings > newest.count {
                if let existing = inFlight.first(where: { $0.isLatest && $0.batch.readings.map(\.sequence) == newest.map(\.sequence) }) {
                    return existing
                }
                return try store.reserveBatch(deviceID: deviceID, readings: newest, heartbeat: currentHeartbeat(), isLatest: true)
            }
        }
        if let first = inFlight.first { return first }
        // Not due and not a full batch's worth: decide before reading (and decoding) up to a
        // batch of readings only to put them back; the idle lane asks every poll interval.
        let now = stopwatch.elapsed
        if !policy.sendsNow(available: store.unsyncedReadingCount, heartbeatDue: heartbeatDue, draining: draining, now: now) {
            return nil
        }
        var candidates = try store.oldestUnsynced(limit: policy.batchLimit)
        if candidates.isEmpty {
            guard heartbeatDue else { return nil }
            return try store.reserveBatch(deviceID: deviceID, readings: [], heartbeat: currentHeartbeat())
        }
        if !policy.sendsNow(available: candidates.count, heartbeatDue: heartbeatDue, draining: draining, now: now) {
            return nil
        }
        // Bounded by bytes too: halve until the JSON fits. Encoding is the costly part of a
        // batch, so sizes are only measured when a generous estimate (a fix is about 330 bytes
        // of JSON, a heart rate about 200) says the batch might not fit.
        let estimate = candidates.reduce(0) { total, reading in
            switch reading.payload {
            case .heartRate(let hr): total + 220 + 6 * hr.rrIntervals.count
            case .position(let fix): total + 360 + (fix.time?.utf8.count ?? 0)
            }
        }
        if estimate > configuration.maxBatchBytes {
            while candidates.count > 1 {
                let probe = SyncBatch(deviceID: deviceID, batchSequence: 0, readings: candidates)
                guard let size = try? WireCodec.encode(probe).count, size > configuration.maxBatchBytes else { break }
                candidates.removeLast(candidates.count / 2)
            }
        }
        return try store.reserveBatch(deviceID: deviceID, readings: candidates, heartbeat: currentHeartbeat())
    }

    /// The server refused the batch's key (409): nothing of it was stored and nothing is marked
    /// synced; the store re-bases its numbering on the floors the server gave, and the readings
    /// go again under new keys.
    private func rebase(on conflict: BatchConflict, batch: SyncBatch) -> SyncError {
        logger.info(
            "server refused the batch key, re-basing the store",
            metadata: [
                "sync.batch_seq": "\(batch.batchSequence)", "sync.conflict": "\(conflict.error.code.rawValue)",
                "sync.seq_floor": "\(conflict.sequenceFloor)", "sync.batch_floor": "\(conflict.batchSequenceFloor)",
            ]
        )
        do {
            try store.rebase(sequenceFloor: conflict.sequenceFloor, batchFloor: conflict.batchSequenceFloor)
        } catch {
            return SyncError(code: .storeUnavailable, status: 409, message: "could not re-base after \(conflict.error.code.rawValue): \(error)")
        }
        return SyncError(code: .rebased, status: 409, message: "\(conflict.error.code.rawValue): \(conflict.error.message)")
    }

    private func currentHeartbeat() -> DeviceHeartbeat {
        let stats = store.statistics()
        var beat = heartbeat(stats)
        beat.storeDepth = stats.unsyncedReadings
        beat.storeBytes = stats.usedBytes
        beat.storeState = stats.storeState
        beat.storeProblem = stats.memoryOnlyReason ?? (stats.health == .healthy ? nil : stats.health.rawValue)
        beat.quarantinedReadings = stats.quarantinedReadings
        return beat
    }

    private func post(_ reserved: ReservedBatch) async -> ReadingsStepOutcome {
        var batch = reserved.batch
        batch.readings = correctTimes(batch.batchSequence, batch.readings)
        let json: [UInt8]
        let body: [UInt8]
        do {
            json = Array(try WireCodec.encode(batch))
            body = try Gzip.compress(json)
        } catch {
            return .failed(SyncError(code: .encoding, message: "\(error)"))
        }
        let response: HTTPResponse
        do {
            response = try await transport.post(
                path: "/v1/batches",
                headers: [
                    "Authorization": "Bearer \(configuration.token)", "Idempotency-Key": batch.idempotencyKey,
                    "Content-Type": "application/json", "Content-Encoding": "gzip",
                ],
                body: body
            )
        } catch {
            logger.info("batch not delivered", metadata: ["sync.batch_seq": "\(batch.batchSequence)", "sync.error": "\(error)"])
            return .failed(error)
        }
        let orders = SyncOrders.inReply(response.body)
        if let orders { onEvent(.orders(orders)) }
        if response.status == 409, let conflict = try? WireCodec.decode(BatchConflict.self, from: Data(response.body)) {
            return .failed(rebase(on: conflict, batch: batch))
        }
        guard (200..<300).contains(response.status) else {
            return .failed(SyncError.forStatus(response.status, retryAfter: response.retryAfter, body: response.body))
        }
        let ack: BatchAcknowledgement
        do {
            ack = try WireCodec.decode(BatchAcknowledgement.self, from: Data(response.body))
        } catch {
            return .failed(SyncError(code: .badAcknowledgement, status: response.status, message: "\(error)"))
        }
        guard ack.idempotencyKey == batch.idempotencyKey else {
            return .failed(SyncError(code: .badAcknowledgement, status: response.status, message: "acknowledgement for \(ack.idempotencyKey)"))
        }
        do {
            try store.acknowledge(batchSequence: batch.batchSequence)
        } catch {
            // The server has the batch; it stays in flight and its resend is answered from the
            // server's cache, so nothing is lost or doubled.
            return .failed(SyncError(code: .storeUnavailable, message: "\(error)"))
        }
        policy.serverAsksPoll(orders?.pollMilliseconds.map { .milliseconds($0) })
        bodyBytesSent += body.count
        uncompressedBytesSent += json.count
        readingsSent += batch.readings.count
        if !ack.acknowledgedAlerts.isEmpty { onAlertsAcknowledged(ack.acknowledgedAlerts) }
        if !ack.resolvedAlerts.isEmpty { onAlertsResolved(ack.resolvedAlerts) }
        onEvent(
            .batchAcknowledged(
                batchSequence: batch.batchSequence,
                readings: batch.readings.count,
                stored: ack.stored,
                duplicates: ack.duplicates,
                isLatest: reserved.isLatest
            )
        )
        return .sent(batchSequence: batch.batchSequence, readings: batch.readings.count, isLatest: reserved.isLatest)
    }
}
