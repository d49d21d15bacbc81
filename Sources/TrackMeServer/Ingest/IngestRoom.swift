import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// Device intake: what a device sends — its batches of readings, its heartbeat when its disk is
/// full, and its alerts — mounted at `/v1`. Only this room holds an `IngestStore`; every route
/// is entered by a device token only (`DeviceAuthentication`, which puts the device's principal
/// in the request context), and no answer carries a person's data.
struct IngestRoom: Sendable {
    static let path: RouterPath = "/v1"

    /// Who may enter each route, as `RouteAccess` holds the router to it.
    static let access: [String: RouteAccess.Requirement] = [
        "POST /v1/batches": .device, "POST /v1/heartbeats": .device, "POST /v1/alerts": .device,
    ]

    private let store: any IngestStore
    private let devices: DeviceDirectory
    private let services: RoomServices
    private var configuration: ServerConfiguration { services.configuration }
    private var authenticator: Authenticator { services.authenticator }
    private var notifier: FeedNotifier { services.notifier }
    private var metrics: ServerMetrics { services.metrics }
    private var logger: Logger { services.logger }
    private let databaseHealth: DatabaseHealth
    /// Runs and the fleet follow a runner's or a taxi's newest fix from what intake stored.
    private let runs: RaceIngest
    /// New alerts per device (`ServerLimits.alertRaisesPerDevice`); nil for no limit.
    private let alertFloods: AlertFloodGuard?
    /// A taxi hears of its ride offer in its batch replies; nil where there is no fleet.
    private let rides: RideDesk?
    /// Batches' inflating, decoding and checks on threads of their own
    /// (`ServerLimits.batchThreads`, `.batchQueue`): a flood of batches queues there, not in
    /// front of an alert.
    let batchWork: WorkPool

    init(
        store: any IngestStore,
        services: RoomServices,
        databaseHealth: DatabaseHealth,
        runs: RaceIngest,
        rides: RideDesk? = nil
    ) {
        self.rides = rides
        self.store = store
        devices = DeviceDirectory(store: store)
        self.services = services
        self.databaseHealth = databaseHealth
        self.runs = runs
        let configuration = services.configuration
        alertFloods = configuration.limits.alertRaisesPerDevice.map(AlertFloodGuard.init(limit:))
        batchWork = WorkPool(threads: configuration.limits.batchThreads, queueLimit: configuration.limits.batchQueue, niceness: 5)
    }

    func routes() -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        // Where a device syncs, a token of an erased device is answered with its wipe order.
        let syncing = routes.group().add(middleware: DeviceAuthentication(authenticator: authenticator, store: store, answersWipeOrders: true))
        syncing.post("batches") { request, context in try await ingestBatch(request, device: try context.authenticatedDevice()) }
        syncing.post("heartbeats") { request, context in try await ingestHeartbeat(request, device: try context.authenticatedDevice()) }
        let alerting = routes.group().add(middleware: DeviceAuthentication(authenticator: authenticator, store: store, answersWipeOrders: false))
        alerting.post("alerts") { request, context in try await intakeAlert(request, device: try context.authenticatedDevice()) }
        return routes
    }

    func ingestBatch(_ request: Request, device principal: Principal) async throws -> Response {
        let sent = try await RequestBody.collect(request, limit: configuration.maxBodyBytes)
        let enrolled: DeviceRow? = if let deviceID = principal.deviceID { try await devices.device(id: deviceID) } else { nil }
        let encoding = request.headers[.contentEncoding]
        let idempotencyHeader = request.headers[.idempotencyKey]
        let now = configuration.wallClock()
        let configuration = self.configuration
        let (batch, incoming, device) = try await batchWork.run(busy: Self.batchesBusy) {
            try Self.checkedBatch(
                sent,
                contentEncoding: encoding,
                idempotencyHeader: idempotencyHeader,
                principal: principal,
                device: enrolled,
                now: now,
                configuration: configuration
            )
        }
        try refuseOnDamagedDatabase()
        let rows = incoming.readings
        // Before the batch: a day summary read between the two is then read again, never kept
        // without these readings.
        let lateDays = HeartRateDays.lateDays(rows, receivedMilliseconds: incoming.receivedMilliseconds)
        if !lateDays.isEmpty {
            try await store.markHeartRateDaysLate(deviceID: incoming.deviceID, days: lateDays, receivedMilliseconds: incoming.receivedMilliseconds)
        }
        let result = try await store.ingest(incoming)
        if let conflict = result.conflict {
            metrics.batchesConflicting.increment()
            return try batchConflictResponse(conflict, batch: batch)
        }
        metrics.batches.increment()
        if result.replayed {
            metrics.batchesReplayed.increment()
        } else {
            metrics.readingsStored.increment(by: result.stored)
            metrics.readingsDuplicate.increment(by: result.duplicates)
        }
        // A runner's or a taxi's state and newest fix for the runs and the fleet.
        let taxi = result.replayed ? nil : await runs.observe(batch, rows: rows, device: device, now: now)
        // A device that came back from silence has a `device_returned` event on the feed.
        notifier.notify()
        var orders = try Self.careOrders(result.news, heartbeat: batch.heartbeat)
        if batch.heartbeat?.profile == .taxi {
            let ride = try await rideNotice(deviceID: batch.deviceID)
            let poll = await offerPoll(deviceID: batch.deviceID, ride: ride, taxi: taxi)
            if ride != nil || poll != nil {
                orders = orders ?? SyncOrders()
                orders?.ride = ride
                orders?.pollMilliseconds = poll
            }
        }
        let ack = BatchAcknowledgement(
            idempotencyKey: batch.idempotencyKey,
            stored: result.stored,
            duplicates: result.duplicates,
            acknowledgedAlerts: result.acknowledgedAlerts,
            resolvedAlerts: result.news.resolvedAlerts,
            orders: orders
        )
        return try json(.ok, ack)
    }

    /// Past the batch threads' queue: the device keeps the batch and sends it again.
    static var batchesBusy: APIError {
        var error = APIError(status: .serviceUnavailable, code: .unavailable, message: "too many batches at once: send this one again shortly")
        error.retryAfterSeconds = 2
        return error
    }

    /// A batch as sent, inflated, decoded and checked, its readings placed in time: the CPU work
    /// of intake, run on the batch threads (`ServerLimits.batchThreads`), never where alerts are
    /// taken in. `device` is the enrolled row of the token's device, nil if it is not enrolled.
    static func checkedBatch(
        _ sent: [UInt8],
        contentEncoding: String?,
        idempotencyHeader: String?,
        principal: Principal,
        device: DeviceRow?,
        now: Int64,
        configuration: ServerConfiguration
    ) throws -> (SyncBatch, IncomingBatch, DeviceRow) {
        let body = try RequestBody.inflated(sent, contentEncoding: contentEncoding, limit: configuration.maxBodyBytes)
        // The fast path gives up on anything unusual; the general decoder then decides (and
        // names the field that is wrong).
        let batch = try WireFastPath.syncBatch(body) ?? RequestBody.decode(SyncBatch.self, body)
        guard batch.deviceID == principal.deviceID else {
            throw APIError.forbidden("this token belongs to device \(principal.deviceID ?? "?"), not \(batch.deviceID)")
        }
        if let idempotencyHeader, idempotencyHeader != batch.idempotencyKey {
            throw APIError.invalid("Idempotency-Key", "header \(idempotencyHeader) differs from idempotency_key \(batch.idempotencyKey)")
        }
        guard let device, device.deviceID == batch.deviceID else {
            throw APIError.forbidden("device \(batch.deviceID) is not enrolled")
        }
        guard (0...SyncBatch.largestNumber).contains(batch.batchSequence) else {
            throw APIError.numberOutOfRange("batch_seq", batch.batchSequence, lowest: 0)
        }
        guard (0...SyncBatch.largestNumber).contains(batch.droppedByBudget) else {
            throw APIError.numberOutOfRange("dropped_by_budget", batch.droppedByBudget, lowest: 0)
        }
        var rows: [ReadingRow] = []
        rows.reserveCapacity(batch.readings.count)
        var seen = Set<Int64>()
        for (index, reading) in batch.readings.enumerated() {
            guard reading.sequence > 0 else { throw APIError.invalid("readings[\(index)].seq", "must be positive") }
            guard reading.sequence <= SyncBatch.largestNumber else {
                throw APIError.numberOutOfRange("readings[\(index)].seq", reading.sequence, lowest: 1)
            }
            // The same seq twice in one batch would make "stored" ambiguous; the device never does it.
            guard seen.insert(reading.sequence).inserted else {
                throw APIError.invalid("readings[\(index)].seq", "seq \(reading.sequence) appears twice in the batch")
            }
            rows.append(try ReadingPlacement.row(for: reading, device: device, now: now, futureTolerance: configuration.futureTolerance))
        }
        let heartbeat = try batch.heartbeat.map { try WireFastPath.canonicalJSON($0) ?? StoreJSON.encode($0) }
        let incoming = IncomingBatch(
            deviceID: batch.deviceID,
            batchSequence: batch.batchSequence,
            droppedByBudget: batch.droppedByBudget,
            heartbeatJSON: heartbeat,
            readings: rows,
            receivedMilliseconds: now,
            storeEpoch: batch.storeEpoch,
            digest: BatchDigest.digest(readings: rows, droppedByBudget: batch.droppedByBudget),
            days: DeviceDay.days(of: batch.readings, placed: rows.map(\.placedMilliseconds))
        )
        return (batch, incoming, device)
    }

    /// `POST /v1/heartbeats`: a device whose store cannot reserve a batch (its disk is full)
    /// still says it is alive. Records contact and the heartbeat; no readings, no key.
    func ingestHeartbeat(_ request: Request, device principal: Principal) async throws -> Response {
        let body = try await RequestBody.read(request, limit: configuration.maxBodyBytes)
        let message = try RequestBody.decode(HeartbeatMessage.self, body)
        guard message.deviceID == principal.deviceID else {
            throw APIError.forbidden("this token belongs to device \(principal.deviceID ?? "?"), not \(message.deviceID)")
        }
        try await store.recordHeartbeat(
            deviceID: message.deviceID,
            heartbeatJSON: try StoreJSON.encode(message.heartbeat),
            receivedMilliseconds: configuration.wallClock()
        )
        notifier.notify()
        return try json(.ok, HeartbeatAnswer(version: SyncBatch.currentVersion, deviceID: message.deviceID))
    }

    func intakeAlert(_ request: Request, device principal: Principal) async throws -> Response {
        let body = try await RequestBody.read(request, limit: configuration.maxBodyBytes)
        let update = try RequestBody.decode(AlertUpdate.self, body)
        guard update.alert.deviceID == principal.deviceID else {
            throw APIError.forbidden("this token belongs to device \(principal.deviceID ?? "?"), not \(update.alert.deviceID)")
        }
        try Identifier.validate(update.alert.id, field: "alert.alert_id")
        guard update.updateSequence >= 0 else { throw APIError.invalid("update_seq", "must not be negative") }
        guard Int64(clamping: update.updateSequence) <= SyncBatch.largestNumber else {
            throw APIError.numberOutOfRange("update_seq", Int64(clamping: update.updateSequence), lowest: 0)
        }
        try Self.checkContactsTold(update.contactsTold)
        if let kept = try await keptUndispatched(update) { return kept }
        if update.updateSequence == 0 { try await admitNewAlert(deviceID: update.alert.deviceID) }
        let canonical = try StoreJSON.encode(update)
        let received = configuration.wallClock()
        // The feed carries references; the person is read with the alert, under the policy.
        let feedData = try StoreJSON.encode(AlertFeedReference(update, receivedMilliseconds: received))
        let outcome = try await store.recordAlertUpdate(update, body: canonical, feedData: feedData, receivedMilliseconds: received)
        switch outcome {
        case .foreignAlert:
            throw APIError.forbidden("alert \(update.alert.id) belongs to another device")
        case .accepted(let result):
            (result.duplicate ? metrics.alertUpdatesDuplicate : metrics.alertUpdates).increment()
            if !result.duplicate { notifier.notify() }
            // SOS pressed during a kept alert: the desk holds the alert from here on (the update
            // carries the whole record), and nothing of it stays behind on the kept list.
            if update.alert.kind == .manual, update.updateSequence > 0, try await store.isUndispatchedAlert(id: update.alert.id) {
                try await store.handUndispatchedAlertToDesk(id: update.alert.id, deviceID: update.alert.deviceID)
            }
            return try json(
                .ok,
                AlertIntakeResponse(
                    alertID: update.alert.id,
                    updateSequence: update.updateSequence,
                    duplicate: result.duplicate,
                    acknowledged: result.acknowledged,
                    resolved: result.resolved
                )
            )
        }
    }

    /// A rule's alert of a person not enrolled in AutomatedSOS (read fresh, not from the
    /// directory's cache), or a later update of one: kept for the person's own alert list and
    /// put in front of no dispatcher; answered so that the device does not send it again. Nil
    /// for an alert that goes to the desk: the SOS button's always, and one the desk has
    /// already (raised while the person was enrolled), so that the desk sees it end.
    private func keptUndispatched(_ update: AlertUpdate) async throws -> Response? {
        guard update.alert.kind != .manual else { return nil }
        let undispatched: Bool
        if let device = try await store.device(id: update.alert.deviceID), !device.person.dispatchesAlert(kind: update.alert.kind) {
            undispatched = true
        } else {
            undispatched = try await store.isUndispatchedAlert(id: update.alert.id)
        }
        guard undispatched else { return nil }
        // Kept alerts take room in the person's list as the desk's do: the same bound on new
        // ones, without a flood event on the dispatchers' feed, which never shows them.
        if update.updateSequence == 0 { try await admitNewAlert(deviceID: update.alert.deviceID, toldOnFeed: false) }
        let outcome = try await store.keepUndispatchedAlert(
            update,
            body: try StoreJSON.encode(update),
            receivedMilliseconds: configuration.wallClock()
        )
        switch outcome {
        case .dispatched:
            return nil
        case .foreignAlert:
            throw APIError.forbidden("alert \(update.alert.id) belongs to another device")
        case .kept:
            return try json(
                .ok,
                AlertIntakeResponse(
                    alertID: update.alert.id,
                    updateSequence: update.updateSequence,
                    duplicate: false,
                    acknowledged: false,
                    resolved: false
                )
            )
        }
    }

    /// A person has a handful of emergency contacts: an index past this is not one of them.
    static let contactIndexLimit = 1000

    /// `contacts_told` names each contact once, by an index a person's list can have.
    static func checkContactsTold(_ told: [ContactTold]) throws {
        var seen = Set<Int>()
        for (position, contact) in told.enumerated() {
            let field = "contacts_told[\(position)].contact_index"
            guard (0..<contactIndexLimit).contains(contact.contactIndex) else {
                throw APIError.invalid(field, "\(contact.contactIndex) is not a contact's index (0-\(contactIndexLimit - 1))")
            }
            guard seen.insert(contact.contactIndex).inserted else {
                throw APIError.invalid(field, "contact \(contact.contactIndex) is named twice")
            }
        }
    }

    /// The taxi's ride offer or ride for its batch reply. The batch is stored whatever happens
    /// here: a failure is logged and the next batch asks again.
    private func rideNotice(deviceID: String) async throws -> RideNotice? {
        guard let rides else { return nil }
        do {
            return try await rides.notice(for: deviceID)
        } catch {
            logger.warning("ride offer not read for a batch reply", metadata: ["server.device": "\(deviceID)", "error": "\(error)"])
            return nil
        }
    }

    /// How often the taxi is to batch while a ride may be offered to it (queued in a zone, or
    /// with a ride open): its offer comes only in a reply. Nil leaves it at its 30 s reports.
    /// `taxi` is the taxi as this batch left it, if known (then it is not read again).
    private func offerPoll(deviceID: String, ride: RideNotice?, taxi: FleetTaxi?) async -> Int64? {
        guard rides != nil else { return nil }
        if ride != nil { return FleetQueue.offerPollMilliseconds }
        do {
            let queued = if let taxi { taxi.queuedMilliseconds } else { try await runs.store.fleetTaxi(deviceID: deviceID)?.queuedMilliseconds }
            return queued == nil ? nil : FleetQueue.offerPollMilliseconds
        } catch {
            logger.warning("taxi's queue place not read for a batch reply", metadata: ["server.device": "\(deviceID)", "error": "\(error)"])
            return FleetQueue.offerPollMilliseconds
        }
    }

    /// A database that failed its integrity check at start takes no batches (503 with what the
    /// operator is to do); the device keeps them and sends them again.
    private func refuseOnDamagedDatabase() throws {
        guard let problem = databaseHealth.databaseProblem else { return }
        throw APIError(status: .serviceUnavailable, code: .databaseDamaged, message: "\(DatabaseHealth.whatToDo) (\(problem))")
    }

    /// Lets a new alert of `deviceID` through, or refuses it with 429 and `Retry-After` (the
    /// device keeps it and sends it again then). The first refusal of a flood puts one
    /// `alert_flood` event on the feed (when `toldOnFeed`), so a dispatcher sees the flood, not
    /// 500 alerts.
    private func admitNewAlert(deviceID: String, toldOnFeed: Bool = true) async throws {
        guard let alertFloods, let limit = configuration.limits.alertRaisesPerDevice else { return }
        let now = configuration.wallClock()
        switch alertFloods.raise(deviceID: deviceID, now: now) {
        case .allowed:
            return
        case .refused(let seconds, let floodStarted):
            metrics.alertRaisesRefused.increment()
            if floodStarted {
                metrics.alertFloods.increment()
                logger.warning("alert flood", metadata: ["server.device": "\(deviceID)"])
            }
            if floodStarted && toldOnFeed {
                let data = try StoreJSON.encode(
                    AlertFloodData(deviceID: deviceID, startedMilliseconds: now, burst: limit.burst, perMinute: limit.perSecond * 60)
                )
                try await store.appendFeedEvent(kind: FeedKind.alertFlood, data: data)
                notifier.notify()
            }
            throw APIError.tooManyRequests("too many new alerts from device \(deviceID)", retryAfterSeconds: seconds)
        }
    }

    /// 409 with `BatchConflict`: nothing of the batch was stored; the device re-bases above the
    /// floors and sends its readings again under new keys (WIRE.md, "Store epochs and conflicts").
    private func batchConflictResponse(_ conflict: IngestConflict, batch: SyncBatch) throws -> Response {
        let message: String
        let field: String
        switch conflict.reason {
        case .storeEpochRebase:
            field = "store_epoch"
            message =
                "store epoch \(batch.storeEpoch ?? "-") numbers below what this device used before (its store started over): "
                + "re-base readings at or above seq_floor and batches at or above batch_seq_floor"
        default:
            field = "idempotency_key"
            message = "idempotency key \(batch.idempotencyKey) was used before with other readings: re-base and send them under new keys"
        }
        logger.info(
            "batch refused with 409",
            metadata: [
                "device.id": "\(batch.deviceID)", "sync.batch_seq": "\(batch.batchSequence)", "sync.conflict": "\(conflict.reason.rawValue)",
            ]
        )
        let body = BatchConflict(
            reason: conflict.reason,
            field: field,
            message: message,
            sequenceFloor: conflict.sequenceFloor,
            batchSequenceFloor: conflict.batchSequenceFloor
        )
        return try json(.conflict, body)
    }

    /// The orders for a device's batch reply: its care settings when the device does not run
    /// their version yet.
    static func careOrders(_ news: DeviceNews, heartbeat: DeviceHeartbeat?) throws -> SyncOrders? {
        guard let version = news.careVersion, let json = news.careJSON else { return nil }
        if let running = heartbeat?.careVersion, running >= version { return nil }
        return SyncOrders(careSettings: try StoreJSON.decode(json))
    }
}

struct HeartbeatAnswer: Codable, Sendable {
    var version: Int
    var deviceID: String
    enum CodingKeys: String, CodingKey {
        case version
        case deviceID = "device_id"
    }
}
