import HTTPTypes
import Hummingbird

/// Who may enter each route, declared once for the whole router. The route-enumeration test
/// holds the router to this table: a route missing from it fails, and every route declared to
/// read a person's data is driven by principals the policy must turn away (a dispatcher with no
/// alert of the person, an organisation without consent, another wearer), whose answers must
/// hold nothing of the person.
enum RouteAccess {
    enum Requirement: Hashable, Sendable {
        /// Anyone: pages, assets, health, the API document, sign-in, registration, a contact's
        /// signed link, a runner's public entry they chose to show.
        case open
        /// A device token: what a device sends.
        case device
        /// These roles; nothing of a person is read.
        case roles(Set<Role>)
        /// These roles, and then `AccessPolicy` for each person whose data is read (and the
        /// access log for every reader but the person).
        case personData(Set<Role>)
    }

    private static let signedIn: Set<Role> = Set(Role.allCases).subtracting([.device])

    /// Each room's declaration, `METHOD /path/{param}` as the router describes its routes. A
    /// route declared by two rooms is a mistake the route-enumeration test catches.
    static let rooms: [[String: Requirement]] = [
        hall, IngestRoom.access, AlertsRoom.access, RunsRoom.access, FleetRoom.access, ContactsRoom.access,
        CareRoom.access, PeopleRoom.access,
    ]

    /// Every route's requirement.
    static let table: [String: Requirement] = rooms.reduce(into: [:]) { table, room in table.merge(room) { first, _ in first } }

    /// The routes the hall still serves itself, until each moves into a room of its own.
    private static let hall: [String: Requirement] = [
        // Pages, assets and plumbing.
        "GET /": .open,
        "GET /assets/trackme.css": .open, "GET /assets/console.js": .open,
        "GET /assets/leaflet/**": .open, "GET /health": .open, "GET /openapi.yaml": .open,
        // Counts, no person: open to loopback peers, the admin token from elsewhere.
        "GET /metrics": .open,
        "GET /v1/console/config": .open,
        // Sessions and accounts.
        "POST /v1/session": .open, "GET /v1/session": .roles(signedIn), "DELETE /v1/session": .roles(signedIn),
        "POST /v1/organisations": .open,
        // Accounts people manage themselves: a signed link, or the current password, is the credential.
        "GET /v1/sign-up": .open, "POST /v1/sign-up": .open, "POST /v1/sign-up/verify": .open,
        "POST /v1/password-reset": .open, "POST /v1/password-reset/confirm": .open, "POST /v1/session/password": .roles(signedIn),
        "GET /account/sign-up": .open, "GET /account/verify": .open, "GET /account/reset": .open, "GET /account/password": .open,
        "GET /assets/account.js": .open,
        "GET /v1/accounts": .roles([.admin]), "POST /v1/accounts": .roles([.admin]),
        "POST /v1/accounts/{id}/disable": .roles([.admin]), "POST /v1/accounts/{id}/enable": .roles([.admin]),
        "POST /v1/dispatchers": .roles([.admin]), "GET /v1/tokens": .roles([.admin]),
        "POST /v1/tokens/{id}/revoke": .roles([.admin]), "POST /v1/tokens/{id}/rotate": .roles([.admin, .device]),
        // Devices.
        "POST /v1/devices": .roles([.admin]),
    ]
}

extension RouteAccess {
    /// A room's routes, each added behind the door its declaration names: the roles' middleware
    /// (`RoleAuthentication`) for `.roles` and `.personData`, none for `.open`, and the
    /// administrator alone for a route the room forgot to declare (the route-enumeration test
    /// names it).
    struct Doors {
        let routes: RouteCollection<ServerRequestContext>
        /// Where the room's collection is mounted (`/v1`), for the declaration's full path; empty
        /// for a room at the root, whose paths are full already.
        let mountedAt: String
        let access: [String: Requirement]
        let authenticator: Authenticator

        typealias Handler = @Sendable (Request, ServerRequestContext) async throws -> Response

        func on(_ method: HTTPRequest.Method, _ path: String, use handler: @escaping Handler) {
            let full = (mountedAt.isEmpty ? path : "\(mountedAt)/\(path)").split(separator: "/", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            switch access["\(method) \(full)"] {
            case .open:
                routes.on(RouterPath(path), method: method, use: handler)
            case .roles(let roles), .personData(let roles):
                routes.group().add(middleware: RoleAuthentication(authenticator: authenticator, roles: roles))
                    .on(RouterPath(path), method: method, use: handler)
            case .device, nil:
                routes.group().add(middleware: RoleAuthentication(authenticator: authenticator, roles: [.admin]))
                    .on(RouterPath(path), method: method, use: handler)
            }
        }
    }
}
