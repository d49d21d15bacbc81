import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TrackMeCore

/// The dispatcher's desk and feed, mounted at `/v1`: the board and history, one alert's whole
/// story (person, timeline, track, heart rate, device health, notes), acknowledge, resolve with
/// an outcome, notes, the devices and a device's readings, and the live feed
/// (`/v1/alerts/stream`). The room holds its `AlertDeskStore` and nothing of the hall's; each
/// route is entered through the door `access` declares, and every read of a person's data passes
/// `AccessPolicy` and is written to the person's access log (`DeskAccess`).
struct AlertsRoom: Sendable {
    private static let mount = "/v1"
    static let path = RouterPath(mount)

    /// Desk readers: dispatchers and admins (by token or by session).
    static let readers: Set<Role> = [.dispatcher, .admin]

    /// Who may enter each route, as `RouteAccess` holds the router to it; the room's doors are
    /// built from this table (`routes()`).
    static let access: [String: RouteAccess.Requirement] = [
        "GET /v1/alerts": .personData(readers), "GET /v1/alerts/{id}": .personData(readers),
        "GET /v1/alerts/stream": .personData([.dispatcher]),
        "POST /v1/alerts/{id}/ack": .roles([.dispatcher]), "POST /v1/alerts/{id}/resolve": .roles(readers),
        "POST /v1/alerts/{id}/notes": .roles(readers),
        "GET /v1/devices": .personData(readers), "GET /v1/devices/{id}/readings": .personData(readers),
    ]

    /// The track an alert's page shows: its newest positions (10 minutes at 1 Hz) and the
    /// position of each other update, so the request costs the same for an alert of any age.
    static let trackPositions = 600

    private let store: any AlertDeskStore
    private let services: RoomServices
    /// Who may read a person's data; one policy for every route.
    private let access: DeskAccess

    init(store: any AlertDeskStore, services: RoomServices) {
        self.store = store
        self.services = services
        access = DeskAccess(store: store, wallClock: services.configuration.wallClock)
    }

    private var policy: AccessPolicy { access.policy }

    /// The room's routes, mounted at `path`, each behind the door its declaration names.
    func routes() -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: Self.mount, access: Self.access, authenticator: services.authenticator)
        let room = self
        doors.on(.get, "alerts") { request, context in try await room.list(request, principal: try context.signedIn()) }
        doors.on(.get, "alerts/stream") { request, context in try await room.alertStream(request, principal: try context.signedIn()) }
        doors.on(.get, "alerts/:id") { _, context in
            try await room.detail(id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "alerts/:id/ack") { _, context in
            try await room.acknowledge(id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "alerts/:id/resolve") { request, context in
            try await room.resolve(request, id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "alerts/:id/notes") { request, context in
            try await room.addNote(request, id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.get, "devices") { request, context in try await room.devices(request, principal: try context.signedIn()) }
        doors.on(.get, "devices/:id/readings") { request, context in
            try await room.listReadings(request, deviceID: try context.pathID("id"), principal: try context.signedIn())
        }
        return routes
    }

    // MARK: - The board and one alert

    func list(_ request: Request, principal: Principal) async throws -> Response {
        let status = request.uri.queryParameters.get("status") ?? "open"
        guard status == "open" || status == "closed" else { throw APIError.invalid("status", "open or closed") }
        let page = try PageRequest(request, maxLimit: services.configuration.maxPageSize)
        // Read before the alerts: whatever happens after it is on the feed after this id.
        let head = try await store.feedHead()
        var rows: [AlertSummary]
        var next: String?
        if status == "open" {
            // The board stays whole: it is the dispatchers' working set, which they empty, and
            // its order (gravest first) is not an order the store can page by. Only the cursor
            // of the history means anything here.
            guard page.after == nil else { throw APIError.invalid("after", "the open board is one page: no cursor") }
            rows = try await store.alertRows(open: true, limit: page.limit).map(AlertSummary.init)
            rows.sort(by: AlertSummary.boardOrder)
        } else {
            let before = try page.after.map { try $0.timeAndID() }
            let fetched = try await store.closedAlertRows(before: before.map { ($0.milliseconds, $0.id) }, limit: page.fetchLimit)
            let cut = page.cut(fetched) { PageCursor(String($0.updatedMilliseconds), $0.alertID) }
            rows = cut.rows.map(AlertSummary.init)
            next = cut.next
        }
        rows = rows.map { access.redactHistory($0, principal: principal) }
        var names = ActorNames(store: store)
        for index in rows.indices { try await names.name(&rows[index]) }
        return try json(.ok, AlertList(alerts: rows, feedLastID: head, next: next))
    }

    func detail(id: String, principal: Principal) async throws -> Response {
        guard let row = try await store.alertRow(id: id) else { throw APIError.notFound("no alert \(id)") }
        let now = services.configuration.wallClock()
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
        try await access.log(principal, subject: "device:\(row.deviceID)", grants: grants, what: "alert \(id)")
        let (windowFrom, windowTo) = DeskAccess.alertWindow(grants, now: now)
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
            guard let wire = try? WireCodec.decodeReading(reading.body), case .heartRate(let hr) = wire.payload else {
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
                maxAttempts: services.configuration.console.contactRetry.attempts
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

    // MARK: - Handling an alert

    func acknowledge(id: String, principal: Principal) async throws -> Response {
        switch try await store.acknowledgeAlert(id: id, by: principal.actor, atMilliseconds: services.configuration.wallClock()) {
        case .notFound:
            throw APIError.notFound("no alert \(id)")
        case .acknowledged(let deviceID):
            services.metrics.alertsAcknowledged.increment()
            services.notifier.notify()
            return try json(.ok, AcknowledgeResponse(alertID: id, deviceID: deviceID, acknowledged: true, already: false))
        case .alreadyAcknowledged(let deviceID):
            return try json(.ok, AcknowledgeResponse(alertID: id, deviceID: deviceID, acknowledged: true, already: true))
        }
    }

    func resolve(_ request: Request, id: String, principal: Principal) async throws -> Response {
        let body = try RequestBody.decode(ResolveRequest.self, try await RequestBody.read(request, limit: services.configuration.maxBodyBytes))
        switch try await store.resolveAlert(id: id, outcome: body.outcome, by: principal.actor, atMilliseconds: services.configuration.wallClock()) {
        case .notFound:
            throw APIError.notFound("no alert \(id)")
        case .resolved(let deviceID):
            services.notifier.notify()
            return try json(.ok, ResolveResponse(alertID: id, deviceID: deviceID, outcome: body.outcome, alreadyClosed: false))
        case .alreadyClosed(let deviceID):
            return try json(.ok, ResolveResponse(alertID: id, deviceID: deviceID, outcome: body.outcome, alreadyClosed: true))
        }
    }

    func addNote(_ request: Request, id: String, principal: Principal) async throws -> Response {
        let body = try RequestBody.decode(NoteRequest.self, try await RequestBody.read(request, limit: services.configuration.maxBodyBytes))
        let text = body.text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...2000).contains(text.count) else { throw APIError.invalid("text", "must be 1-2000 characters") }
        var author = principal.actor
        if let accountID = principal.accountID, let name = try await store.accountName(id: accountID) { author = name }
        guard let note = try await store.addNote(alertID: id, author: author, text: text, atMilliseconds: services.configuration.wallClock()) else {
            throw APIError.notFound("no alert \(id)")
        }
        services.notifier.notify()
        return try json(.created, note)
    }

    // MARK: - Devices

    /// Every device's health; the person wearing it only where the policy lets the principal
    /// read them now (for a dispatcher: an alert of theirs being handled, or just closed), and
    /// that read logged.
    func devices(_ request: Request, principal: Principal) async throws -> Response {
        let page = try PageRequest(request, maxLimit: services.configuration.maxPageSize)
        let cut = page.cut(try await store.deviceRows(after: try page.after?.string(), limit: page.fetchLimit)) { PageCursor($0.deviceID) }
        var devices = cut.rows.map(DeviceSummary.init)
        guard principal.role != .admin else { return try json(.ok, DeviceList(devices: devices, next: cut.next)) }
        let now = services.configuration.wallClock()
        // The alerts a dispatcher may be handling: every open one and the recently closed.
        var spans: [String: [AccessPolicy.AlertSpan]] = [:]
        for row in try await store.alertRows(open: true, limit: 1) + store.alertRows(open: false, limit: 1000) {
            spans[row.deviceID, default: []].append(PersonData.span(row))
        }
        for index in devices.indices {
            let deviceID = devices[index].deviceID
            let subject = AccessPolicy.Subject(personID: "device:\(deviceID)", deviceIDs: [deviceID], alerts: spans[deviceID] ?? [])
            let grants = policy.grants(principal, subject: subject, now: now)
            if grants.isEmpty {
                devices[index].person = nil
            } else {
                try await access.log(principal, subject: "device:\(deviceID)", grants: grants, what: "devices list: \(deviceID)")
            }
        }
        return try json(.ok, DeviceList(devices: devices, next: cut.next))
    }

    func listReadings(_ request: Request, deviceID: String, principal: Principal) async throws -> Response {
        let parameters = request.uri.queryParameters
        func integer(_ name: String) throws -> Int64? {
            guard let text = parameters.get(name), !text.isEmpty else { return nil }
            guard let value = Int64(text) else { throw APIError(status: .badRequest, code: .wrongType, field: name, message: "expected an integer") }
            return value
        }
        var kind: WireReading.Kind?
        if let text = parameters.get("kind"), !text.isEmpty {
            guard let parsed = WireReading.Kind(rawValue: text) else { throw APIError.invalid("kind", "expected hr or fix") }
            kind = parsed
        }
        let limit = Int(try integer("limit") ?? Int64(services.configuration.maxPageSize))
        guard (1...services.configuration.maxPageSize).contains(limit) else {
            throw APIError.invalid("limit", "must be 1-\(services.configuration.maxPageSize)")
        }
        guard try await store.device(id: deviceID) != nil else { throw APIError.notFound("no device \(deviceID)") }
        let rows = try await store.readings(
            ReadingQuery(
                deviceID: deviceID,
                fromMilliseconds: try integer("from"),
                toMilliseconds: try integer("to"),
                kind: kind,
                afterSequence: try integer("after_seq") ?? 0,
                limit: limit
            )
        )
        // Dispatchers: only around an alert they handle, and logged (`DeskAccess`).
        var shown = rows
        if principal.role != .admin { shown = try await access.narrowReadings(rows, deviceID: deviceID, principal: principal) }
        // The stored wire JSON is spliced in as it is rather than decoded and encoded again.
        var text = "{\"device_id\":\(try StoreJSON.encode(deviceID)),\"next_after_seq\":"
        text += rows.count == limit ? "\(rows[rows.count - 1].sequence)" : "null"
        text += ",\"readings\":["
        for (index, row) in shown.enumerated() {
            if index > 0 { text += "," }
            let flag = row.timeFlag.map { "\"\($0.rawValue)\"" } ?? "null"
            text += "{\"placed_ms\":\(row.placedMilliseconds),\"received_ms\":\(row.receivedMilliseconds),\"time_flag\":\(flag),"
            text += row.body.dropFirst()
        }
        text += "]}"
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    // MARK: - The feed

    /// `GET /v1/alerts/stream`: the feed as server-sent events, resumed after `Last-Event-ID`
    /// within the replay window (`FeedReplay`), each alert's events only while the principal may
    /// handle it.
    func alertStream(_ request: Request, principal: Principal) async throws -> Response {
        let authorization = request.headers[.authorization]
        let authenticator = services.authenticator
        // A stream lasts as long as what opened it: a revoked token, or a browser session that
        // expired, was signed out or whose account was disabled, gets nothing more.
        let stillValid: @Sendable () async -> Bool = {
            if principal.accountID != nil { return (try? await authenticator.session(of: request)) != nil }
            return await authenticator.isStillValid(authorization, roles: [.dispatcher])
        }
        let resumeText = request.headers[.lastEventID] ?? request.uri.queryParameters.get("last_event_id")
        var requested: Int64?
        if let resumeText, !resumeText.isEmpty {
            guard let value = Int64(resumeText), value >= 0 else {
                throw APIError.invalid("Last-Event-ID", "must be an event id from this feed")
            }
            requested = value
        }
        let wallClock = services.configuration.wallClock
        let heartbeatMilliseconds = services.configuration.console.feedHeartbeat.milliseconds
        // No id: a heartbeat says the connection is alive and moves no one's Last-Event-ID.
        let heartbeat: @Sendable () -> ByteBuffer = {
            ByteBuffer(string: "event: \(FeedKind.heartbeat)\ndata: {\"at_ms\":\(wallClock()),\"interval_ms\":\(heartbeatMilliseconds)}\n\n")
        }
        let (resumeAfter, reset) = try await FeedReplay.start(requested: requested, store: store, now: wallClock())
        let filter = FeedReplay(store: store, principal: principal)
        let store = self.store
        return EventStream.response(notifier: services.notifier, retryMilliseconds: 1000, logger: services.logger, name: "alert stream") {
            writer,
            wakes in
            try await writer.write(heartbeat())
            // Older than the replay window: the page re-reads the board instead.
            if reset { try await writer.write(ByteBuffer(string: "event: \(FeedKind.feedReset)\ndata: {\"after\":\(resumeAfter)}\n\n")) }
            var last = resumeAfter
            var replay = filter
            var iterator = wakes.makeAsyncIterator()
            let page = 256
            while !Task.isCancelled {
                let events = try await store.feedEvents(after: last, limit: page)
                if !events.isEmpty {
                    var text = ""
                    let now = wallClock()
                    for event in events {
                        last = event.id
                        guard try await replay.admits(event, now: now) else { continue }
                        text += "id: \(event.id)\nevent: \(event.kind)\ndata: \(event.data)\n\n"
                    }
                    if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
                    if events.count == page { continue }
                }
                guard let wake = await iterator.next() else { break }
                guard await stillValid() else { break }
                if case .tick = wake { try await writer.write(heartbeat()) }
            }
        }
    }
}

/// Shows who acted by name: `account:ID` (a signed-in person) becomes their display name; a
/// program's token id stays as it is.
struct ActorNames {
    let store: any AccessLogStore
    private var cache: [String: String] = [:]

    init(store: any AccessLogStore) {
        self.store = store
    }

    mutating func name(_ actor: String?) async throws -> String? {
        guard let actor, actor.hasPrefix("account:") else { return actor }
        if let known = cache[actor] { return known }
        let name = try await store.accountName(id: String(actor.dropFirst("account:".count))) ?? actor
        cache[actor] = name
        return name
    }

    mutating func name(_ summary: inout AlertSummary) async throws {
        summary.acknowledgedBy = try await name(summary.acknowledgedBy)
        summary.resolvedBy = try await name(summary.resolvedBy)
    }
}
