import Foundation
import Hummingbird
import Logging
import TrackMeCore

/// Carers: a person names the accounts that look after them.
///
/// - `GET /v1/people/{id}/carers`: the person's carers (the person, an admin).
/// - `POST /v1/people/{id}/carers` `{carer: USERNAME, may_export: false}`: the person links a
///   `carer` account by its username (an admin may, on the person's behalf); again for the same
///   carer changes `may_export`.
/// - `DELETE /v1/people/{id}/carers/{carer_id}`: the person ends the link at any time (an
///   admin may); the carer may step down (`{carer_id}` their own id or `me`).
/// - `GET /v1/cared-for`: the people a signed-in carer cares for, with their devices.
///
/// A linked carer reads and sets the person's care settings (`CareAccess`), reads their data
/// (`AccessPolicy`, reason `carer`), downloads it only with `may_export`, and never erases it.
/// Every read and change of theirs is in the person's access log.
struct CarerRoutes: Sendable {
    let room: PeopleRoom

    var store: any PeopleRoomStore { room.store }
    var data: PersonData { room.data }

    func register(on doors: RouteAccess.Doors) {
        doors.on(.get, "/v1/people/:id/carers") { _, context in try await list(try context.signedIn(), id: try context.pathID("id")) }
        doors.on(.post, "/v1/people/:id/carers") { request, context in
            try await link(request, try context.signedIn(), id: try context.pathID("id"))
        }
        doors.on(.delete, "/v1/people/:id/carers/:carer") { _, context in
            try await unlink(try context.signedIn(), id: try context.pathID("id"), carer: try context.pathID("carer"))
        }
        doors.on(.get, "/v1/cared-for") { _, context in try await caredFor(try context.signedIn()) }
    }

    /// The person behind `id` when the principal is that person or an admin; 403 otherwise.
    func ownPerson(_ principal: Principal, id: String) async throws -> PersonData.Person {
        let person = try await data.person(id, principal: principal)
        guard principal.role == .admin || principal.accountID == person.account.id else {
            throw APIError.forbidden("only the person (or an admin) manages their carers")
        }
        return person
    }

    /// One page, unpaged: a person names a handful of carers, not a number that grows with the
    /// people, devices or events on the server.
    func list(_ principal: Principal, id: String) async throws -> Response {
        let person = try await ownPerson(principal, id: id)
        return try json(.ok, CarerList(carers: try await bodies(try await store.carerLinks(personID: person.account.id))))
    }

    func link(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let person = try await ownPerson(principal, id: id)
        let body = try await room.services.body(LinkCarerRequest.self, of: request)
        guard Account.isValidUsername(body.carer) else { throw APIError.invalid("carer", "a username: 1-64 characters of A-Z a-z 0-9 . _ - @") }
        guard let carer = try await store.account(username: body.carer), carer.role == .carer, !carer.disabled else {
            throw APIError.notFound("no carer account \(body.carer) (an admin creates carer accounts)")
        }
        let link = CarerLink(
            personID: person.account.id,
            carerID: carer.id,
            mayExport: body.mayExport ?? false,
            grantedMilliseconds: room.services.configuration.wallClock(),
            grantedBy: principal.role == .admin ? "admin" : "person"
        )
        let outcome = try await store.linkCarer(link)
        if principal.role == .admin {
            try await data.log(
                principal,
                subject: "person:\(person.account.id)",
                reason: AccessPolicy.Reason.administrator.rawValue,
                what: "linked carer \(carer.username)\(link.mayExport ? " with downloads" : "")"
            )
        }
        room.services.logger.notice("carer linked", metadata: ["server.by": "\(principal.actor)", "server.carer": "\(carer.id)"])
        let stored = try await store.carerLinks(personID: person.account.id).filter { $0.carerID == carer.id }
        return try json(outcome == .linked ? .created : .ok, try await bodies(stored).first ?? CarerBody(link, account: carer))
    }

    func unlink(_ principal: Principal, id: String, carer: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        let carerID = carer == "me" ? (principal.accountID ?? "") : carer
        let allowed =
            principal.role == .admin || principal.accountID == person.account.id || (principal.role == .carer && principal.accountID == carerID)
        guard allowed else { throw APIError.forbidden("only the person, an admin or the carer themself ends a carer link") }
        guard try await store.unlinkCarer(personID: person.account.id, carerID: carerID) else {
            throw APIError.notFound("no such carer of this person")
        }
        if principal.role == .admin {
            try await data.log(
                principal,
                subject: "person:\(person.account.id)",
                reason: AccessPolicy.Reason.administrator.rawValue,
                what: "ended a carer link"
            )
        }
        // Open streams of the carer look again at once and end.
        room.services.notifier.notify()
        return try json(.ok, UnlinkCarerAnswer(personID: person.account.id, carerID: carerID, unlinked: true))
    }

    /// One page, unpaged: a carer looks after a few people, each of whom named them.
    func caredFor(_ principal: Principal) async throws -> Response {
        var people: [CaredForBody] = []
        for link in try await store.carerLinks(carerID: principal.accountID ?? "") {
            guard let account = try await store.account(id: link.personID) else { continue }
            people.append(CaredForBody(link, account: account, devices: try await store.linkedDevices(accountID: account.id)))
        }
        return try json(.ok, CaredForList(people: people))
    }

    func bodies(_ links: [CarerLink]) async throws -> [CarerBody] {
        var result: [CarerBody] = []
        for link in links {
            guard let account = try await store.account(id: link.carerID) else { continue }
            result.append(CarerBody(link, account: account))
        }
        return result
    }
}

struct LinkCarerRequest: Codable, Sendable {
    /// The carer's username.
    var carer: String
    var mayExport: Bool?

    enum CodingKeys: String, CodingKey {
        case carer
        case mayExport = "may_export"
    }
}

struct CarerBody: Codable, Sendable {
    var carerID: String
    var username: String
    var displayName: String
    var mayExport: Bool
    var grantedMilliseconds: Int64
    var grantedBy: String

    init(_ link: CarerLink, account: Account) {
        carerID = link.carerID
        username = account.username
        displayName = account.displayName
        mayExport = link.mayExport
        grantedMilliseconds = link.grantedMilliseconds
        grantedBy = link.grantedBy
    }

    enum CodingKeys: String, CodingKey {
        case carerID = "carer_id"
        case username
        case displayName = "display_name"
        case mayExport = "may_export"
        case grantedMilliseconds = "granted_ms"
        case grantedBy = "granted_by"
    }
}

struct CarerList: Codable, Sendable {
    var carers: [CarerBody]
}

struct UnlinkCarerAnswer: Codable, Sendable {
    var personID: String
    var carerID: String
    var unlinked: Bool

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case carerID = "carer_id"
        case unlinked
    }
}

struct CaredForBody: Codable, Sendable {
    var personID: String
    var username: String
    var displayName: String
    var mayExport: Bool
    var grantedMilliseconds: Int64
    var devices: [String]

    init(_ link: CarerLink, account: Account, devices: [String]) {
        personID = link.personID
        username = account.username
        displayName = account.displayName
        mayExport = link.mayExport
        grantedMilliseconds = link.grantedMilliseconds
        self.devices = devices
    }

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case username
        case displayName = "display_name"
        case mayExport = "may_export"
        case grantedMilliseconds = "granted_ms"
        case devices
    }
}

struct CaredForList: Codable, Sendable {
    var people: [CaredForBody]
}
