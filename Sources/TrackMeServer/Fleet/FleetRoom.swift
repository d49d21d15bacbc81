import Foundation
import HTTPTypes
import Hummingbird
import TrackMeCore

/// The taxi fleet (003), mounted at `/v1/fleet`: zones, the queue of available taxis per zone in
/// arrival order, taxis that missed two reports shown as silent, the booking API ("the first
/// available taxi in this zone"), and rides: booked by the fleet operator or a booking system,
/// offered to taxis by `RideDesk`, answered by the taxi terminals. Only this room holds a
/// `FleetStore`. Taxis report through device intake; a taxi hears of its ride in its batch
/// replies (`RideDesk.notice`).
struct FleetRoom: Sendable {
    static let path: RouterPath = "/v1/fleet"

    /// Who may enter each route, as `RouteAccess` holds the router to it.
    static let access: [String: RouteAccess.Requirement] = [
        "GET /v1/fleet": .personData([.fleetOperator]), "GET /v1/fleet/zones/{id}/next": .personData([.fleetOperator]),
        "POST /v1/fleet/zones": .roles([.fleetOperator]), "POST /v1/fleet/tokens": .roles([.admin]),
        "GET /v1/fleet/rides": .personData([.fleetOperator]), "POST /v1/fleet/rides": .roles([.fleetOperator]),
        "POST /v1/fleet/ride-answers": .device,
        "GET /fleet": .open, "GET /assets/fleet.js": .open,
    ]

    private let store: any FleetStore
    private let desk: RideDesk
    private let services: RoomServices
    private var configuration: ServerConfiguration { services.configuration }
    private var authenticator: Authenticator { services.authenticator }

    init(store: any FleetStore, desk: RideDesk, services: RoomServices) {
        self.store = store
        self.desk = desk
        self.services = services
    }

    /// The API, mounted at `path`.
    func routes() -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let desk = routes.group().add(middleware: FleetDoor(authenticator: authenticator, roles: [.fleetOperator, .admin]))
        desk.post("zones") { request, _ in try await createZone(request) }
        desk.get("") { _, _ in try await board() }
        desk.get("zones/:id/next") { _, context in try await next(zoneID: try context.pathID("id")) }
        desk.post("rides") { request, _ in try await book(request) }
        desk.get("rides") { request, _ in try await rides(request) }
        // A booking system's token is the admin's to hand out.
        routes.post("tokens") { request, _ in try await createToken(request) }
        let terminals = routes.group().add(middleware: FleetDoor(authenticator: authenticator, roles: [.device]))
        terminals.post("ride-answers") { request, context in try await answer(request, context: context) }
        return routes
    }

    /// The fleet page, mounted at the root; `page` serves a file with the pages' headers.
    func pages(_ page: @escaping @Sendable (EmbeddedFile, Request) -> Response) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        routes.get("fleet") { request, _ in page(WebPages.fleet, request) }
        routes.get("assets/fleet.js") { request, _ in page(WebPages.fleetScript, request) }
        return routes
    }

    func createZone(_ request: Request) async throws -> Response {
        let body = try RequestBody.decode(CreateZoneRequest.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        guard (1...100).contains(body.name.count) else { throw APIError.invalid("name", "must be 1-100 characters") }
        guard FleetZone.validPolygon(body.polygon) else {
            throw APIError.invalid("polygon", "3-1000 corners of [latitude -90...90, longitude -180...180]")
        }
        let zone = FleetZone(
            id: BearerToken.generate().id,
            name: body.name,
            polygon: body.polygon,
            createdMilliseconds: configuration.wallClock()
        )
        try await store.insertZone(zone)
        return try json(.created, ZoneBody(zone: zone, queue: [], taxis: []))
    }

    /// The board stays whole: it is the fleet as it is now, one row per taxi and zone the
    /// operator has, not a record that grows with rides or time, and its parts (each zone's
    /// queue in arrival order, the taxis outside every zone) are groupings no keyset can cut
    /// into pages. Rides, which do grow, page (`rides`).
    func board() async throws -> Response {
        try json(.ok, FleetBoard(zones: try await store.zones(), taxis: try await store.fleetTaxis(), now: configuration.wallClock()))
    }

    /// For a ride-booking system: the first taxi in the zone's queue, or 404 `no_taxi`.
    func next(zoneID: String) async throws -> Response {
        guard try await store.zones().contains(where: { $0.id == zoneID }) else { throw APIError.notFound("no zone \(zoneID)") }
        let now = configuration.wallClock()
        guard let first = FleetQueue.queue(zoneID: zoneID, taxis: try await store.fleetTaxis(), now: now).first else {
            throw APIError(status: .notFound, code: APIError.Code(rawValue: "no_taxi"), message: "no available taxi in zone \(zoneID)")
        }
        return try json(.ok, TaxiBody(first, now: now))
    }

    /// A bearer token of role `fleet_operator` for a ride-booking system (admin only).
    func createToken(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
        let token = BearerToken.generate()
        try await store.insertOperatorToken(
            StoredToken(id: token.id, secretHash: token.secretHash, role: .fleetOperator, deviceID: nil),
            createdMilliseconds: configuration.wallClock()
        )
        return try json(.created, FleetTokenBody(tokenID: token.id, token: token.text))
    }

    /// `POST /v1/fleet/rides`: a ride from a zone, now or reserved; offered to the first free
    /// taxi of the zone's queue when due (a reservation 10 minutes ahead of its time).
    func book(_ request: Request) async throws -> Response {
        let body = try RequestBody.decode(BookRideRequest.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        try Identifier.validate(body.zoneID, field: "zone_id")
        guard try await store.zones().contains(where: { $0.id == body.zoneID }) else {
            throw APIError.invalid("zone_id", "no zone \(body.zoneID)")
        }
        if let pickup = body.pickup, !(1...200).contains(pickup.count) { throw APIError.invalid("pickup", "must be 1-200 characters") }
        if let reserved = body.reservedMilliseconds {
            let now = configuration.wallClock()
            guard reserved > now, reserved - now <= Self.longestReservation else {
                throw APIError.invalid("reserved_ms", "must be in the future, at most 30 days ahead (server wall ms)")
            }
        }
        let ride = try await desk.book(zoneID: body.zoneID, pickup: body.pickup, reservedMilliseconds: body.reservedMilliseconds)
        return try json(.created, RideBody(ride, settings: await desk.settings))
    }

    static let longestReservation: Int64 = 30 * 86_400_000

    /// The rides, a page at a time, newest first.
    func rides(_ request: Request) async throws -> Response {
        let page = try PageRequest(request, maxLimit: configuration.maxPageSize)
        let after = try page.after.map { try $0.timeAndID() }.map { (createdMilliseconds: $0.milliseconds, id: $0.id) }
        let cut = page.cut(try await desk.rides(after: after, limit: page.fetchLimit)) { PageCursor(String($0.createdMilliseconds), $0.id) }
        let settings = await desk.settings
        return try json(.ok, RideList(rides: cut.rows.map { RideBody($0, settings: settings) }, next: cut.next))
    }

    /// `POST /v1/fleet/ride-answers`: a taxi terminal accepts or refuses its offer, or says the
    /// client is aboard, was taken there, or is missing. An answer about another taxi's offer,
    /// a lapsed or closed offer, or an event that does not fit the ride is refused (4xx) and
    /// changes nothing.
    func answer(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let principal = context.principal, principal.role == .device, let deviceID = principal.deviceID else {
            throw APIError.unauthorized()
        }
        let body = try RequestBody.decode(RideAnswer.self, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
        guard (1...100).contains(body.offerID.utf8.count) else { throw APIError.invalid("offer_id", "must be 1-100 characters") }
        do {
            let ride = try await desk.answer(body, deviceID: deviceID)
            return try json(.ok, RideAnswerBody(offerID: body.offerID, event: body.event, ride: RideBody(ride, settings: await desk.settings)))
        } catch let refusal as RideDispatch.Refusal {
            let status: HTTPResponse.Status
            switch refusal.code {
            case .noOffer: status = .notFound
            case .notYourOffer: status = .forbidden
            case .offerExpired, .offerClosed, .rideState: status = .conflict
            }
            throw APIError(status: status, code: APIError.Code(rawValue: refusal.code.rawValue), field: "offer_id", message: refusal.message)
        }
    }
}

/// The fleet room's door: a token or session of one of `roles`, whose principal goes into the
/// request context; 401 without credentials, 403 for another role.
struct FleetDoor: RouterMiddleware {
    typealias Context = ServerRequestContext
    let authenticator: Authenticator
    let roles: Set<Role>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.principal =
            roles == [.device]
            ? try await authenticator.authenticate(request.headers[.authorization], roles: roles)
            : try await authenticator.authenticate(request, roles: roles)
        return try await next(request, context)
    }
}

struct BookRideRequest: Codable, Sendable {
    var zoneID: String
    var pickup: String?
    var reservedMilliseconds: Int64?

    enum CodingKeys: String, CodingKey {
        case pickup
        case zoneID = "zone_id"
        case reservedMilliseconds = "reserved_ms"
    }
}

/// A ride as the fleet operator sees it.
struct RideBody: Codable, Sendable {
    var id: String
    var zoneID: String
    var pickup: String?
    var reservedMilliseconds: Int64?
    var createdMilliseconds: Int64
    /// When it is (or was) offered first: now, or 10 minutes before a reservation.
    var offerFromMilliseconds: Int64
    var state: Ride.State
    var deviceID: String?
    var offers: [RideOffer]
    var acceptedMilliseconds: Int64?
    var pickedUpMilliseconds: Int64?
    var endedMilliseconds: Int64?

    init(_ ride: Ride, settings: RideDispatch.Settings) {
        id = ride.id
        zoneID = ride.zoneID
        pickup = ride.pickup
        reservedMilliseconds = ride.reservedMilliseconds
        createdMilliseconds = ride.createdMilliseconds
        offerFromMilliseconds = RideDispatch(settings: settings).due(ride)
        state = ride.state
        deviceID = ride.deviceID
        offers = ride.offers
        acceptedMilliseconds = ride.acceptedMilliseconds
        pickedUpMilliseconds = ride.pickedUpMilliseconds
        endedMilliseconds = ride.endedMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case id, pickup, state, offers
        case zoneID = "zone_id"
        case reservedMilliseconds = "reserved_ms"
        case createdMilliseconds = "created_ms"
        case offerFromMilliseconds = "offer_from_ms"
        case deviceID = "device_id"
        case acceptedMilliseconds = "accepted_ms"
        case pickedUpMilliseconds = "picked_up_ms"
        case endedMilliseconds = "ended_ms"
    }
}

struct RideList: Codable, Sendable {
    var rides: [RideBody]
    var next: String?
}

struct RideAnswerBody: Codable, Sendable {
    var offerID: String
    var event: RideAnswer.Event
    var ride: RideBody

    enum CodingKeys: String, CodingKey {
        case event, ride
        case offerID = "offer_id"
    }
}

struct CreateZoneRequest: Codable, Sendable {
    var name: String
    /// `[[latitude, longitude], ...]`, at least 3 corners.
    var polygon: [[Double]]
}

struct FleetTokenBody: Codable, Sendable {
    var tokenID: String
    var token: String

    enum CodingKeys: String, CodingKey {
        case token
        case tokenID = "token_id"
    }
}

struct TaxiBody: Codable, Sendable {
    var deviceID: String
    var name: String
    var state: String
    var silent: Bool
    var zoneID: String?
    var queuedMilliseconds: Int64?
    var lastReportMilliseconds: Int64
    var latitude: Double?
    var longitude: Double?
    /// When the shown position was taken (between rides: the last drop-off's time, so its age).
    var fixMilliseconds: Int64?

    init(_ taxi: FleetTaxi, now: Int64) {
        deviceID = taxi.deviceID
        name = taxi.name
        state = taxi.state
        silent = FleetQueue.isSilent(taxi, now: now)
        zoneID = taxi.zoneID
        queuedMilliseconds = taxi.queuedMilliseconds
        lastReportMilliseconds = taxi.lastReportMilliseconds
        latitude = taxi.latitude
        longitude = taxi.longitude
        fixMilliseconds = taxi.fixMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case name, state, silent
        case fixMilliseconds = "fix_ms"
        case deviceID = "device_id"
        case zoneID = "zone_id"
        case queuedMilliseconds = "queued_ms"
        case lastReportMilliseconds = "last_report_ms"
        case latitude = "lat"
        case longitude = "lon"
    }
}

struct ZoneBody: Codable, Sendable {
    var id: String
    var name: String
    var polygon: [[Double]]
    /// Available taxis in arrival order (the first gets the next ride).
    var queue: [TaxiBody]
    /// Every taxi in the zone (any state, silent ones marked).
    var taxis: [TaxiBody]

    init(zone: FleetZone, queue: [TaxiBody], taxis: [TaxiBody]) {
        id = zone.id
        name = zone.name
        polygon = zone.polygon
        self.queue = queue
        self.taxis = taxis
    }
}

/// The fleet page's data: per zone its queue and taxis; taxis outside every zone apart.
struct FleetBoard: Codable, Sendable {
    var zones: [ZoneBody]
    var outside: [TaxiBody]

    init(zones: [FleetZone], taxis: [FleetTaxi], now: Int64) {
        self.zones = zones.map { zone in
            ZoneBody(
                zone: zone,
                queue: FleetQueue.queue(zoneID: zone.id, taxis: taxis, now: now).map { TaxiBody($0, now: now) },
                taxis: taxis.filter { $0.zoneID == zone.id }.map { TaxiBody($0, now: now) }
            )
        }
        outside = taxis.filter { taxi in taxi.zoneID == nil || !zones.contains { $0.id == taxi.zoneID } }.map { TaxiBody($0, now: now) }
    }
}
