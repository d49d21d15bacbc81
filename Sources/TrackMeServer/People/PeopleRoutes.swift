import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import TrackMeCore

/// Data4Help's API: a wearer's own data, third parties' access requests and reads, the access
/// log, and the anonymised group figures. Every read of a person's data goes through
/// `PersonData` (and so `AccessPolicy`); who may knock at each route is `PeopleRoom.access`.
struct PeopleRoutes: Sendable {
    let room: PeopleRoom

    var store: any PeopleRoomStore { room.store }
    var data: PersonData { room.data }
    var now: Int64 { room.now }

    func register(on doors: RouteAccess.Doors) {
        // The reads that cost pages of readings, or scans of the daily summaries, stop when
        // their client hangs up.
        let hangUps = HangUpWatch(metrics: room.services.metrics)
        doors.on(.post, "/v1/people/:id/devices") { request, context in try await link(request, id: try context.pathID("id")) }
        doors.on(.get, "/v1/people/:id") { _, context in try await profile(try context.signedIn(), id: try context.pathID("id")) }
        doors.on(.get, "/v1/people/:id/heart-rate") { request, context in
            try await hangUps.respond(to: request, context: context, route: .heartRate) { request in
                try await heartRate(request, try context.signedIn(), id: try context.pathID("id"))
            }
        }
        doors.on(.get, "/v1/people/:id/positions") { request, context in
            try await hangUps.respond(to: request, context: context, route: .positions) { request in
                try await positions(request, try context.signedIn(), id: try context.pathID("id"))
            }
        }
        doors.on(.get, "/v1/people/:id/statistics") { request, context in
            try await hangUps.respond(to: request, context: context, route: .statistics) { request in
                try await statistics(request, try context.signedIn(), id: try context.pathID("id"))
            }
        }
        doors.on(.get, "/v1/people/:id/alerts") { request, context in
            try await alerts(request, try context.signedIn(), id: try context.pathID("id"))
        }
        // A download's readings are read as its body is written, after the handler returned:
        // the body is what stops when the client goes.
        doors.on(.get, "/v1/people/:id/export") { request, context in
            hangUps.streaming(
                try await export(request, try context.signedIn(), id: try context.pathID("id")),
                to: request,
                context: context,
                route: .export
            )
        }
        doors.on(.get, "/v1/people/:id/track.gpx") { request, context in
            hangUps.streaming(
                try await export(request, try context.signedIn(), id: try context.pathID("id"), format: .gpx),
                to: request,
                context: context,
                route: .track
            )
        }
        doors.on(.get, "/v1/people/:id/stream") { request, context in
            try await stream(request, try context.signedIn(), id: try context.pathID("id"))
        }
        doors.on(.get, "/v1/people/:id/access-log") { request, context in
            try await accessLog(request, try context.signedIn(), id: try context.pathID("id"))
        }
        doors.on(.get, "/v1/people/:id/access-requests") { request, context in
            try await personRequests(request, try context.signedIn(), id: try context.pathID("id"))
        }
        doors.on(.post, "/v1/access-requests") { request, context in try await requestAccess(request, try context.signedIn()) }
        doors.on(.get, "/v1/access-requests") { request, context in try await organisationRequests(request, try context.signedIn()) }
        doors.on(.post, "/v1/access-requests/:id/approve") { _, context in
            try await answer(try context.signedIn(), id: try context.pathID("id"), approve: true)
        }
        doors.on(.post, "/v1/access-requests/:id/refuse") { _, context in
            try await answer(try context.signedIn(), id: try context.pathID("id"), approve: false)
        }
        doors.on(.post, "/v1/access-requests/:id/revoke") { _, context in try await revoke(try context.signedIn(), id: try context.pathID("id")) }
        doors.on(.post, "/v1/group-figures") { request, context in
            try await hangUps.respond(to: request, context: context, route: .groupFigures) { request in
                try await groupFigures(request, try context.signedIn())
            }
        }
    }

    /// An admin links a wearer account to an enrolled device.
    func link(_ request: Request, id: String) async throws -> Response {
        let body = try await room.services.body(LinkDeviceRequest.self, of: request)
        guard let account = try await store.account(id: id), account.role == .wearer else { throw APIError.notFound("no wearer account \(id)") }
        guard try await store.device(id: body.deviceID) != nil else { throw APIError.notFound("no device \(body.deviceID)") }
        switch try await store.linkDevice(accountID: account.id, deviceID: body.deviceID, atMilliseconds: now) {
        case .linked:
            return try json(.created, LinkDeviceResponse(personID: account.id, deviceID: body.deviceID, already: false))
        case .alreadyLinked:
            return try json(.ok, LinkDeviceResponse(personID: account.id, deviceID: body.deviceID, already: true))
        case .linkedToAnother:
            throw APIError(status: .conflict, code: .conflict, field: "device_id", message: "device \(body.deviceID) is another wearer's")
        }
    }

    // MARK: - A person's data

    func span(_ request: Request, defaultDays: Int64 = 1) throws -> (from: Int64, to: Int64) {
        let parameters = request.uri.queryParameters
        func integer(_ name: String) throws -> Int64? {
            guard let text = parameters.get(name), !text.isEmpty else { return nil }
            guard let value = Int64(text) else {
                throw APIError(status: .badRequest, code: .wrongType, field: name, message: "expected an integer (ms since 1970)")
            }
            return value
        }
        let to = try integer("to") ?? now + 1
        let from = try integer("from") ?? to - defaultDays * GroupFigures.dayMilliseconds
        guard from < to else { throw APIError.invalid("from", "must be before to") }
        return (from, to)
    }

    /// The person behind `id` and what the principal may read of them; 403 when nothing.
    func open(_ principal: Principal, id: String) async throws -> (PersonData.Person, [AccessPolicy.Grant]) {
        let person = try await data.person(id, principal: principal)
        return (person, try data.grants(principal, person))
    }

    func profile(_ principal: Principal, id: String) async throws -> Response {
        let (person, grants) = try await open(principal, id: id)
        try await data.log(principal, subject: "person:\(person.account.id)", grants: grants, what: "profile")
        // The person, an admin and the person's carers see the devices with the profile (the carer
        // needs them to set the care settings).
        let own = grants.contains { $0.reason == .ownData || $0.reason == .administrator || $0.reason == .carer }
        return try json(
            .ok,
            PersonProfileBody(
                personID: person.account.id,
                displayName: person.account.displayName,
                username: person.account.username,
                devices: own ? person.devices.map { PersonDevice(deviceID: $0.deviceID, person: $0.person) } : [],
                grants: grants.map(GrantBody.init),
                limits: own ? LimitsBody(data.limits(person)) : nil
            )
        )
    }

    static let viewLimit = 100_000

    /// Charges a download or statistic to the principal's reading budget before any reading is
    /// read (`ServerLimits.readingsPerPrincipal`): 429 with `Retry-After` past it.
    func charge(
        _ principal: Principal,
        _ person: PersonData.Person,
        kinds: [PersonDataKind],
        from: Int64,
        to: Int64,
        grants: [AccessPolicy.Grant]
    ) async throws {
        guard let budget = room.readingBudget else { return }
        try charge(
            try await data.readingCost(person, kinds: kinds, from: from, to: to, grants: grants, atMost: budget.countCeiling),
            to: principal,
            budget: budget
        )
    }

    func charge(_ cost: Int64, to principal: Principal, budget: ReadingBudget) throws {
        do {
            try budget.charge(cost, to: principal, now: now)
        } catch {
            room.services.metrics.rateLimited.increment()
            throw error
        }
    }

    /// A group query's charge to the principal's reading budget (`GroupFigureDesk.cost`): 429
    /// with `Retry-After` past it, counted with the other refusals. Nil when there is no budget.
    func groupBudget(_ principal: Principal) -> GroupFigureDesk.Budget? {
        guard let budget = room.readingBudget else { return nil }
        let metrics = room.services.metrics
        let clock = room.services.configuration.wallClock
        return GroupFigureDesk.Budget(ceiling: budget.countCeiling) { cost in
            do {
                try budget.charge(cost, to: principal, now: clock())
            } catch {
                metrics.rateLimited.increment()
                throw error
            }
        }
    }

    // A read of one kind needs a grant of that kind (403 otherwise), and only a read that returned
    // data goes into the person's access log.

    func heartRate(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let (person, all) = try await open(principal, id: id)
        let grants = try data.grants(all, covering: .heartRate)
        let (from, to) = try span(request)
        let (samples, truncated) = try await data.heartRate(person, from: from, to: to, grants: grants, limit: Self.viewLimit)
        if !samples.isEmpty {
            try await data.log(
                principal,
                subject: "person:\(person.account.id)",
                grants: grants,
                what: "heart_rate \(Downloads.iso(from)) to \(Downloads.iso(to))"
            )
        }
        return try json(
            .ok,
            HeartRateBody(personID: person.account.id, fromMilliseconds: from, toMilliseconds: to, heartRate: samples, truncated: truncated)
        )
    }

    func positions(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let (person, all) = try await open(principal, id: id)
        let grants = try data.grants(all, covering: .position)
        let (from, to) = try span(request)
        let (samples, truncated) = try await data.positions(person, from: from, to: to, grants: grants, limit: Self.viewLimit)
        if !samples.isEmpty {
            try await data.log(
                principal,
                subject: "person:\(person.account.id)",
                grants: grants,
                what: "position \(Downloads.iso(from)) to \(Downloads.iso(to))"
            )
        }
        return try json(
            .ok,
            PositionsBody(personID: person.account.id, fromMilliseconds: from, toMilliseconds: to, positions: samples, truncated: truncated)
        )
    }

    func statistics(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let (person, all) = try await open(principal, id: id)
        let grants = try data.grants(all, covering: .heartRate)
        let (from, to) = try span(request, defaultDays: 7)
        guard to - from <= 93 * GroupFigures.dayMilliseconds else { throw APIError.invalid("from", "at most 93 days of statistics at once") }
        // Whole past days from their kept summaries, the rest page by page: 93 days of 1 Hz
        // readings are read at most once, and never sit in memory at once. The request is
        // charged what it reads, not the days its summaries answer for.
        let plan = try await data.statisticsPlan(person, from: from, to: to, grants: grants)
        if let budget = room.readingBudget {
            try charge(try await data.readingCost(plan, atMost: budget.countCeiling), to: principal, budget: budget)
        }
        let figures = try await data.dayFigures(plan)
        room.services.metrics.statisticsDaysKept.increment(by: figures.keptDaysUsed)
        room.services.metrics.statisticsDaysSummarised.increment(by: figures.daysSummarised)
        let days = figures.days
        if !days.days.isEmpty {
            try await data.log(
                principal,
                subject: "person:\(person.account.id)",
                grants: grants,
                what: "statistics \(Downloads.iso(from)) to \(Downloads.iso(to))"
            )
        }
        return try json(
            .ok,
            StatisticsBody(personID: person.account.id, fromMilliseconds: from, toMilliseconds: to, days: days.days, truncated: false)
        )
    }

    func alerts(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let (person, all) = try await open(principal, id: id)
        let grants = try data.grants(all, covering: .alerts)
        let page = try PageRequest(request, maxLimit: room.services.configuration.maxPageSize)
        let (alerts, next) = try await data.alerts(person, grants: grants, page: page)
        if !alerts.isEmpty { try await data.log(principal, subject: "person:\(person.account.id)", grants: grants, what: "alerts") }
        return try json(.ok, PersonAlertList(personID: person.account.id, alerts: alerts, next: next))
    }

    /// The person's download, written as it is read (`PersonExport`). Like every read, it is
    /// logged only when it returns data: before the response when it holds alerts, otherwise
    /// before the first reading leaves (`PersonExport.readLog`); a download of an empty span
    /// leaves no row.
    func export(_ request: Request, _ principal: Principal, id: String, format: PersonExport.Format) async throws -> Response {
        let (person, allGrants) = try await open(principal, id: id)
        // A carer downloads only when the person allowed it (`CarerLink.mayExport`).
        let grants = allGrants.filter(\.export)
        guard !grants.isEmpty else { throw APIError.forbidden("the person has not allowed their carer to download their data") }
        let (from, to) = try span(request, defaultDays: 36_500)
        try await charge(principal, person, kinds: format == .gpx ? [.position] : [.heartRate, .position], from: from, to: to, grants: grants)
        let alerts = try await data.alerts(person, grants: grants).filter { $0.createdMilliseconds >= from && $0.createdMilliseconds < to }
        let what = format == .gpx ? "track gpx" : "export \(format.rawValue)"
        let data = self.data
        let subject = "person:\(person.account.id)"
        let readLog = PersonExport.ReadLog {
            try await data.log(principal, subject: subject, grants: grants, what: "\(what) \(Downloads.iso(from)) to \(Downloads.iso(to))")
        }
        // GPX carries positions only: alerts are not part of it.
        if format != .gpx, !alerts.isEmpty { try await readLog.mark() }
        return PersonExport(data: data, person: person, grants: grants, from: from, to: to, alerts: alerts, readLog: readLog).response(format)
    }

    func export(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let format = request.uri.queryParameters.get("format") ?? "json"
        guard format == "json" || format == "csv" else { throw APIError.invalid("format", "json or csv") }
        return try await export(request, principal, id: id, format: format == "csv" ? .csv : .json)
    }

    // MARK: - Subscribing to new data

    /// New readings of the person as SSE (`event: heart_rate` / `position`), from now on, while
    /// a grant covers them; the stream ends when access ends (revoked, expired, signed out).
    func stream(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let (person, grants) = try await open(principal, id: id)
        try await data.log(principal, subject: "person:\(person.account.id)", grants: grants, what: "subscribed to new data")
        var cursors: [String: Int64] = [:]
        for deviceID in person.deviceIDs { cursors[deviceID] = try await store.latestReadingSequence(deviceID: deviceID) }
        let startCursors = cursors
        let data = self.data
        let notifier = room.services.notifier
        let authenticator = room.services.authenticator
        let personID = person.account.id
        let logger = room.services.logger
        return EventStream.response(notifier: notifier, retryMilliseconds: 1000, logger: logger, name: "person stream") { writer, wakes in
            var cursors = startCursors
            var iterator = wakes.makeAsyncIterator()
            while !Task.isCancelled {
                // Access is decided again at every wake: a revocation or an expiry ends the stream.
                if principal.accountID != nil, (try? await authenticator.session(of: request)) == nil {
                    try await writer.write(ByteBuffer(string: "event: access_ended\ndata: {\"reason\":\"signed_out\"}\n\n"))
                    break
                }
                let person: PersonData.Person
                do {
                    person = try await data.person(personID, principal: principal)
                } catch {
                    try await writer.write(ByteBuffer(string: "event: access_ended\ndata: {\"reason\":\"\(error)\"}\n\n"))
                    break
                }
                let grants = data.policy.grants(principal, subject: person.subject, now: data.now)
                if grants.isEmpty {
                    try await writer.write(ByteBuffer(string: "event: access_ended\ndata: {}\n\n"))
                    break
                }
                var text = ""
                for deviceID in person.deviceIDs {
                    let after = cursors[deviceID] ?? 0
                    // The newest sequence is read before the rows: a batch stored while this
                    // looks is then either below it and in the rows, or above it and left for
                    // the next wake, never skipped.
                    let latest = try await data.store.latestReadingSequence(deviceID: deviceID)
                    guard latest > after else { continue }
                    var bound = latest
                    var rows: [StoredReadingRow] = []
                    for kind in [PersonDataKind.heartRate, .position] {
                        let page = try await data.readings(
                            deviceID: deviceID,
                            kind: kind,
                            from: nil,
                            to: nil,
                            grants: grants,
                            afterSequence: after,
                            limit: 10_000
                        )
                        let taken = page.rows.filter { $0.sequence <= latest }
                        if page.truncated, let last = taken.last { bound = min(bound, last.sequence) }
                        rows += taken
                    }
                    for row in rows.sorted(by: { $0.sequence < $1.sequence }) where row.sequence <= bound {
                        if let sample = PersonData.heartRate(row, deviceID: deviceID) {
                            text += "event: heart_rate\ndata: \(try StoreJSON.encode(sample))\n\n"
                        } else if let sample = PersonData.position(row, deviceID: deviceID) {
                            text += "event: position\ndata: \(try StoreJSON.encode(sample))\n\n"
                        }
                    }
                    // Readings outside every grant are skipped for good, not held back.
                    cursors[deviceID] = bound
                }
                if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
                guard let wake = await iterator.next() else { break }
                if case .tick = wake { try await writer.write(ByteBuffer(string: ": keep-alive\n\n")) }
            }
        }
    }

    // MARK: - Consent

    func accessLog(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        guard principal.role == .admin || principal.accountID == person.account.id else {
            throw APIError.forbidden("only the person sees their access log")
        }
        let subjects = ["person:\(person.account.id)"] + person.deviceIDs.map { "device:\($0)" }
        let page = try PageRequest(request, maxLimit: room.services.configuration.maxPageSize)
        let entries = try await store.accessLog(subjects: subjects, beforeID: try page.after?.integer(), limit: page.fetchLimit)
        let cut = page.cut(entries) { PageCursor(String($0.id)) }
        return try json(.ok, AccessLogBody(entries: cut.rows, next: cut.next))
    }

    func personRequests(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        guard principal.role == .admin || principal.accountID == person.account.id else {
            throw APIError.forbidden("only the person sees their requests")
        }
        let page = try PageRequest(request, maxLimit: room.services.configuration.maxPageSize)
        let before = try page.after.map { try $0.timeAndID() }.map { (requestedMilliseconds: $0.milliseconds, id: $0.id) }
        let cut = page.cut(try await store.accessRequests(personID: person.account.id, before: before, limit: page.fetchLimit), cursor: Self.cursor)
        return try json(.ok, AccessRequestList(requests: try await bodies(cut.rows), next: cut.next))
    }

    func organisationRequests(_ request: Request, _ principal: Principal) async throws -> Response {
        let page = try PageRequest(request, maxLimit: room.services.configuration.maxPageSize)
        let before = try page.after.map { try $0.timeAndID() }.map { (requestedMilliseconds: $0.milliseconds, id: $0.id) }
        let requests = try await store.accessRequests(organisationID: principal.accountID ?? "", before: before, limit: page.fetchLimit)
        let cut = page.cut(requests, cursor: Self.cursor)
        return try json(.ok, AccessRequestList(requests: try await bodies(cut.rows), next: cut.next))
    }

    /// Where a page of requests (newest first) stopped.
    static func cursor(_ request: AccessRequest) -> PageCursor {
        PageCursor(String(request.requestedMilliseconds), request.id)
    }

    func bodies(_ requests: [AccessRequest]) async throws -> [AccessRequestBody] {
        var names = [String: (String, String)]()
        var result: [AccessRequestBody] = []
        for request in requests {
            for id in [request.organisationID, request.personID] where names[id] == nil {
                let account = try await store.account(id: id)
                names[id] = (account?.displayName ?? id, account?.username ?? id)
            }
            result.append(
                AccessRequestBody(
                    request,
                    now: now,
                    organisationName: names[request.organisationID]?.0 ?? "",
                    personName: names[request.personID]?.0 ?? "",
                    personUsername: names[request.personID]?.1 ?? ""
                )
            )
        }
        return result
    }

    func requestAccess(_ request: Request, _ principal: Principal) async throws -> Response {
        let body = try await room.services.body(AccessRequestRequest.self, of: request)
        guard !body.kinds.isEmpty else { throw APIError.invalid("kinds", "name at least one of heart_rate, position, alerts") }
        guard (1...365).contains(body.days) else { throw APIError.invalid("days", "must be 1-365") }
        let purpose = body.purpose.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...500).contains(purpose.count) else { throw APIError.invalid("purpose", "must be 1-500 characters") }
        if let from = body.dataFromMilliseconds, from > now { throw APIError.invalid("data_from_ms", "must not be in the future") }
        guard let person = try await store.account(username: body.person), person.role == .wearer else {
            throw APIError.notFound("no person \(body.person)")
        }
        let access = AccessRequest(
            id: BearerToken.generate().id,
            organisationID: principal.accountID ?? "",
            personID: person.id,
            kinds: Set(body.kinds),
            days: body.days,
            dataFromMilliseconds: body.dataFromMilliseconds,
            purpose: purpose,
            status: .pending,
            requestedMilliseconds: now
        )
        try await store.insertAccessRequest(access)
        return try json(.created, try await bodies([access])[0])
    }

    /// The person approves or refuses a pending request (a request older than 3 days was refused by itself).
    func answer(_ principal: Principal, id: String, approve: Bool) async throws -> Response {
        guard let access = try await store.accessRequest(id: id), access.personID == principal.accountID else {
            throw APIError.notFound("no request \(id)")
        }
        let now = self.now
        guard access.effectiveStatus(now: now) == "pending" else {
            throw APIError(
                status: .conflict,
                code: .conflict,
                message: "the request is \(access.effectiveStatus(now: now)); it can no longer be answered"
            )
        }
        var answered = access
        answered.answeredMilliseconds = now
        if approve {
            answered.status = .approved
            answered.grantedFromMilliseconds = min(access.dataFromMilliseconds ?? now, now)
            answered.expiresMilliseconds = now + Int64(access.days) * GroupFigures.dayMilliseconds
        } else {
            answered.status = .refused
        }
        guard try await store.updateAccessRequest(answered, expected: .pending) else {
            throw APIError(status: .conflict, code: .conflict, message: "the request changed meanwhile")
        }
        return try json(.ok, try await bodies([answered])[0])
    }

    /// Either side ends an approved access (or the organisation withdraws a pending request).
    func revoke(_ principal: Principal, id: String) async throws -> Response {
        guard let access = try await store.accessRequest(id: id),
            access.personID == principal.accountID || access.organisationID == principal.accountID
        else { throw APIError.notFound("no request \(id)") }
        let now = self.now
        let status = access.effectiveStatus(now: now)
        guard status == "approved" || (status == "pending" && principal.role == .thirdParty) else {
            throw APIError(status: .conflict, code: .conflict, message: "the request is \(status); there is nothing to revoke")
        }
        var ended = access
        ended.status = access.status == .pending ? .refused : .revoked
        ended.endedMilliseconds = now
        ended.endedBy = principal.role == .wearer ? "person" : "organisation"
        guard try await store.updateAccessRequest(ended, expected: access.status) else {
            throw APIError(status: .conflict, code: .conflict, message: "the request changed meanwhile")
        }
        // Open streams look again at once and end.
        room.services.notifier.notify()
        return try json(.ok, try await bodies([ended])[0])
    }

    // MARK: - Group figures

    func groupFigures(_ request: Request, _ principal: Principal) async throws -> Response {
        let query = try await room.services.body(GroupFigures.Query.self, of: request)
        do {
            let desk = GroupFigureDesk(store: store, wallClock: room.services.configuration.wallClock, heavyWork: room.heavyWork)
            let answer = try await desk.answer(
                query,
                organisationID: principal.actor,
                budget: groupBudget(principal)
            )
            return try json(.ok, answer)
        } catch let refusal as GroupFigures.Refusal {
            switch refusal.code {
            case .invalid: throw APIError(status: .badRequest, code: .invalidValue, message: refusal.message)
            case .tooFewPeople, .differencing:
                throw APIError(status: .unprocessableContent, code: APIError.Code(rawValue: refusal.code.rawValue), message: refusal.message)
            }
        }
    }
}

extension HTTPField.Name {
    static let contentDisposition = HTTPField.Name("Content-Disposition") ?? .contentLocation
}

struct LinkDeviceRequest: Codable, Sendable {
    var deviceID: String
    enum CodingKeys: String, CodingKey { case deviceID = "device_id" }
}

struct LinkDeviceResponse: Codable, Sendable {
    var personID: String
    var deviceID: String
    var already: Bool
    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case deviceID = "device_id"
        case already
    }
}

struct PersonDevice: Codable, Sendable {
    var deviceID: String
    var person: PersonProfile
    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case person
    }
}

struct GrantBody: Codable, Sendable {
    var reason: String
    var fromMilliseconds: Int64?
    var untilMilliseconds: Int64?
    var kinds: [String]?

    init(_ grant: AccessPolicy.Grant) {
        reason = grant.reason.rawValue
        fromMilliseconds = grant.fromMilliseconds
        untilMilliseconds = grant.untilMilliseconds
        kinds = grant.kinds.map { $0.map(\.rawValue).sorted() }
    }

    enum CodingKeys: String, CodingKey {
        case reason
        case fromMilliseconds = "from_ms"
        case untilMilliseconds = "until_ms"
        case kinds
    }
}

struct LimitsBody: Codable, Sendable {
    var minimum: Int
    var maximum: Int
    init(_ limits: HeartRateLimits) {
        minimum = limits.minimum
        maximum = limits.maximum
    }
    enum CodingKeys: String, CodingKey {
        case minimum = "min"
        case maximum = "max"
    }
}

struct PersonProfileBody: Codable, Sendable {
    var personID: String
    var displayName: String
    var username: String
    var devices: [PersonDevice]
    var grants: [GrantBody]
    var limits: LimitsBody?

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case displayName = "display_name"
        case username, devices, grants, limits
    }
}

struct HeartRateBody: Codable, Sendable {
    var personID: String
    var fromMilliseconds: Int64
    var toMilliseconds: Int64
    var heartRate: [HeartRateSample]
    var truncated: Bool
    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case fromMilliseconds = "from_ms"
        case toMilliseconds = "to_ms"
        case heartRate = "heart_rate"
        case truncated
    }
}

struct PositionsBody: Codable, Sendable {
    var personID: String
    var fromMilliseconds: Int64
    var toMilliseconds: Int64
    var positions: [PositionSample]
    var truncated: Bool
    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case fromMilliseconds = "from_ms"
        case toMilliseconds = "to_ms"
        case positions, truncated
    }
}

struct StatisticsBody: Codable, Sendable {
    var personID: String
    var fromMilliseconds: Int64
    var toMilliseconds: Int64
    var days: [DailyStatistics]
    var truncated: Bool
    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case fromMilliseconds = "from_ms"
        case toMilliseconds = "to_ms"
        case days, truncated
    }
}

struct PersonAlertList: Codable, Sendable {
    var personID: String
    var alerts: [PersonAlert]
    /// The next (older) page (`after`); absent on the last page.
    var next: String?
    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case alerts
        case next
    }
}

struct AccessLogBody: Codable, Sendable {
    var entries: [AccessLogEntry]
    /// The next (older) page (`after`); absent on the last page.
    var next: String?
}

struct AccessRequestRequest: Codable, Sendable {
    /// The person's username.
    var person: String
    var kinds: [PersonDataKind]
    var days: Int
    var dataFromMilliseconds: Int64?
    var purpose: String

    enum CodingKeys: String, CodingKey {
        case person, kinds, days
        case dataFromMilliseconds = "data_from_ms"
        case purpose
    }
}

struct AccessRequestBody: Codable, Sendable {
    var id: String
    var organisationID: String
    var organisationName: String
    var personID: String
    var personName: String
    var personUsername: String
    var kinds: [String]
    var days: Int
    var dataFromMilliseconds: Int64?
    var purpose: String
    /// `pending`, `approved`, `refused`, `refused_unanswered`, `revoked`, `expired`.
    var status: String
    var requestedMilliseconds: Int64
    var answerByMilliseconds: Int64
    var answeredMilliseconds: Int64?
    var grantedFromMilliseconds: Int64?
    var expiresMilliseconds: Int64?
    var endedMilliseconds: Int64?
    var endedBy: String?

    init(_ r: AccessRequest, now: Int64, organisationName: String, personName: String, personUsername: String) {
        id = r.id
        organisationID = r.organisationID
        self.organisationName = organisationName
        personID = r.personID
        self.personName = personName
        self.personUsername = personUsername
        kinds = r.kinds.map(\.rawValue).sorted()
        days = r.days
        dataFromMilliseconds = r.dataFromMilliseconds
        purpose = r.purpose
        status = r.effectiveStatus(now: now)
        requestedMilliseconds = r.requestedMilliseconds
        answerByMilliseconds = r.requestedMilliseconds + AccessRequest.answerWithinMilliseconds
        answeredMilliseconds = r.answeredMilliseconds
        grantedFromMilliseconds = r.grantedFromMilliseconds
        expiresMilliseconds = r.expiresMilliseconds
        endedMilliseconds = r.endedMilliseconds
        endedBy = r.endedBy
    }

    enum CodingKeys: String, CodingKey {
        case id
        case organisationID = "organisation_id"
        case organisationName = "organisation_name"
        case personID = "person_id"
        case personName = "person_name"
        case personUsername = "person_username"
        case kinds, days
        case dataFromMilliseconds = "data_from_ms"
        case purpose, status
        case requestedMilliseconds = "requested_ms"
        case answerByMilliseconds = "answer_by_ms"
        case answeredMilliseconds = "answered_ms"
        case grantedFromMilliseconds = "granted_from_ms"
        case expiresMilliseconds = "expires_ms"
        case endedMilliseconds = "ended_ms"
        case endedBy = "ended_by"
    }
}

struct AccessRequestList: Codable, Sendable {
    var requests: [AccessRequestBody]
    /// The next (older) page (`after`); absent on the last page.
    var next: String?
}
