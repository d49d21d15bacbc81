/// How a dispatcher closed an alert.
enum AlertOutcome: String, Codable, Hashable, Sendable, CaseIterable {
    case helpArrived = "help_arrived"
    case falseAlarm = "false_alarm"
    case wearerSafe = "wearer_safe"
    /// Nobody could reach the wearer.
    case unreachable
}

/// An alert as the dispatcher's desk reads it: the device's latest record plus what people did.
struct AlertDeskRow: Hashable, Sendable {
    var alertID: String
    var deviceID: String
    /// The latest record the device sent (WireCodec JSON of `AlertRecord`).
    var record: String
    /// The device's state of the alert (`raised`, ..., `resolved`, `cancelled`).
    var state: String
    var createdMilliseconds: Int64
    var updatedMilliseconds: Int64
    var acknowledgedMilliseconds: Int64?
    var acknowledgedBy: String?
    var outcome: AlertOutcome?
    var resolvedMilliseconds: Int64?
    var resolvedBy: String?
    /// The person wearing the device (WireCodec JSON of `PersonProfile`).
    var person: String

    /// Open until a dispatcher resolves it or the device closes it.
    var isOpen: Bool { outcome == nil && state != "resolved" && state != "cancelled" }
}

/// One stored update of an alert, for the timeline and the track.
struct AlertUpdateRow: Hashable, Sendable {
    var updateSequence: Int64
    var type: String
    var body: String
    var receivedMilliseconds: Int64
}

struct AlertNote: Codable, Hashable, Sendable {
    var id: Int64
    var alertID: String
    var author: String
    var text: String
    var createdMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case id
        case alertID = "alert_id"
        case author, text
        case createdMilliseconds = "created_ms"
    }
}

/// A device as the devices list shows it.
struct DeviceStatusRow: Hashable, Sendable {
    var deviceID: String
    var person: String
    var enrolledMilliseconds: Int64
    var lastSeenMilliseconds: Int64?
    var silent: Bool
    /// The last heartbeat (WireCodec JSON of `DeviceHeartbeat`), if any.
    var heartbeat: String?
}

enum ResolveResult: Hashable, Sendable {
    case resolved(deviceID: String)
    /// Closed before (resolved by someone, or cancelled on the device).
    case alreadyClosed(deviceID: String)
    case notFound
}

/// What the alerts room (the dispatcher's desk and feed) may do to the database, and nothing
/// more: the alerts and their updates, notes, acknowledging and resolving, the feed, the devices
/// list, a device's readings, and the access log of what it reads. Only `AlertsRoom` holds it
/// as such; both backends give the same answers (`AlertDeskStoreContractTests` runs the same
/// cases on each). Every change appends its feed event in the same transaction
/// (`alert_acknowledged`, `alert_resolved`, `alert_note`).
protocol AlertDeskStore: ContactAttemptStore, AccessLogStore, Sendable {
    /// Open alerts (all of them) or closed ones (newest first, at most `limit`).
    func alertRows(open: Bool, limit: Int) async throws -> [AlertDeskRow]
    /// Closed alerts, most recently changed first (the alert id breaking ties, descending), after
    /// the one `before` names: one page of the history, bounded in the query.
    func closedAlertRows(before: (updatedMilliseconds: Int64, alertID: String)?, limit: Int) async throws -> [AlertDeskRow]
    func alertRow(id: String) async throws -> AlertDeskRow?
    /// The alerts of these devices, newest first (the alert id breaking ties, descending), after
    /// the one `before` names, at most `limit` (nil: every one).
    func alertRows(deviceIDs: [String], before: (createdMilliseconds: Int64, alertID: String)?, limit: Int?) async throws -> [AlertDeskRow]
    /// Every update of the alert in `update_seq` order.
    func alertUpdates(alertID: String) async throws -> [AlertUpdateRow]
    /// What the alert's page shows, bounded whatever the alert's age: every update that is not a
    /// position (raised, kind changed, cancelled, resolved: a handful) and the newest
    /// `recentPositions` position updates, in `update_seq` order.
    func deskUpdates(alertID: String, recentPositions: Int) async throws -> [AlertUpdateRow]
    /// One device as the devices list shows it (one row read, whatever the fleet's size).
    func deviceRow(id: String) async throws -> DeviceStatusRow?
    func resolveAlert(id: String, outcome: AlertOutcome, by actor: String, atMilliseconds: Int64) async throws -> ResolveResult
    /// Nil if there is no such alert.
    func addNote(alertID: String, author: String, text: String, atMilliseconds: Int64) async throws -> AlertNote?
    func notes(alertID: String) async throws -> [AlertNote]
    /// Every device, in device id order (jobs that visit each device; no request reads it).
    func deviceRows() async throws -> [DeviceStatusRow]
    /// Devices after `after` in device id order, at most `limit` (nil: no bound).
    func deviceRows(after: String?, limit: Int?) async throws -> [DeviceStatusRow]
    /// The id of the feed's newest event (0 if none): a page that reads the board after this
    /// and then follows the feed from it misses nothing and replays no old history.
    func feedHead() async throws -> Int64
    /// The id just before the feed's first event at or after `sinceMilliseconds` (server wall
    /// time), or the head when there is none: where a bounded replay starts.
    func feedFloor(sinceMilliseconds: Int64) async throws -> Int64
    /// The feed's events after `id`, oldest first, at most `limit`.
    func feedEvents(after id: Int64, limit: Int) async throws -> [FeedEvent]
    /// Acknowledges the alert once: the first acknowledgement appends `alert_acknowledged`;
    /// later ones change nothing.
    func acknowledgeAlert(id: String, by tokenID: String, atMilliseconds: Int64) async throws -> AcknowledgeOutcome

    /// The enrolled device, or nil.
    func device(id: String) async throws -> DeviceRow?
    /// A device's stored readings (`ReadingQuery`), in sequence order.
    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow]
    /// Ids of every alert of these devices, newest first (the facts the policy judges a
    /// device's wearer by).
    func alertIDs(deviceIDs: [String]) async throws -> [String]
}

enum AcknowledgeOutcome: Hashable, Sendable {
    case acknowledged(deviceID: String)
    case alreadyAcknowledged(deviceID: String)
    case notFound
}

/// One event of the dispatcher feed, in the order the feed delivers them.
public struct FeedEvent: Hashable, Sendable {
    /// Strictly increasing; the SSE `id`, and what `Last-Event-ID` resumes after.
    public var id: Int64
    /// The SSE `event` name: `alert`, `alert_acknowledged`, `device_silent`, `device_returned`.
    public var kind: String
    /// JSON text, the SSE `data`.
    public var data: String

    public init(id: Int64, kind: String, data: String) {
        self.id = id
        self.kind = kind
        self.data = data
    }
}

extension FeedKind {
    static let alertResolved = "alert_resolved"
    static let alertNote = "alert_note"
}

/// `data` of `alert_resolved`.
struct AlertResolvedData: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var outcome: AlertOutcome
    var resolvedMilliseconds: Int64
    var resolvedBy: String

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case outcome
        case resolvedMilliseconds = "resolved_ms"
        case resolvedBy = "resolved_by"
    }
}
