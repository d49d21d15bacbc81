import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// The contact's page and what it reads, the link's signed key the only credential:
///
/// - `GET /contact/{token}`: the page (`contact.html`, `contact.js`), 403 for a forged link,
///   410 for an expired one or an alert over for longer than `ContactFollow.grace`.
/// - `GET /contact/{token}/live`: that link's alert only (`ContactLiveView`): its state, the
///   person's name and the alert's kind, and while it is open the position and a short track.
///   Nothing else of the person; no position once the alert closed. Each read that returned a
///   position is in the person's access log. The page reads it every few seconds until the
///   alert closes.
/// - `POST /contact/{token}`: confirms receipt, once (which acknowledges the alert); 410 after.
///
/// The room holds its `ContactsRoomStore` and nothing of the hall's.
struct ContactsRoom: Sendable {
    /// The signed link is the credential, scoped to its one alert: no other door.
    static let access: [String: RouteAccess.Requirement] = [
        "GET /contact/{token}": .open, "POST /contact/{token}": .open, "GET /contact/{token}/live": .open, "GET /assets/contact.js": .open,
    ]

    private let store: any ContactsRoomStore
    private let services: RoomServices

    init(store: any ContactsRoomStore, services: RoomServices) {
        self.store = store
        self.services = services
    }

    var escalation: ContactEscalation {
        ContactEscalation(
            store: store,
            console: services.configuration.console,
            wallClock: services.configuration.wallClock,
            clock: services.configuration.clock,
            logger: services.logger
        )
    }

    /// The room's routes at their full paths, each behind the door `access` declares. `page`
    /// serves a page or script under the pages' policy.
    func routes(page: @escaping @Sendable (EmbeddedFile, Request) -> Response) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: services.authenticator)
        let room = self
        doors.on(.get, "/assets/contact.js") { request, _ in page(WebPages.contactScript, request) }
        doors.on(.get, "/contact/:token") { request, context in
            try await room.show(request, context.parameters.get("token") ?? "", page: page)
        }
        doors.on(.get, "/contact/:token/live") { _, context in try await room.live(context.parameters.get("token") ?? "") }
        doors.on(.post, "/contact/:token") { _, context in try await room.confirm(context.parameters.get("token") ?? "") }
        return routes
    }

    /// The page, with the status the link has now; the page itself holds nothing of the alert
    /// (its script reads `live`), so a browser revalidating it gets its 304 whatever the link.
    func show(_ request: Request, _ token: String, page: (EmbeddedFile, Request) -> Response) async throws -> Response {
        var response = page(WebPages.contact, request)
        guard response.status == .ok else { return response }
        switch try await escalation.follow(token: token) {
        case .forged: response.status = .forbidden
        case .expired, .over: response.status = .gone
        case .live: break
        }
        return response
    }

    func live(_ token: String) async throws -> Response {
        let now = services.configuration.wallClock()
        switch try await escalation.follow(token: token) {
        case .forged: throw ContactFollow.notValid
        case .expired: throw ContactFollow.expired
        case .over: throw ContactFollow.over
        case .live(let notification, let row, let contact):
            let updates = row.isOpen ? try await store.alertUpdates(alertID: row.alertID) : []
            let view = ContactFollow.view(
                row: row,
                updates: updates,
                contact: contact,
                confirmed: notification.confirmedMilliseconds != nil,
                nowMilliseconds: now
            )
            if view.position != nil {
                try await log(row: row, contactIndex: notification.contactIndex, contact: contact, at: now)
            }
            var response = try json(.ok, view)
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }

    /// The read in the person's access log (the device's when no wearer account is linked).
    func log(row: AlertDeskRow, contactIndex: Int, contact: EmergencyContact?, at now: Int64) async throws {
        let subject = try await store.wearerAccount(deviceID: row.deviceID).map { "person:\($0)" } ?? "device:\(row.deviceID)"
        try await store.appendAccessLog(
            AccessLogEntry(
                id: 0,
                subject: subject,
                readerID: "contact:\(row.alertID):\(contactIndex)",
                readerName: contact?.name ?? "Emergency contact \(contactIndex + 1)",
                readerRole: ContactFollow.readerRole,
                reason: ContactFollow.reason,
                what: "live position during alert \(row.alertID)",
                atMilliseconds: now
            )
        )
    }

    func confirm(_ token: String) async throws -> Response {
        switch try await escalation.check(token: token) {
        case .forged: throw ContactFollow.notValid
        case .expired: throw ContactFollow.expired
        case .used: throw ContactFollow.used
        case .valid(let notification, let row, let contact):
            let now = services.configuration.wallClock()
            guard
                try await store.confirmContactNotification(
                    alertID: notification.alertID,
                    contactIndex: notification.contactIndex,
                    nonce: notification.nonce,
                    atMilliseconds: now
                )
            else { throw ContactFollow.used }
            // A contact's confirmation counts as an acknowledgement.
            let actor = "contact:\(contact?.name ?? "\(notification.contactIndex)")"
            if case .acknowledged = try await store.acknowledgeAlert(id: row.alertID, by: actor, atMilliseconds: now) {
                services.metrics.alertsAcknowledged.increment()
            }
            services.notifier.notify()
            return try json(.ok, ContactConfirmation(confirmed: true, confirmedMilliseconds: now))
        }
    }
}

struct ContactConfirmation: Codable, Sendable {
    var confirmed: Bool
    var confirmedMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case confirmed
        case confirmedMilliseconds = "confirmed_ms"
    }
}

/// What a contact's link shows of its alert, and for how long. Pure.
enum ContactFollow {
    /// How long after the alert closed its link still answers (with how it ended, never a
    /// position); after that, 410.
    static let grace: Int64 = 3_600_000
    /// The positions of the track on the contact's page: the last few minutes at 1 Hz.
    static let trackPoints = 300
    static let readerRole = "emergency_contact"
    static let reason = "alert_link"

    static let notValid = APIError(status: .forbidden, code: .init(rawValue: "link_not_valid"), message: "this link is not valid")
    static let expired = APIError(status: .gone, code: .init(rawValue: "link_expired"), message: "this link has expired")
    static let used = APIError(status: .gone, code: .init(rawValue: "link_used"), message: "receipt was already confirmed with this link")
    static let over = APIError(status: .gone, code: .init(rawValue: "alert_over"), message: "this alert is over")

    /// When the alert closed (a dispatcher resolved it, or the device closed it), nil while open.
    static func closedMilliseconds(_ row: AlertDeskRow) -> Int64? {
        row.isOpen ? nil : (row.resolvedMilliseconds ?? row.updatedMilliseconds)
    }

    static func view(
        row: AlertDeskRow,
        updates: [AlertUpdateRow],
        contact: EmergencyContact?,
        confirmed: Bool,
        nowMilliseconds now: Int64
    )
        -> ContactLiveView
    {
        let person: PersonProfile? = try? StoreJSON.decode(row.person)
        let record = try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8))
        let closed = closedMilliseconds(row)
        let state: ContactLiveView.State = closed != nil ? .closed : (row.acknowledgedMilliseconds != nil ? .acknowledged : .open)
        var view = ContactLiveView(
            state: state,
            person: person?.name ?? "",
            contact: contact?.name ?? "",
            kind: record?.kind.rawValue ?? "",
            openedMilliseconds: row.createdMilliseconds,
            acknowledgedMilliseconds: row.acknowledgedMilliseconds,
            acknowledgedBy: row.acknowledgedBy.map { $0.hasPrefix("contact:") ? "contact" : "dispatcher" },
            closedMilliseconds: closed,
            outcome: closed == nil ? nil : (row.outcome?.rawValue ?? row.state),
            confirmed: confirmed,
            position: nil,
            track: [],
            nowMilliseconds: now
        )
        guard closed == nil else { return view }
        let track = AlertTimeline.track(updates)
        view.track = Array(track.suffix(trackPoints))
        if let last = track.last {
            view.position = ContactLiveView.Position(latitude: last.latitude, longitude: last.longitude, atMilliseconds: last.atMilliseconds)
        } else if let fix = record?.position?.fix, let latitude = fix.latitude, let longitude = fix.longitude {
            view.position = ContactLiveView.Position(latitude: latitude, longitude: longitude, atMilliseconds: row.createdMilliseconds)
        }
        return view
    }
}

/// `GET /contact/{token}/live`.
struct ContactLiveView: Codable, Sendable {
    enum State: String, Codable, Sendable {
        case open
        /// A dispatcher (or a contact, through their link) acknowledged it: help is being handled.
        case acknowledged
        case closed
    }

    struct Position: Codable, Sendable {
        var latitude: Double
        var longitude: Double
        /// When the server received it.
        var atMilliseconds: Int64

        enum CodingKeys: String, CodingKey {
            case latitude = "lat"
            case longitude = "lon"
            case atMilliseconds = "at_ms"
        }
    }

    var state: State
    var person: String
    var contact: String
    var kind: String
    var openedMilliseconds: Int64
    var acknowledgedMilliseconds: Int64?
    /// `dispatcher` or `contact`: never who.
    var acknowledgedBy: String?
    var closedMilliseconds: Int64?
    /// How it ended: a dispatcher's outcome, or `resolved`/`cancelled` on the device.
    var outcome: String?
    /// Whether this contact confirmed receipt.
    var confirmed: Bool
    /// The newest position while the alert is open; nil once it closed.
    var position: Position?
    /// The positions since the alert opened (the last `ContactFollow.trackPoints`), oldest first.
    var track: [TrackPoint]
    var nowMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case state, person, contact, kind
        case openedMilliseconds = "opened_ms"
        case acknowledgedMilliseconds = "acknowledged_ms"
        case acknowledgedBy = "acknowledged_by"
        case closedMilliseconds = "closed_ms"
        case outcome, confirmed, position, track
        case nowMilliseconds = "now_ms"
    }
}

/// Text made safe to place in HTML content or a quoted attribute.
func escape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.append(character)
        }
    }
    return out
}
