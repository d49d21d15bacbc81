import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// Runs (Track4Run): organisers create a run from a GPX course, open enrolment, see
/// check-ins, follow the race and download results and tracks; spectators open a public page
/// per run without an account. Runners enrol from their device (the run code and consent ride
/// in its heartbeat, `RaceIngest`).
struct RaceRoutes: Sendable {
    let api: ServerAPI

    var store: any ServerStore { api.store }
    var authenticator: Authenticator { api.authenticator }
    var now: Int64 { api.configuration.wallClock() }

    /// After a run ends its organiser may still read its runners' tracks this long (results).
    static let resultsWindowMilliseconds: Int64 = 30 * 24 * 3600 * 1000

    func register(on router: Router<ServerRequestContext>) {
        router.post("/v1/runs") { request, _ in try await createRun(request) }
        router.get("/v1/runs") { request, _ in try await listRuns(request) }
        router.get("/v1/runs/:id") { request, context in try await showRun(request, id: try runID(context)) }
        router.post("/v1/runs/:id/enrolment") { request, context in try await setEnrolment(request, id: try runID(context)) }
        router.get("/v1/runs/:id/results.csv") { request, context in try await results(request, id: try runID(context)) }
        router.get("/v1/runs/:id/tracks.gpx") { request, context in try await tracks(request, id: try runID(context)) }
        router.get("/v1/public/runs/:id") { _, context in try await spectatorData(id: try runID(context)) }
        let console = ConsoleRoutes(api: api)
        router.get("/runs/:id") { request, _ in console.serve(WebPages.race, request) }
        router.get("/assets/race.js") { request, _ in console.serve(WebPages.raceScript, request) }
    }

    func runID(_ context: ServerRequestContext) throws -> String {
        try context.pathID("id")
    }

    func createRun(_ request: Request) async throws -> Response {
        let principal = try await authenticator.authenticate(request, roles: [.organiser, .admin])
        let body = try api.decode(CreateRunRequest.self, try await api.readBody(request))
        guard (1...100).contains(body.name.count) else { throw APIError.invalid("name", "must be 1-100 characters") }
        let end = body.endMilliseconds ?? body.startMilliseconds + 6 * 3600 * 1000
        guard end > body.startMilliseconds else { throw APIError.invalid("end_ms", "must be after start_ms") }
        let path: RunPath
        do {
            path = try RunPath.parseGPX(body.gpx)
        } catch {
            throw APIError.invalid("gpx", error.message)
        }
        if let distance = body.distanceMetres {
            guard distance.isFinite, (1...1_000_000).contains(distance) else { throw APIError.invalid("distance_m", "must be 1-1000000 metres") }
        }
        let code = body.code ?? Self.generateCode()
        guard RunParticipation.isValidCode(code) else { throw APIError.invalid("code", "4-32 of A-Z 0-9 -") }
        let run = Run(
            id: BearerToken.generate().id,
            code: code,
            name: body.name,
            organiserAccountID: principal.accountID ?? principal.tokenID,
            startMilliseconds: body.startMilliseconds,
            endMilliseconds: end,
            enrolmentOpen: false,
            path: path,
            createdMilliseconds: now,
            distanceMetres: body.distanceMetres
        )
        guard try await store.insertRun(run) else {
            throw APIError(status: .conflict, code: .conflict, field: "code", message: "run code \(code) is taken")
        }
        return try json(.created, RunBody(run, entries: []))
    }

    func listRuns(_ request: Request) async throws -> Response {
        let principal = try await authenticator.authenticate(request, roles: [.organiser, .admin])
        let runs = try await store.runs(organiserAccountID: principal.role == .admin ? nil : principal.accountID ?? principal.tokenID)
        return try json(.ok, RunList(runs: runs.map { RunBody($0, entries: nil) }))
    }

    /// The run with every runner as its organiser sees them: check-ins and live positions, for
    /// those the access policy lets them read (members of this run, during it and the results
    /// window after).
    func showRun(_ request: Request, id: String) async throws -> Response {
        let (run, principal) = try await ownRun(request, id: id)
        let ranked = RaceStanding.ranked(try await readable(run, principal: principal))
        let time = now
        return try json(.ok, RunBody(run, entries: ranked.enumerated().map { RunEntryBody($1, rank: $0 + 1, run: run, now: time) }))
    }

    func setEnrolment(_ request: Request, id: String) async throws -> Response {
        _ = try await ownRun(request, id: id)
        let body = try api.decode(EnrolmentRequest.self, try await api.readBody(request))
        _ = try await store.setEnrolmentOpen(runID: id, open: body.open)
        guard let run = try await store.run(id: id) else { throw APIError.notFound("no run \(id)") }
        return try json(.ok, RunBody(run, entries: nil))
    }

    func results(_ request: Request, id: String) async throws -> Response {
        let (run, principal) = try await ownRun(request, id: id)
        let ranked = RaceStanding.ranked(try await readable(run, principal: principal))
        var csv = "rank,name,distance_m,checked_in_ms,last_fix_ms,finish_ms,elapsed_s\n"
        for (index, entry) in ranked.enumerated() {
            let distance = entry.distanceMetres.map { String(format: "%.1f", $0) } ?? ""
            let elapsed = entry.finishElapsedSeconds(run).map { String(format: "%.1f", $0) } ?? ""
            csv += "\(index + 1),\(Downloads.csvField(entry.name)),\(distance),\(entry.checkedInMilliseconds.map(String.init) ?? ""),"
            csv += "\(entry.fixMilliseconds.map(String.init) ?? ""),\(entry.finishMilliseconds.map(String.init) ?? ""),\(elapsed)\n"
        }
        return download(csv, type: "text/csv; charset=utf-8", filename: "\(run.code)-results.csv")
    }

    func tracks(_ request: Request, id: String) async throws -> Response {
        let (run, principal) = try await ownRun(request, id: id)
        var tracks: [GPXWriter.Track] = []
        for entry in try await readable(run, principal: principal) {
            var points: [(Int64, Double, Double)] = []
            var after: Int64 = 0
            while true {
                let page = try await store.readings(
                    ReadingQuery(
                        deviceID: entry.deviceID,
                        fromMilliseconds: run.startMilliseconds - RaceIngest.beforeStartMilliseconds,
                        toMilliseconds: run.endMilliseconds,
                        kind: .position,
                        afterSequence: after,
                        limit: 5000
                    )
                )
                for row in page {
                    if let reading = try? WireCodec.decode(WireReading.self, from: Data(row.body.utf8)), case .position(let fix) = reading.payload,
                        let latitude = fix.latitude, let longitude = fix.longitude
                    {
                        points.append((row.placedMilliseconds, latitude, longitude))
                    }
                }
                guard let last = page.last, page.count == 5000 else { break }
                after = last.sequence
            }
            tracks.append(GPXWriter.Track(name: entry.name, points: points.sorted { $0.0 < $1.0 }))
        }
        return download(GPXWriter.document(name: run.name, tracks: tracks), type: "application/gpx+xml", filename: "\(run.code)-tracks.gpx")
    }

    /// The public page's data: consenting runners only, with no device id, nothing else.
    func spectatorData(id: String) async throws -> Response {
        guard let run = try await store.run(id: id) else { throw APIError.notFound("no run \(id)") }
        var response = try json(.ok, SpectatorView(run: run, entries: try await store.runEntries(runID: run.id), now: now))
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The run, if the principal organises it (or is the admin).
    func ownRun(_ request: Request, id: String) async throws -> (Run, Principal) {
        let principal = try await authenticator.authenticate(request, roles: [.organiser, .admin])
        guard let run = try await store.run(id: id),
            principal.role == .admin || run.organiserAccountID == (principal.accountID ?? principal.tokenID)
        else { throw APIError.notFound("no run \(id)") }
        return (run, principal)
    }

    /// The entries the access policy lets the principal read now (reason `joined_run`).
    func readable(_ run: Run, principal: Principal) async throws -> [RunEntry] {
        let policy = AccessPolicy()
        let time = now
        return try await store.runEntries(runID: run.id).filter { entry in
            let subject = AccessPolicy.Subject(
                personID: entry.deviceID,
                deviceIDs: [entry.deviceID],
                runs: [
                    AccessPolicy.RunMembership(
                        organiserAccountID: run.organiserAccountID,
                        startMilliseconds: run.startMilliseconds - RaceIngest.beforeStartMilliseconds,
                        endMilliseconds: run.endMilliseconds + Self.resultsWindowMilliseconds
                    )
                ]
            )
            var asked = principal
            if asked.accountID == nil { asked.accountID = asked.tokenID }
            return policy.decide(asked, subject: subject, now: time).isAllowed
        }
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

/// Standings: finishers first, by their finish (every runner starts with the gun, so the
/// earlier finish is the shorter elapsed time); then those still out, furthest first; ties by
/// the earlier fix.
enum RaceStanding {
    static func ranked(_ entries: [RunEntry]) -> [RunEntry] {
        entries.sorted { a, b in
            switch (a.finishMilliseconds, b.finishMilliseconds) {
            case (let fa?, let fb?) where fa != fb: return fa < fb
            case (.some, nil): return true
            case (nil, .some): return false
            default: break
            }
            let da = a.distanceMetres ?? -1
            let db = b.distanceMetres ?? -1
            if da != db { return da > db }
            return (a.fixMilliseconds ?? .max, a.deviceID) < (b.fixMilliseconds ?? .max, b.deviceID)
        }
    }
}

struct CreateRunRequest: Codable, Sendable {
    var name: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64?
    var code: String?
    /// The course as a GPX document (its `trkpt` or `rtept` points).
    var gpx: String
    /// The race distance, when it is not the course's length (laps of a loop, a virtual race).
    var distanceMetres: Double?

    enum CodingKeys: String, CodingKey {
        case name, code, gpx
        case distanceMetres = "distance_m"
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
    }
}

struct EnrolmentRequest: Codable, Sendable {
    var open: Bool
}

struct RunBody: Codable, Sendable {
    var id: String
    var code: String
    var name: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var enrolmentOpen: Bool
    var lengthMetres: Double
    /// The race distance: the course's length unless the organiser set another.
    var distanceMetres: Double
    var spectatorURL: String
    var entries: [RunEntryBody]?

    init(_ run: Run, entries: [RunEntryBody]?) {
        id = run.id
        code = run.code
        name = run.name
        startMilliseconds = run.startMilliseconds
        endMilliseconds = run.endMilliseconds
        enrolmentOpen = run.enrolmentOpen
        lengthMetres = run.path.length
        distanceMetres = run.raceDistanceMetres
        spectatorURL = "/runs/\(run.id)"
        self.entries = entries
    }

    enum CodingKeys: String, CodingKey {
        case id, code, name, entries
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
        case enrolmentOpen = "enrolment_open"
        case lengthMetres = "length_m"
        case distanceMetres = "distance_m"
        case spectatorURL = "spectator_url"
    }
}

struct RunList: Codable, Sendable {
    var runs: [RunBody]
}

/// A runner as their organiser sees them.
struct RunEntryBody: Codable, Sendable {
    var deviceID: String
    var name: String
    var showToSpectators: Bool
    var enrolledMilliseconds: Int64
    var checkedInMilliseconds: Int64?
    var latitude: Double?
    var longitude: Double?
    var fixMilliseconds: Int64?
    var distanceMetres: Double?
    var rank: Int
    var finishMilliseconds: Int64?
    var finishElapsedSeconds: Double?
    /// Seconds since the shown fix by the server's clock; nil before the first.
    var fixAgeSeconds: Double?
    /// No fix for longer than `RaceProgress.staleAfterMilliseconds`: where they were, not are.
    var stale: Bool

    init(_ entry: RunEntry, rank: Int, run: Run, now: Int64) {
        deviceID = entry.deviceID
        name = entry.name
        showToSpectators = entry.showToSpectators
        enrolledMilliseconds = entry.enrolledMilliseconds
        checkedInMilliseconds = entry.checkedInMilliseconds
        latitude = entry.latitude
        longitude = entry.longitude
        fixMilliseconds = entry.fixMilliseconds
        distanceMetres = entry.distanceMetres
        self.rank = rank
        finishMilliseconds = entry.finishMilliseconds
        finishElapsedSeconds = entry.finishElapsedSeconds(run)
        let age = RaceProgress.age(fixMilliseconds: entry.fixMilliseconds, now: now)
        fixAgeSeconds = age?.seconds
        stale = age?.stale ?? false
    }

    enum CodingKeys: String, CodingKey {
        case name
        case deviceID = "device_id"
        case showToSpectators = "show"
        case enrolledMilliseconds = "enrolled_ms"
        case checkedInMilliseconds = "checked_in_ms"
        case latitude = "lat"
        case longitude = "lon"
        case fixMilliseconds = "fix_ms"
        case distanceMetres = "distance_m"
        case rank, stale
        case finishMilliseconds = "finish_ms"
        case finishElapsedSeconds = "finish_elapsed_s"
        case fixAgeSeconds = "fix_age_s"
    }

    /// Nulls written out: a runner not yet finished has `finish_ms: null`, not no field.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(name, forKey: .name)
        try c.encode(showToSpectators, forKey: .showToSpectators)
        try c.encode(enrolledMilliseconds, forKey: .enrolledMilliseconds)
        try c.encode(checkedInMilliseconds, forKey: .checkedInMilliseconds)
        try c.encode(latitude, forKey: .latitude)
        try c.encode(longitude, forKey: .longitude)
        try c.encode(fixMilliseconds, forKey: .fixMilliseconds)
        try c.encode(distanceMetres, forKey: .distanceMetres)
        try c.encode(rank, forKey: .rank)
        try c.encode(finishMilliseconds, forKey: .finishMilliseconds)
        try c.encode(finishElapsedSeconds, forKey: .finishElapsedSeconds)
        try c.encode(fixAgeSeconds, forKey: .fixAgeSeconds)
        try c.encode(stale, forKey: .stale)
    }
}

/// The public spectator page's data: the course and the consenting runners with a position,
/// furthest first. No device id, no consent flag, no one who did not consent.
struct SpectatorView: Codable, Sendable {
    struct Runner: Codable, Sendable {
        /// Stable per run and runner, and says nothing about the device.
        var id: String
        var name: String
        var latitude: Double
        var longitude: Double
        var distanceMetres: Double
        var fixMilliseconds: Int64
        var rank: Int
        var finishMilliseconds: Int64?
        var finishElapsedSeconds: Double?
        var fixAgeSeconds: Double
        /// No fix for longer than `RaceProgress.staleAfterMilliseconds`: the dot is where they
        /// were, not where they are.
        var stale: Bool

        enum CodingKeys: String, CodingKey {
            case id, name, rank, stale
            case latitude = "lat"
            case longitude = "lon"
            case distanceMetres = "distance_m"
            case fixMilliseconds = "fix_ms"
            case finishMilliseconds = "finish_ms"
            case finishElapsedSeconds = "finish_elapsed_s"
            case fixAgeSeconds = "fix_age_s"
        }

        /// Nulls written out: a runner not yet finished has `finish_ms: null`, not no field.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(latitude, forKey: .latitude)
            try c.encode(longitude, forKey: .longitude)
            try c.encode(distanceMetres, forKey: .distanceMetres)
            try c.encode(fixMilliseconds, forKey: .fixMilliseconds)
            try c.encode(rank, forKey: .rank)
            try c.encode(finishMilliseconds, forKey: .finishMilliseconds)
            try c.encode(finishElapsedSeconds, forKey: .finishElapsedSeconds)
            try c.encode(fixAgeSeconds, forKey: .fixAgeSeconds)
            try c.encode(stale, forKey: .stale)
        }
    }

    var name: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var lengthMetres: Double
    /// The race distance (a runner finishes when their counted distance reaches it).
    var distanceMetres: Double
    var path: [[Double]]
    var runners: [Runner]
    /// The leader's `id`, or nil before anyone has a position.
    var leader: String?

    init(run: Run, entries: [RunEntry], now: Int64) {
        name = run.name
        startMilliseconds = run.startMilliseconds
        endMilliseconds = run.endMilliseconds
        lengthMetres = run.path.length
        distanceMetres = run.raceDistanceMetres
        path = run.path.points
        // Ranked among the runners shown only: a gap in the ranks would tell of someone who
        // did not consent.
        let shown = RaceStanding.ranked(
            entries.filter { $0.showToSpectators && $0.latitude != nil && $0.longitude != nil && $0.fixMilliseconds != nil }
        )
        runners = shown.enumerated().compactMap { index, entry in
            guard let latitude = entry.latitude, let longitude = entry.longitude, let fix = entry.fixMilliseconds,
                let age = RaceProgress.age(fixMilliseconds: fix, now: now)
            else { return nil }
            return Runner(
                id: String(ServerDigest.sha256Hex(run.id + ":" + entry.deviceID).prefix(12)),
                name: entry.name,
                latitude: latitude,
                longitude: longitude,
                distanceMetres: ((entry.distanceMetres ?? 0) * 10).rounded() / 10,
                fixMilliseconds: fix,
                rank: index + 1,
                finishMilliseconds: entry.finishMilliseconds,
                finishElapsedSeconds: entry.finishElapsedSeconds(run),
                fixAgeSeconds: age.seconds,
                stale: age.stale
            )
        }
        leader = runners.first?.id
    }

    enum CodingKeys: String, CodingKey {
        case name, path, runners, leader
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
        case lengthMetres = "length_m"
        case distanceMetres = "distance_m"
    }
}
