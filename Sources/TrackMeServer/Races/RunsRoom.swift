import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TrackMeCore

/// Runs (Track4Run): organisers create a run from a GPX course or drawn points, open enrolment,
/// see enrolments and check-ins, take off runners who did not check in, follow the race (each
/// runner's heart rate only under the consent they gave at enrolment) and close it with the
/// final standings; the public finds runs in a list and follows one on its spectator page, fed
/// live. Runners enrol from their device (the run code and consents ride in its heartbeat,
/// `RaceIngest`). Only this room and `RaceIngest` hold a `RunStore`.
struct RunsRoom: Sendable {
    private static let organisers: Set<Role> = [.organiser, .admin]

    /// Who may enter each route, as `RouteAccess` holds the router to it; the room's doors are
    /// built from this table (`routes()`), so a route is guarded as it is declared.
    static let access: [String: RouteAccess.Requirement] = [
        // The public: the list, the spectator page and its live feed, the pages.
        "GET /runs": .open, "GET /runs/{id}": .open, "GET /organise": .open,
        "GET /assets/race.js": .open, "GET /assets/runs.js": .open, "GET /assets/organise.js": .open,
        "GET /v1/public/runs": .open, "GET /v1/public/runs/{id}": .open, "GET /v1/public/runs/{id}/stream": .open,
        // The organiser.
        "GET /v1/runs": .roles(organisers), "POST /v1/runs": .roles(organisers),
        "POST /v1/runs/{id}/enrolment": .roles(organisers), "POST /v1/runs/{id}/removals": .roles(organisers),
        "POST /v1/runs/{id}/close": .roles(organisers),
        // The organiser reading runners' data: `AccessPolicy` per runner, and the access log.
        "GET /v1/runs/{id}": .personData(organisers), "GET /v1/runs/{id}/results.csv": .personData(organisers),
        "GET /v1/runs/{id}/tracks.gpx": .personData(organisers),
    ]

    /// After a run ends its organiser may still read its runners' tracks this long (results).
    static let resultsWindowMilliseconds: Int64 = 30 * 24 * 3600 * 1000
    /// The organiser's following reads a runner's data every few seconds; the runner's access
    /// log gets one line per reader, runner and kind of read in this span, not one per refresh.
    static let accessLogSpanMilliseconds: Int64 = 10 * 60 * 1000
    /// The heart rate shown is at most this old.
    static let healthFreshMilliseconds: Int64 = 5 * 60 * 1000

    private let store: any RunStore
    private let services: RoomServices
    private var configuration: ServerConfiguration { services.configuration }
    private var authenticator: Authenticator { services.authenticator }
    private var notifier: FeedNotifier { services.notifier }
    private var logger: Logger { services.logger }
    private let logged: AccessLogSpans

    init(store: any RunStore, services: RoomServices) {
        self.store = store
        self.services = services
        logged = AccessLogSpans()
    }

    var now: Int64 { configuration.wallClock() }

    /// The room's routes, each behind the door its declaration in `access` names. `page` serves
    /// a page or script under the pages' policy.
    func routes(page: @escaping @Sendable (EmbeddedFile, Request) -> Response) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let room = self
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: authenticator)
        doors.on(.get, "/runs") { request, _ in page(WebPages.runs, request) }
        doors.on(.get, "/runs/:id") { request, _ in page(WebPages.race, request) }
        doors.on(.get, "/organise") { request, _ in page(WebPages.organise, request) }
        doors.on(.get, "/assets/race.js") { request, _ in page(WebPages.raceScript, request) }
        doors.on(.get, "/assets/runs.js") { request, _ in page(WebPages.runsScript, request) }
        doors.on(.get, "/assets/organise.js") { request, _ in page(WebPages.organiseScript, request) }
        doors.on(.get, "/v1/public/runs") { request, _ in try await room.publicList(request) }
        doors.on(.get, "/v1/public/runs/:id") { _, context in try await room.spectatorData(id: try context.pathID("id")) }
        doors.on(.get, "/v1/public/runs/:id/stream") { _, context in try await room.spectatorStream(id: try context.pathID("id")) }
        doors.on(.post, "/v1/runs") { request, context in try await room.createRun(request, principal: try context.signedIn()) }
        doors.on(.get, "/v1/runs") { request, context in try await room.listRuns(request, principal: try context.signedIn()) }
        doors.on(.get, "/v1/runs/:id") { request, context in
            try await room.showRun(request, id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "/v1/runs/:id/enrolment") { request, context in
            try await room.setEnrolment(request, id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "/v1/runs/:id/removals") { request, context in
            try await room.removeRunner(request, id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.post, "/v1/runs/:id/close") { _, context in
            try await room.closeRun(id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.get, "/v1/runs/:id/results.csv") { _, context in
            try await room.results(id: try context.pathID("id"), principal: try context.signedIn())
        }
        doors.on(.get, "/v1/runs/:id/tracks.gpx") { _, context in
            try await room.tracks(id: try context.pathID("id"), principal: try context.signedIn())
        }
        return routes
    }

    // MARK: - The organiser

    func createRun(_ request: Request, principal: Principal) async throws -> Response {
        let body = try RequestBody.decode(CreateRunRequest.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        let name = body.name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(name.count) else { throw APIError.invalid("name", "must be 1-100 characters") }
        let place = (body.place ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard place.count <= 100 else { throw APIError.invalid("place", "must be at most 100 characters") }
        let end = body.endMilliseconds ?? body.startMilliseconds + 6 * 3600 * 1000
        guard end > body.startMilliseconds else { throw APIError.invalid("end_ms", "must be after start_ms") }
        if let cap = body.participantCap, !(1...100_000).contains(cap) { throw APIError.invalid("cap", "must be 1-100000 runners") }
        let path: RunPath
        switch (body.gpx, body.points) {
        case (let gpx?, nil):
            do {
                path = try RunPath.parseGPX(gpx)
            } catch {
                throw APIError.invalid("gpx", error.message)
            }
        case (nil, let points?):
            do {
                path = try RunPath(points: points)
            } catch {
                throw APIError.invalid("points", error.message)
            }
        default:
            throw APIError.invalid("gpx", "give the course as a GPX document (gpx) or as drawn points (points), one of the two")
        }
        if let distance = body.distanceMetres {
            guard distance.isFinite, (1...1_000_000).contains(distance) else { throw APIError.invalid("distance_m", "must be 1-1000000 metres") }
        }
        let code = body.code ?? Self.generateCode()
        guard RunParticipation.isValidCode(code) else { throw APIError.invalid("code", "4-32 of A-Z 0-9 -") }
        let run = Run(
            id: BearerToken.generate().id,
            code: code,
            name: name,
            organiserAccountID: Self.organiserID(principal),
            startMilliseconds: body.startMilliseconds,
            endMilliseconds: end,
            enrolmentOpen: false,
            path: path,
            createdMilliseconds: now,
            distanceMetres: body.distanceMetres,
            place: place,
            participantCap: body.participantCap
        )
        guard try await store.insertRun(run) else {
            throw APIError(status: .conflict, code: .conflict, field: "code", message: "run code \(code) is taken")
        }
        return try json(.created, RunBody(run, entries: [], now: now))
    }

    /// The organiser's runs (every run for the admin), a page at a time, newest start first.
    func listRuns(_ request: Request, principal: Principal) async throws -> Response {
        let page = try PageRequest(request, maxLimit: configuration.maxPageSize)
        let time = now
        let query = RunListQuery(organiserAccountID: principal.role == .admin ? nil : Self.organiserID(principal), now: time)
        let cut = page.cut(try await store.runs(query, after: try Self.runKey(page.after), limit: page.fetchLimit), cursor: Self.cursor)
        return try json(.ok, RunList(runs: cut.rows.map { RunBody($0, entries: nil, now: time) }, next: cut.next))
    }

    /// The run with a page of its runners, in standing order, as its organiser sees them:
    /// check-ins, positions and, while the run is live, the heart rate of those who consented at
    /// enrolment, each read decided by the access policy and written to the runner's access log.
    /// Only the page's runners are read: a large field costs each refresh one page, not the race.
    /// The standing is computed from the entry's columns, so no index holds that order: the
    /// database ranks the run's runners (at most its cap) and hands over one page of them.
    func showRun(_ request: Request?, id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        let page = try request.map { try PageRequest($0, maxLimit: configuration.maxPageSize) } ?? PageRequest(limit: PageRequest.defaultLimit)
        let after = try page.after.map(RunStanding.init)
        let fetched = try await store.runEntries(runID: run.id, after: after, limit: page.fetchLimit)
        let first = (after?.rank ?? 0) + 1
        let cut = page.cut(Array(fetched.enumerated())) { RunStanding($1, rank: first + $0).cursor }
        let rank = Dictionary(cut.rows.map { ($1.deviceID, first + $0) }, uniquingKeysWith: min)
        let time = now
        let readable = readable(run, entries: cut.rows.map(\.element), principal: principal)
        var health: [String: RunnerHealth] = [:]
        if run.status(now: time) == .live {
            for (entry, grants) in readable where grants.contains(where: { $0.covers(.heartRate, at: time) }) {
                let from = max(run.startMilliseconds - RaceIngest.beforeStartMilliseconds, time - Self.healthFreshMilliseconds)
                if let newest = entry.newestHeartRate, (from...time).contains(newest.placedMilliseconds),
                    let bpm = try await store.heartRate(deviceID: entry.deviceID, sequence: newest.sequence)
                {
                    health[entry.deviceID] = RunnerHealth(heartRate: bpm, atMilliseconds: newest.placedMilliseconds)
                }
            }
        }
        for (entry, _) in readable {
            let what = health[entry.deviceID] == nil ? "position in the run \(run.name)" : "position and heart rate in the run \(run.name)"
            try await log(principal, deviceID: entry.deviceID, what: what)
        }
        let entries = readable.map { entry, _ in
            RunEntryBody(entry, rank: rank[entry.deviceID] ?? first, run: run, now: time, health: health[entry.deviceID])
        }
        var body = RunBody(run, entries: entries, now: time)
        body.runners = try await store.runnerCount(runID: run.id)
        body.next = cut.next
        return try json(.ok, body)
    }

    func setEnrolment(_ request: Request, id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        let body = try RequestBody.decode(EnrolmentRequest.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        if body.open, run.closedMilliseconds != nil {
            throw APIError(status: .conflict, code: .conflict, field: "open", message: "the run is closed: its enrolment cannot open again")
        }
        _ = try await store.setEnrolmentOpen(runID: id, open: body.open)
        guard let changed = try await store.run(id: id) else { throw APIError.notFound("no run \(id)") }
        return try json(.ok, RunBody(changed, entries: nil, now: now))
    }

    /// Takes a runner who did not check in off the run; their device's next report does not
    /// enter them again.
    func removeRunner(_ request: Request, id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        let body = try RequestBody.decode(RemovalRequest.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        switch try await store.removeRunEntry(runID: run.id, deviceID: body.deviceID, atMilliseconds: now) {
        case .notFound:
            throw APIError.notFound("no runner \(body.deviceID) in this run")
        case .checkedIn:
            throw APIError(
                status: .conflict,
                code: .conflict,
                field: "device_id",
                message: "this runner checked in: only runners who did not are removed"
            )
        case .removed:
            notifier.notify()
            return try json(.ok, RemovalRequest(deviceID: body.deviceID))
        }
    }

    /// Closes the run: enrolment shut, no more fixes counted, the public positions gone, and the
    /// final standings with each runner's time, distance and pace.
    func closeRun(id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        _ = try await store.closeRun(runID: run.id, atMilliseconds: now)
        notifier.notify()
        return try await showRun(nil, id: id, principal: principal)
    }

    func results(id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        let readable = readable(run, entries: try await store.runEntries(runID: run.id), principal: principal)
        for (entry, _) in readable { try await log(principal, deviceID: entry.deviceID, what: "result in the run \(run.name)") }
        let ranked = RaceStanding.ranked(readable.map(\.0))
        var csv = "rank,name,distance_m,checked_in_ms,last_fix_ms,finish_ms,elapsed_s,time_s,pace_s_per_km\n"
        for (index, entry) in ranked.enumerated() {
            let distance = entry.distanceMetres.map { String(format: "%.1f", $0) } ?? ""
            let elapsed = entry.finishElapsedSeconds(run).map { String(format: "%.1f", $0) } ?? ""
            let statistics = RunnerStatistics(entry, run: run)
            csv += "\(index + 1),\(Downloads.csvField(entry.name)),\(distance),\(entry.checkedInMilliseconds.map(String.init) ?? ""),"
            csv += "\(entry.fixMilliseconds.map(String.init) ?? ""),\(entry.finishMilliseconds.map(String.init) ?? ""),\(elapsed),"
            csv += "\(statistics.elapsedSeconds.map { String(format: "%.1f", $0) } ?? ""),"
            csv += "\(statistics.paceSecondsPerKilometre.map { String(format: "%.1f", $0) } ?? "")\n"
        }
        return download(csv, type: "text/csv; charset=utf-8", filename: "\(run.code)-results.csv")
    }

    func tracks(id: String, principal: Principal) async throws -> Response {
        let run = try await ownRun(id: id, principal: principal)
        var tracks: [GPXWriter.Track] = []
        for (entry, grants) in readable(run, entries: try await store.runEntries(runID: run.id), principal: principal) {
            var points: [(Int64, Double, Double)] = []
            var after: Int64 = 0
            while true {
                let page = try await store.readings(
                    ReadingQuery(
                        deviceID: entry.deviceID,
                        fromMilliseconds: run.startMilliseconds - RaceIngest.beforeStartMilliseconds,
                        toMilliseconds: run.finishedMilliseconds,
                        kind: .position,
                        afterSequence: after,
                        limit: 5000
                    )
                )
                for row in page where grants.contains(where: { $0.covers(.position, at: row.placedMilliseconds) }) {
                    if let reading = try? WireCodec.decodeReading(row.body), case .position(let fix) = reading.payload,
                        let latitude = fix.latitude, let longitude = fix.longitude
                    {
                        points.append((row.placedMilliseconds, latitude, longitude))
                    }
                }
                guard let last = page.last, page.count == 5000 else { break }
                after = last.sequence
            }
            try await log(principal, deviceID: entry.deviceID, what: "track in the run \(run.name)")
            tracks.append(GPXWriter.Track(name: entry.name, points: points.sorted { $0.0 < $1.0 }))
        }
        return download(GPXWriter.document(name: run.name, tracks: tracks), type: "application/gpx+xml", filename: "\(run.code)-tracks.gpx")
    }

    // MARK: - The public

    /// Runs by name or place, optionally of one status, a page at a time, newest start first.
    func publicList(_ request: Request) async throws -> Response {
        let parameters = request.uri.queryParameters
        let text = parameters.get("q")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        guard text.count <= 100 else { throw APIError.invalid("q", "at most 100 characters") }
        var status: Run.Status?
        if let wanted = parameters.get("status"), !wanted.isEmpty {
            guard let parsed = Run.Status(rawValue: wanted) else { throw APIError.invalid("status", "upcoming, live or finished") }
            status = parsed
        }
        let page = try PageRequest(request, maxLimit: configuration.maxPageSize)
        let time = now
        let query = RunListQuery(text: text.isEmpty ? nil : text, status: status, now: time)
        let cut = page.cut(try await store.runs(query, after: try Self.runKey(page.after), limit: page.fetchLimit), cursor: Self.cursor)
        var response = try json(.ok, PublicRunList(runs: cut.rows.map { PublicRunBody($0, now: time) }, next: cut.next))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The public page's data: consenting runners only, with no device id, nothing else.
    func spectatorData(id: String) async throws -> Response {
        var response = try json(.ok, try await spectatorView(id: id))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    func spectatorView(id: String) async throws -> SpectatorView {
        guard let run = try await store.run(id: id) else { throw APIError.notFound("no run \(id)") }
        return SpectatorView(run: run, entries: try await store.runEntries(runID: run.id), now: now)
    }

    /// The spectator page's live feed: a `standings` event whenever a runner moves (and with each
    /// keep-alive tick), then, once the run is finished, a last `finished` event without
    /// positions, and the stream ends.
    func spectatorStream(id: String) async throws -> Response {
        let first = try await spectatorView(id: id)
        let room = self
        return EventStream.response(notifier: notifier, retryMilliseconds: 2000, logger: logger, name: "spectator stream") { writer, wakes in
            var view = first
            var sent: [String]?
            var iterator = wakes.makeAsyncIterator()
            while !Task.isCancelled {
                if view.status == .finished {
                    try await writer.write(ByteBuffer(string: "event: finished\ndata: \(try Self.jsonText(view))\n\n"))
                    break
                }
                if sent != view.signature {
                    try await writer.write(ByteBuffer(string: "event: standings\ndata: \(try Self.jsonText(view))\n\n"))
                    sent = view.signature
                }
                guard let wake = await iterator.next() else { break }
                if case .tick = wake { sent = nil }
                view = try await room.spectatorView(id: id)
            }
        }
    }

    // MARK: - Helpers

    static func jsonText(_ value: some Encodable) throws -> String {
        String(decoding: try WireCodec.encode(value), as: UTF8.self)
    }

    /// A list of runs continues after its last run's start and id.
    static func cursor(_ run: Run) -> PageCursor { PageCursor(String(run.startMilliseconds), run.id) }

    static func runKey(_ cursor: PageCursor?) throws -> (startMilliseconds: Int64, id: String)? {
        try cursor.map { try $0.timeAndID() }.map { ($0.milliseconds, $0.id) }
    }

    /// Who owns a run: the organiser's account, or the token that created it.
    static func organiserID(_ principal: Principal) -> String { principal.accountID ?? principal.tokenID }

    /// The run, if the principal organises it (or is the admin).
    func ownRun(id: String, principal: Principal) async throws -> Run {
        guard let run = try await store.run(id: id), principal.role == .admin || run.organiserAccountID == Self.organiserID(principal) else {
            throw APIError.notFound("no run \(id)")
        }
        return run
    }

    /// The `entries` the access policy lets the principal read now (reason `joined_run`), each
    /// with its grants: positions for every runner, heart rate only for those who consented.
    func readable(_ run: Run, entries: [RunEntry], principal: Principal) -> [(RunEntry, [AccessPolicy.Grant])] {
        let policy = AccessPolicy()
        let time = now
        var asked = principal
        if asked.accountID == nil { asked.accountID = asked.tokenID }
        return entries.compactMap { entry in
            let subject = AccessPolicy.Subject(
                personID: entry.deviceID,
                deviceIDs: [entry.deviceID],
                runs: [
                    AccessPolicy.RunMembership(
                        organiserAccountID: run.organiserAccountID,
                        startMilliseconds: run.startMilliseconds - RaceIngest.beforeStartMilliseconds,
                        endMilliseconds: run.finishedMilliseconds + Self.resultsWindowMilliseconds,
                        kinds: entry.shareHealth ? [.position, .heartRate] : [.position]
                    )
                ]
            )
            let grants = policy.grants(asked, subject: subject, now: time)
            return grants.isEmpty ? nil : (entry, grants)
        }
    }

    /// Writes the read to the runner's access log (`device:ID`), once per reader, runner and
    /// kind of read within `accessLogSpanMilliseconds`; the administrator's reads too.
    func log(_ principal: Principal, deviceID: String, what: String) async throws {
        let time = now
        guard logged.admit(key: "\(principal.actor)|\(deviceID)|\(what)", now: time, span: Self.accessLogSpanMilliseconds) else { return }
        var name = PersonData.readerName(principal.role)
        if let accountID = principal.accountID, let accountName = try await store.accountName(id: accountID) { name = accountName }
        try await store.appendAccessLog(
            AccessLogEntry(
                id: 0,
                subject: "device:\(deviceID)",
                readerID: principal.actor,
                readerName: name,
                readerRole: principal.role.rawValue,
                reason: principal.role == .admin ? AccessPolicy.Reason.administrator.rawValue : AccessPolicy.Reason.joinedRun.rawValue,
                what: what,
                atMilliseconds: time
            )
        )
    }

    func download(_ text: String, type: String, filename: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentDisposition] = "attachment; filename=\"\(filename)\""
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    static func generateCode() -> String {
        let letters = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")
        var rng = SystemRandomNumberGenerator()
        return String((0..<8).map { _ in letters[Int.random(in: 0..<letters.count, using: &rng)] })
    }
}

/// When each (reader, runner, kind of read) was last written to the access log, so that a
/// page refreshing every few seconds leaves one line per span, not hundreds.
final class AccessLogSpans: Sendable {
    private let last = Mutex<[String: Int64]>([:])

    func admit(key: String, now: Int64, span: Int64) -> Bool {
        last.withLock { last in
            if let previous = last[key], now - previous < span, now >= previous { return false }
            if last.count > 100_000 { last = last.filter { now - $0.value < span } }
            last[key] = now
            return true
        }
    }
}
