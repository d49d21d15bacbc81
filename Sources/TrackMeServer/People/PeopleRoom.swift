import Hummingbird
import TrackMeCore

/// Data4Help's room: a person's own data and who else reads it (`PeopleRoutes`), their carers
/// (`CarerRoutes`), their AutomatedSOS enrolment (`AutomatedSOSRoutes`), what leaves them less
/// protected (`ProtectionRoutes`), third parties' access requests and the anonymised group
/// figures, and the people's page.
///
/// Who may knock is declared once, in `access`; the room's doors are built from it, and a
/// handler takes the principal the door let in. What each principal then reads of a person is
/// `AccessPolicy`'s decision, through `PersonData` alone, and lands in the person's access log.
/// The room holds its `PeopleRoomStore` and nothing of the hall's.
struct PeopleRoom: Sendable {
    private static let people: Set<Role> = [.admin, .dispatcher, .wearer, .carer, .thirdParty]
    private static let personAndAdmin: Set<Role> = [.admin, .wearer]

    static let access: [String: RouteAccess.Requirement] = [
        // The page and its scripts.
        "GET /people": .open, "GET /assets/people.js": .open, "GET /assets/protection.js": .open,
        // An admin links a wearer account to a device.
        "POST /v1/people/{id}/devices": .roles([.admin]),
        // A person's data, for whoever the policy lets read it.
        "GET /v1/people/{id}": .personData(people), "GET /v1/people/{id}/heart-rate": .personData(people),
        "GET /v1/people/{id}/positions": .personData(people), "GET /v1/people/{id}/statistics": .personData(people),
        "GET /v1/people/{id}/alerts": .personData(people), "GET /v1/people/{id}/export": .personData(people),
        "GET /v1/people/{id}/track.gpx": .personData(people), "GET /v1/people/{id}/stream": .personData(people),
        // What only the person (or an admin) sees of their data: who read it, who asked.
        "GET /v1/people/{id}/access-log": .personData(personAndAdmin),
        "GET /v1/people/{id}/access-requests": .personData(personAndAdmin),
        // Carers.
        "GET /v1/people/{id}/carers": .personData(personAndAdmin), "POST /v1/people/{id}/carers": .personData(personAndAdmin),
        "DELETE /v1/people/{id}/carers/{carer}": .personData([.admin, .wearer, .carer]),
        "GET /v1/cared-for": .personData([.carer]),
        // The person's protection: AutomatedSOS, and what the device reports.
        "GET /v1/people/{id}/automated-sos": .personData([.admin, .wearer, .carer, .thirdParty]),
        "PUT /v1/people/{id}/automated-sos": .personData([.admin, .wearer, .thirdParty]),
        "GET /v1/people/{id}/protection": .personData([.admin, .wearer, .carer]),
        // Consent: an organisation asks, the person answers, either side ends it.
        "GET /v1/access-requests": .roles([.thirdParty]), "POST /v1/access-requests": .roles([.thirdParty]),
        "POST /v1/access-requests/{id}/approve": .personData([.wearer]),
        "POST /v1/access-requests/{id}/refuse": .personData([.wearer]),
        "POST /v1/access-requests/{id}/revoke": .personData([.wearer, .thirdParty]),
        // Group figures: counts over more than 1000 people, no person.
        "POST /v1/group-figures": .roles([.thirdParty, .admin]),
    ]

    let store: any PeopleRoomStore
    let services: RoomServices
    /// People's exports and statistics decode (and on SQLite read) on these threads at nice 10,
    /// so that the kernel gives an alert's handler the core first.
    let heavyWork: WorkPool
    /// What each principal's exports and statistics may read (`ServerLimits.readingsPerPrincipal`); nil for no limit.
    let readingBudget: ReadingBudget?

    var now: Int64 { services.configuration.wallClock() }
    var data: PersonData { PersonData(store: store, configuration: services.configuration, heavyWork: heavyWork) }

    /// The room's routes at their full paths, each behind the door `access` declares; `page`
    /// serves a page or script with the pages' shared headers.
    func routes(page: @escaping @Sendable (EmbeddedFile, Request) -> Response) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: services.authenticator)
        PeopleRoutes(room: self).register(on: doors)
        CarerRoutes(room: self).register(on: doors)
        AutomatedSOSRoutes(room: self).register(on: doors)
        ProtectionRoutes(room: self).register(on: doors)
        // A wearer's own data, their consents and who read what; an organisation's requests,
        // reads and group figures; a carer's people. Every value goes in with `textContent`.
        doors.on(.get, "/people") { request, _ in page(WebPages.people, request) }
        doors.on(.get, "/assets/people.js") { request, _ in page(WebPages.peopleScript, request) }
        doors.on(.get, "/assets/protection.js") { request, _ in page(WebPages.protectionScript, request) }
        return routes
    }
}

/// What the people's room reads and writes: accounts and their links to devices, consents,
/// carers, the access log, readings and day summaries, the person's alerts (for the policy's
/// spans and the person's list), care settings (the AutomatedSOS enrolment rides in them), the
/// device's last report, and the group summaries.
protocol PeopleRoomStore: PeopleStore, HeartRateDayStore, CareAccessStore, CareSettingsStore, Sendable {
    func account(id: String) async throws -> Account?
    func account(username: String) async throws -> Account?
    func device(id: String) async throws -> DeviceRow?
    func deviceRow(id: String) async throws -> DeviceStatusRow?
    func deviceContact(id: String) async throws -> (heartbeatJSON: String?, lastSeenMilliseconds: Int64?)
    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow]
    func readingCount(_ query: ReadingQuery) async throws -> Int
    func alertRow(id: String) async throws -> AlertDeskRow?
    func alertRows(deviceIDs: [String], before: (createdMilliseconds: Int64, alertID: String)?, limit: Int?) async throws -> [AlertDeskRow]
    func undispatchedAlerts(
        deviceIDs: [String],
        before: (raisedMilliseconds: Int64, alertID: String)?,
        limit: Int?
    ) async throws -> [UndispatchedAlert]
}
