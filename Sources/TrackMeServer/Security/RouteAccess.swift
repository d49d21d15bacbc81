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

    /// Each room's declaration, `METHOD /path/{param}` as the router describes its routes. A
    /// route declared by two rooms is a mistake the route-enumeration test catches.
    static let rooms: [[String: Requirement]] = [
        hall, IngestRoom.access, AlertsRoom.access, RunsRoom.access, FleetRoom.access, ContactsRoom.access,
        CareRoom.access, PeopleRoom.access, AccessRoom.access, PagesRoom.access,
    ]

    /// Every route's requirement.
    static let table: [String: Requirement] = rooms.reduce(into: [:]) { table, room in table.merge(room) { first, _ in first } }

    /// What the hall serves itself: its health, its counters and the API document.
    private static let hall: [String: Requirement] = [
        "GET /health": .open, "GET /openapi.yaml": .open,
        // Counts, no person: open to loopback peers, the admin token from elsewhere.
        "GET /metrics": .open,
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
