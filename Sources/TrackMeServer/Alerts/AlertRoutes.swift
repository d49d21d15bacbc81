import Foundation
import Hummingbird
import TrackMeCore

/// The dispatcher's desk: the board and history, one alert's whole story (person, timeline,
/// track, heart rate, device health, notes), resolve with an outcome, notes, and the devices.
struct AlertRoutes: Sendable {
    let api: ServerAPI
    /// Who may read a person's data; one policy for every page.
    var policy = AccessPolicy()

    var store: any ServerStore { api.store }

    /// Desk readers: dispatchers and admins (by token or by session).
    static let readers: Set<Role> = [.dispatcher, .admin]
    /// The track an alert's page shows: its newest positions (10 minutes at 1 Hz) and the
    /// position of each other update, so the request costs the same for an alert of any age.
    static let trackPositions = 600

    func register(on router: Router<ServerRequestContext>) {
        router.get("/v1/alerts") { request, _ in try await list(request) }
        router.get("/v1/alerts/:id") { request, context in try await detail(request, id: try context.pathID("id")) }
        router.post("/v1/alerts/:id/resolve") { request, context in try await resolve(request, id: try context.pathID("id")) }
        router.post("/v1/alerts/:id/notes") { request, context in try await addNote(request, id: try context.pathID("id")) }
        router.get("/v1/devices") { request, _ in try await devices(request) }
    }

    func list(_ request: Request) async throws -> Response {
        let principal = try await api.authenticator.authenticate(request, roles: Self.readers)
        let status = request.uri.queryParameters.get("status") ?? "open"
        guard status == "open" || status == "closed" else { throw APIError.invalid("status", "open or closed") }
        let limitText = request.uri.queryParameters.get("limit") ?? "100"
        guard let limit = Int(limitText), (1...1000).contains(limit) else { throw APIError.invalid("limit", "must be 1-1000") }
        // Read before the alerts: whatever happens after it is on the feed after this id.
        let head = try await store.feedHead()
        var rows = try await store.alertRows(open: status == "open", limit: limit).map(AlertSummary.init)
        if status == "open" { rows.sort(by: AlertSummary.boardOrder) }
        rows = rows.map { PersonData(api: api).redactHistory($0, principal: principal) }
        var names = ActorNames(store: store)
        for index in rows.indices { try await names.name(&rows[index]) }
        return try json(.ok, AlertList(alerts: rows, feedLastID: head))
    }

    func detail(_ request: Request, id: String) async throws -> Response {
        let principal = try await api.authenticator.authenticate(request, roles: Self.readers)
        guard let row = try await store.alertRow(id: id) else { throw APIError.notFound("no alert \(id)") }
        let now = api.configuration.wallClock()
        let span = AccessPolicy.AlertSpan(
            openedMilliseconds: row.createdMilliseconds,
            closedMilliseconds: row.isOpen ? nil : (row.resolvedMilliseconds ?? row.updatedMilliseconds)
        )
        let subject = AccessPolicy.Subject(personID: row.deviceID, deviceIDs: [row.deviceID], alerts: [span])
        guard policy.decide(principal, subject: subject, now: now).isAllowed else {
            throw APIError.forbidden("this alert closed too long ago for its person's data to be shown")
        }
        // Heart rate only within the alert's window (from a little before it opened until it closed), and the read logged.
        let grants = policy.grants(principal, subject: subject, now: now)
        try await PersonData(api: api).log(principal, subject: "device:\(row.deviceID)", grants: grants, what: "alert \(id)")
        let (windowFrom, windowTo) = PersonData.alertWindow(grants, now: now)
        let updates = try await store.deskUpdates(alertID: id, recentPositions: Self.trackPositions)
        let notes = try await store.notes(alertID: id)
        var summary = AlertSummary(row)
        var names = ActorNames(store: store)
        try await names.name(&summary)
        let readings = try await store.readings(
            ReadingQuery(
                deviceID: row.deviceID,
                fromMilliseconds: windowFrom,
                toMilliseconds: windowTo,
                kind: .heartRate,
                afterSequence: 0,
                limit: 1000
            )
        )
        var heartRate: [HeartRatePoint] = []
        for reading in readings {
            guard let wire = try? WireCodec.decode(WireReading.self, from: Data(reading.body.utf8)), case .heartRate(let hr) = wire.payload else {
                continue
            }
            heartRate.append(HeartRatePoint(atMilliseconds: reading.placedMilliseconds, bpm: hr.bpm))
        }
        let device = try await store.deviceRow(id: row.deviceID).map(DeviceSummary.init)
        let body = AlertDetail(
            alert: summary,
            timeline: AlertTimeline.build(
                row: row,
                updates: updates,
                notes: notes,
                attempts: try await store.contactAttempts(alertID: id),
                maxAttempts: api.configuration.console.contactRetry.attempts
            ).map { entry in
                var entry = entry
                if entry.event == "acknowledged" { entry.detail = summary.acknowledgedBy }
                if entry.event == "resolved", let by = summary.resolvedBy { entry.detail = "\(entry.detail ?? "") by \(by)" }
                return entry
            },
            notes: notes,
            track: AlertTimeline.track(updates),
            heartRate: heartRate,
            device: device
        )
        return try json(.ok, body)
    }

    func resolve(_ request: Request, id: String) async throws -> Response {
        let principal = try await api.authenticator.authenticate(request, roles: Self.readers)
        let body = try api.decode(ResolveRequest.self, try await api.readBody(request))
        switch try await store.resolveAlert(id: id, outcome: body.outcome, by: principal.actor, atMilliseconds: api.configuration.wallClock()) {
        case .notFound:
            throw APIError.notFound("no alert \(id)")
        case .resolved(let deviceID):
            api.notifier.notify()
            return try json(.ok, ResolveResponse(alertID: id, deviceID: deviceID, outcome: body.outcome, alreadyClosed: false))
        case .alreadyClosed(let deviceID):
            return try json(.ok, ResolveResponse(alertID: id, deviceID: deviceID, outcome: body.outcome, alreadyClosed: true))
        }
    }

    func addNote(_ request: Request, id: String) async throws -> Response {
        let principal = try await api.authenticator.authenticate(request, roles: Self.readers)
        let body = try api.decode(NoteRequest.self, try await api.readBody(request))
        let text = body.text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...2000).contains(text.count) else { throw APIError.invalid("text", "must be 1-2000 characters") }
        var author = principal.actor
        if let accountID = principal.accountID, let account = try await store.account(id: accountID) { author = account.displayName }
        guard let note = try await store.addNote(alertID: id, author: author, text: text, atMilliseconds: api.configuration.wallClock()) else {
            throw APIError.notFound("no alert \(id)")
        }
        api.notifier.notify()
        return try json(.created, note)
    }

    /// Every device's health; the person wearing it only where the policy lets the principal
    /// read them now (for a dispatcher: an alert of theirs being handled, or just closed), and
    /// that read logged.
    func devices(_ request: Request) async throws -> Response {
        let principal = try await api.authenticator.authenticate(request, roles: Self.readers)
        var devices = try await store.deviceRows().map(DeviceSummary.init)
        guard principal.role != .admin else { return try json(.ok, DeviceList(devices: devices)) }
        let now = api.configuration.wallClock()
        // The alerts a dispatcher may be handling: every open one and the recently closed.
        var spans: [String: [AccessPolicy.AlertSpan]] = [:]
        for row in try await store.alertRows(open: true, limit: 1) + store.alertRows(open: false, limit: 1000) {
            spans[row.deviceID, default: []].append(PersonData.span(row))
        }
        let people = PersonData(api: api)
        for index in devices.indices {
            let deviceID = devices[index].deviceID
            let subject = AccessPolicy.Subject(personID: "device:\(deviceID)", deviceIDs: [deviceID], alerts: spans[deviceID] ?? [])
            let grants = policy.grants(principal, subject: subject, now: now)
            if grants.isEmpty {
                devices[index].person = nil
            } else {
                try await people.log(principal, subject: "device:\(deviceID)", grants: grants, what: "devices list: \(deviceID)")
            }
        }
        return try json(.ok, DeviceList(devices: devices))
    }
}

/// Shows who acted by name: `account:ID` (a signed-in person) becomes their display name; a
/// program's token id stays as it is.
struct ActorNames {
    let store: any ServerStore
    private var cache: [String: String] = [:]

    init(store: any ServerStore) {
        self.store = store
    }

    mutating func name(_ actor: String?) async throws -> String? {
        guard let actor, actor.hasPrefix("account:") else { return actor }
        if let known = cache[actor] { return known }
        let name = try await store.account(id: String(actor.dropFirst("account:".count)))?.displayName ?? actor
        cache[actor] = name
        return name
    }

    mutating func name(_ summary: inout AlertSummary) async throws {
        summary.acknowledgedBy = try await name(summary.acknowledgedBy)
        summary.resolvedBy = try await name(summary.resolvedBy)
    }
}

struct ResolveRequest: Codable, Sendable {
    var outcome: AlertOutcome
}

struct ResolveResponse: Codable, Sendable {
    var alertID: String
    var deviceID: String
    var outcome: AlertOutcome
    /// It was closed before (resolved by someone, or cancelled on the device); nothing changed.
    var alreadyClosed: Bool

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case outcome
        case alreadyClosed = "already_closed"
    }
}

struct NoteRequest: Codable, Sendable {
    var text: String
}

/// An alert on the board or in the history.
struct AlertSummary: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var kind: AlertKind?
    var severity: Int
    var state: String
    var open: Bool
    var createdMilliseconds: Int64
    var updatedMilliseconds: Int64
    var acknowledgedMilliseconds: Int64?
    var acknowledgedBy: String?
    var outcome: AlertOutcome?
    var resolvedMilliseconds: Int64?
    var resolvedBy: String?
    var record: AlertRecord?
    var person: PersonProfile?

    init(_ row: AlertDeskRow) {
        let record = try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8))
        alertID = row.alertID
        deviceID = row.deviceID
        kind = record?.kind
        severity = record?.kind.severity ?? 0
        state = row.state
        open = row.isOpen
        createdMilliseconds = row.createdMilliseconds
        updatedMilliseconds = row.updatedMilliseconds
        acknowledgedMilliseconds = row.acknowledgedMilliseconds
        acknowledgedBy = row.acknowledgedBy
        outcome = row.outcome
        resolvedMilliseconds = row.resolvedMilliseconds
        resolvedBy = row.resolvedBy
        self.record = record
        person = try? StoreJSON.decode(row.person)
    }

    /// The board: most severe first, then newest.
    static func boardOrder(_ a: AlertSummary, _ b: AlertSummary) -> Bool {
        if a.severity != b.severity { return a.severity > b.severity }
        return a.createdMilliseconds > b.createdMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case kind, severity, state, open
        case createdMilliseconds = "created_ms"
        case updatedMilliseconds = "updated_ms"
        case acknowledgedMilliseconds = "acknowledged_ms"
        case acknowledgedBy = "acknowledged_by"
        case outcome
        case resolvedMilliseconds = "resolved_ms"
        case resolvedBy = "resolved_by"
        case record, person
    }
}

struct AlertList: Codable, Sendable {
    var alerts: [AlertSummary]
    /// Follow the feed after this id to see every change since this list was read.
    var feedLastID: Int64

    enum CodingKeys: String, CodingKey {
        case alerts
        case feedLastID = "feed_last_id"
    }
}

struct HeartRatePoint: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var bpm: Int

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case bpm
    }
}

struct TrackPoint: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var latitude: Double
    var longitude: Double

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case latitude = "lat"
        case longitude = "lon"
    }
}

struct DeviceSummary: Codable, Hashable, Sendable {
    var deviceID: String
    var person: PersonProfile?
    var enrolledMilliseconds: Int64
    var lastSeenMilliseconds: Int64?
    var silent: Bool
    var heartbeat: DeviceHeartbeat?

    init(_ row: DeviceStatusRow) {
        deviceID = row.deviceID
        person = try? StoreJSON.decode(row.person)
        enrolledMilliseconds = row.enrolledMilliseconds
        lastSeenMilliseconds = row.lastSeenMilliseconds
        silent = row.silent
        heartbeat = row.heartbeat.flatMap { try? StoreJSON.decode($0) }
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case person
        case enrolledMilliseconds = "enrolled_ms"
        case lastSeenMilliseconds = "last_seen_ms"
        case silent, heartbeat
    }
}

struct DeviceList: Codable, Sendable {
    var devices: [DeviceSummary]
}

struct AlertDetail: Codable, Sendable {
    var alert: AlertSummary
    var timeline: [TimelineEntry]
    var notes: [AlertNote]
    var track: [TrackPoint]
    var heartRate: [HeartRatePoint]
    var device: DeviceSummary?

    enum CodingKeys: String, CodingKey {
        case alert, timeline, notes, track
        case heartRate = "heart_rate"
        case device
    }
}
