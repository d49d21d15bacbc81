import Foundation
import TrackMeCore

/// `data` of an `alert` feed event: what the board needs to place and move the alert, and the
/// references to read the rest. The person (profile, contacts, carer notes) is not in it: the
/// page reads it with `GET /v1/alerts/{id}`, under `AccessPolicy` and into the access log.
struct AlertFeedReference: Codable, Hashable, Sendable {
    struct Position: Codable, Hashable, Sendable {
        var latitude: Double?
        var longitude: Double?
        var ageMilliseconds: Int64

        enum CodingKeys: String, CodingKey {
            case latitude = "lat"
            case longitude = "lon"
            case ageMilliseconds = "age_ms"
        }
    }

    var alertID: String
    var deviceID: String
    var kind: AlertKind
    var state: AlertState
    var type: AlertUpdate.UpdateType
    var updateSequence: Int
    var position: Position?
    var receivedMilliseconds: Int64

    init(_ update: AlertUpdate, receivedMilliseconds: Int64) {
        alertID = update.alert.id
        deviceID = update.alert.deviceID
        kind = update.alert.kind
        state = update.alert.state
        type = update.type
        updateSequence = update.updateSequence
        position = update.alert.position.map {
            Position(latitude: $0.fix.latitude, longitude: $0.fix.longitude, ageMilliseconds: $0.ageMilliseconds)
        }
        self.receivedMilliseconds = receivedMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case kind, state, type
        case updateSequence = "update_seq"
        case position
        case receivedMilliseconds = "received_ms"
    }
}

/// `data` of an `alert_note` feed event: which note of which alert; its text is read with the alert.
struct AlertNoteReference: Codable, Hashable, Sendable {
    var alertID: String
    var noteID: Int64
    var createdMilliseconds: Int64

    init(_ note: AlertNote) {
        alertID = note.alertID
        noteID = note.id
        createdMilliseconds = note.createdMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case noteID = "note_id"
        case createdMilliseconds = "created_ms"
    }
}

/// What the dispatcher feed gives a principal. A (re)connecting console is replayed only the
/// last `window` of events, whatever `Last-Event-ID` it sends (older history is on the board
/// and in the alert detail, both read under the policy); and of the events about an alert, only
/// those of alerts the principal may handle now (`AccessPolicy`: open ones, and closed ones for
/// the time after closing that the policy allows).
struct FeedReplay: Sendable {
    /// How far back a resume reaches: long enough for a console to ride out a dropped connection
    /// or a reload, short enough that a token does not replay weeks of other people's alerts.
    static let window: Int64 = 15 * 60 * 1000
    /// How long a decision about one alert is reused within one stream before it is asked again.
    static let recheckAfter: Int64 = 60 * 1000

    let store: any AlertDeskStore
    let principal: Principal
    var policy = AccessPolicy()
    private var decisions: [String: (allowed: Bool, at: Int64)] = [:]

    init(store: any AlertDeskStore, principal: Principal) {
        self.store = store
        self.principal = principal
    }

    /// Where a stream starts: after `requested`, but never before the window; `reset` when the
    /// requested id was older than that (the page then re-reads the board).
    static func start(requested: Int64?, store: any AlertDeskStore, now: Int64) async throws -> (after: Int64, reset: Bool) {
        let floor = try await store.feedFloor(sinceMilliseconds: now - window)
        guard let requested else { return (floor, false) }
        return requested < floor ? (floor, true) : (requested, false)
    }

    /// Whether the principal is given this event. Events about a device alone (silent,
    /// returned) carry no person and pass.
    mutating func admits(_ event: FeedEvent, now: Int64) async throws -> Bool {
        guard let alertID = Self.alertID(of: event) else { return true }
        if let known = decisions[alertID], now - known.at < Self.recheckAfter { return known.allowed }
        var allowed = false
        if let row = try await store.alertRow(id: alertID) {
            let subject = AccessPolicy.Subject(personID: "device:\(row.deviceID)", deviceIDs: [row.deviceID], alerts: [PersonData.span(row)])
            allowed = policy.decide(principal, subject: subject, now: now).isAllowed
        }
        decisions[alertID] = (allowed, now)
        return allowed
    }

    private struct AlertReference: Decodable {
        var alertID: String?

        enum CodingKeys: String, CodingKey {
            case alertID = "alert_id"
        }
    }

    /// The alert an event is about (`alert_id` at the top of its data), nil for device events.
    static func alertID(of event: FeedEvent) -> String? {
        (try? JSONDecoder().decode(AlertReference.self, from: Data(event.data.utf8)))?.alertID
    }
}

extension FeedKind {
    /// Sent first when a stream was asked to resume from before the replay window: what
    /// happened in between is on the board (`GET /v1/alerts`), not replayed.
    static let feedReset = "feed_reset"
    /// Sent when a stream opens and every `ConsoleConfiguration.feedHeartbeat` after (data:
    /// `at_ms`, `interval_ms`), so a page can tell a quiet feed from a dead connection.
    static let heartbeat = "heartbeat"
}
