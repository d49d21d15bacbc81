import TrackMeCore

/// What device intake may do to the database, and nothing more: the ingest room holds only
/// this, so no other room can write a batch, a heartbeat or an alert update, and intake cannot
/// read anyone's profile beyond the device row it files readings against. Both implementations
/// (`SQLiteIngestStore`, `PostgresIngestStore`) give the same answers; `IngestStoreContractTests`
/// runs the same cases on each.
///
/// A batch is stored whole or not at all; a feed event is appended in the transaction of the
/// change it reports.
protocol IngestStore: Sendable {
    /// The enrolled device a batch is filed against, or nil.
    func device(id: String) async throws -> DeviceRow?

    /// Stores a batch exactly once per `(device_id, batch_seq)` and each reading exactly once per
    /// `(device_id, seq)`; records the device's contact (clearing a silence, which appends
    /// `device_returned`); hands over the acknowledged alerts the device was not yet told of.
    /// A key used before with other readings, or a new store epoch numbering below what the
    /// device used before, stores nothing and answers the floors to re-base above.
    func ingest(_ batch: IncomingBatch) async throws -> IngestResult

    /// Records contact and the heartbeat of a device whose store cannot reserve a batch (its
    /// disk is full): `POST /v1/heartbeats`.
    func recordHeartbeat(deviceID: String, heartbeatJSON: String, receivedMilliseconds: Int64) async throws

    /// Stores an alert update (`body`) once per `(alert_id, update_seq)` and appends `feedData`
    /// (`AlertFeedReference`: what the board needs, never the person) to the feed.
    func recordAlertUpdate(_ update: AlertUpdate, body: String, feedData: String, receivedMilliseconds: Int64) async throws -> AlertIntakeOutcome

    /// Keeps a rule's alert of a person not enrolled in AutomatedSOS for the person's own list
    /// (`UndispatchedAlertStore`); `.dispatched` when the desk has the alert already.
    func keepUndispatchedAlert(_ update: AlertUpdate, body: String, receivedMilliseconds: Int64) async throws -> UndispatchedAlertOutcome

    /// Whether the alert is kept for the person's own list (its later updates stay there).
    func isUndispatchedAlert(id: String) async throws -> Bool

    /// The kept alert went to the desk (`UndispatchedAlertStore.handUndispatchedAlertToDesk`).
    func handUndispatchedAlertToDesk(id: String, deviceID: String) async throws

    /// Appends an event of intake's own (`alert_flood`) to the feed.
    func appendFeedEvent(kind: String, data: String) async throws

    /// When the device whose token this digest is was erased (`WipeOrderDigest`), or nil.
    func wipeOrder(tokenDigest: String) async throws -> Int64?
    /// Marks days whose heart-rate readings arrive late, before their batch is written, so that
    /// a kept day summary of them is read again (`HeartRateDays`).
    func markHeartRateDaysLate(deviceID: String, days: Set<Int64>, receivedMilliseconds: Int64) async throws
}

/// One reading of a batch, ready to store.
struct ReadingRow: Hashable, Sendable {
    var sequence: Int64
    var kind: WireReading.Kind
    /// Where the reading is filed in time: its wall time when trusted and plausible, otherwise
    /// the time the server received it (never 1970).
    var placedMilliseconds: Int64
    var wallMilliseconds: Int64?
    var timeFlag: TimeFlag?
    /// The reading exactly as the wire carried it (WireCodec JSON).
    var body: String
}

/// A batch as the handler hands it to the store.
struct IncomingBatch: Sendable {
    var deviceID: String
    var batchSequence: Int64
    var droppedByBudget: Int64
    var heartbeatJSON: String?
    var readings: [ReadingRow]
    var receivedMilliseconds: Int64
    /// The device store's epoch (WIRE.md, "Store epochs and conflicts"); nil from older devices.
    var storeEpoch: String? = nil
    /// `BatchDigest` of the batch's content: a key replayed with another digest is a conflict.
    var digest: String? = nil
    /// The batch's counters for the group figures, by day (`DeviceDay`): added in the batch's
    /// transaction when every one of its readings is stored (`days(whenStored:)`).
    var days: [DeviceDay] = []

    /// The counters to add once the store knows how many of the readings it stored: all of them
    /// when every reading was new, none when it held some already (none is counted twice).
    func days(whenStored stored: Int) -> [DeviceDay] { stored == readings.count ? days : [] }
}

/// Why a batch was refused with 409, and the floors the device must re-base to.
struct IngestConflict: Hashable, Sendable {
    var reason: BatchConflict.Reason
    var sequenceFloor: Int64
    var batchSequenceFloor: Int64
}

/// What the store did with a batch; a replay returns what the first delivery stored.
struct IngestResult: Hashable, Sendable {
    var stored: Int
    var duplicates: Int
    var acknowledgedAlerts: [String]
    /// The same idempotency key had been processed before; nothing was stored now.
    var replayed: Bool
    /// Set when nothing was stored because the key or the epoch conflicts (answered with 409).
    var conflict: IngestConflict? = nil
    /// What the reply tells the device besides the acknowledgement, read with the batch rather
    /// than in requests of their own (two fewer reads per batch).
    var news = DeviceNews()
}

/// What a batch's reply tells its device besides the acknowledgement.
struct DeviceNews: Hashable, Sendable {
    /// Alerts a dispatcher resolved that the device has not reported closed: every batch's
    /// acknowledgement carries them (`resolved_alerts`) until it does.
    var resolvedAlerts: [String] = []
    /// The device's care settings as stored: their version, and their JSON, decoded only when
    /// the device runs an older version (`CareSettings`).
    var careVersion: Int64?
    var careJSON: String?
}

/// What the store did with an alert update.
struct AlertIntakeResult: Hashable, Sendable {
    /// `(alert_id, update_seq)` was already stored; nothing changed.
    var duplicate: Bool
    /// Whether a dispatcher has acknowledged the alert.
    var acknowledged: Bool
    /// Whether a dispatcher has resolved it (it has an outcome). Read in the update's own
    /// transaction, as `acknowledged` is: the reply needs no read of its own after the write.
    var resolved = false
}

enum AlertIntakeOutcome: Hashable, Sendable {
    case accepted(AlertIntakeResult)
    /// The alert id belongs to another device.
    case foreignAlert
}

/// An intake store whose reads of what other rooms keep (the device row, whether an alert is
/// resolved or kept undispatched, wipe orders) and whose small writes beside the batches (a feed
/// event, a kept alert) are the hall store's own, on the same backend and connections.
protocol HallBackedIngestStore: IngestStore {
    associatedtype Hall: ServerStore
    var store: Hall { get }
}

extension HallBackedIngestStore {
    func device(id: String) async throws -> DeviceRow? {
        try await store.device(id: id)
    }

    func keepUndispatchedAlert(_ update: AlertUpdate, body: String, receivedMilliseconds: Int64) async throws -> UndispatchedAlertOutcome {
        try await store.keepUndispatchedAlert(update, body: body, receivedMilliseconds: receivedMilliseconds)
    }

    func isUndispatchedAlert(id: String) async throws -> Bool {
        try await store.isUndispatchedAlert(id: id)
    }

    func handUndispatchedAlertToDesk(id: String, deviceID: String) async throws {
        try await store.handUndispatchedAlertToDesk(id: id, deviceID: deviceID)
    }

    func appendFeedEvent(kind: String, data: String) async throws {
        try await store.appendFeedEvent(kind: kind, data: data)
    }

    func wipeOrder(tokenDigest: String) async throws -> Int64? {
        try await store.wipeOrder(tokenDigest: tokenDigest)
    }

    func markHeartRateDaysLate(deviceID: String, days: Set<Int64>, receivedMilliseconds: Int64) async throws {
        try await store.markHeartRateDaysLate(deviceID: deviceID, days: days, receivedMilliseconds: receivedMilliseconds)
    }
}
