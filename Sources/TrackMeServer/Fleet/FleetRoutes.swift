import Foundation
import HTTPTypes
import Hummingbird
import TrackMeCore

/// The taxi fleet (003): zones, the queue of available taxis per zone in arrival
/// order, taxis that missed two reports shown as silent, the fleet page, and the ride-booking
/// API ("the first available taxi in this zone"). Taxis report through the device ingest path
/// (`RaceIngest`).
struct FleetRoutes: Sendable {
    let api: ServerAPI

    var store: any ServerStore { api.store }
    var authenticator: Authenticator { api.authenticator }

    func register(on router: Router<ServerRequestContext>) {
        router.post("/v1/fleet/zones") { request, _ in try await createZone(request) }
        router.get("/v1/fleet") { request, _ in try await board(request) }
        router.get("/v1/fleet/zones/:id/next") { request, context in
            try await next(request, zoneID: try context.pathID("id"))
        }
        router.post("/v1/fleet/tokens") { request, _ in try await createToken(request) }
        let console = ConsoleRoutes(api: api)
        router.get("/fleet") { request, _ in console.serve(WebPages.fleet, request) }
        router.get("/assets/fleet.js") { request, _ in console.serve(WebPages.fleetScript, request) }
    }

    func createZone(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request, roles: [.fleetOperator, .admin])
        let body = try api.decode(CreateZoneRequest.self, try await api.readBody(request))
        guard (1...100).contains(body.name.count) else { throw APIError.invalid("name", "must be 1-100 characters") }
        guard FleetZone.validPolygon(body.polygon) else {
            throw APIError.invalid("polygon", "3-1000 corners of [latitude -90...90, longitude -180...180]")
        }
        let zone = FleetZone(
            id: BearerToken.generate().id,
            name: body.name,
            polygon: body.polygon,
            createdMilliseconds: api.configuration.wallClock()
        )
        try await store.insertZone(zone)
        return try json(.created, ZoneBody(zone: zone, queue: [], taxis: []))
    }

    func board(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request, roles: [.fleetOperator, .admin])
        return try json(.ok, FleetBoard(zones: try await store.zones(), taxis: try await store.fleetTaxis(), now: api.configuration.wallClock()))
    }

    /// For a ride-booking system: the first taxi in the zone's queue, or 404 `no_taxi`.
    func next(_ request: Request, zoneID: String) async throws -> Response {
        _ = try await authenticator.authenticate(request, roles: [.fleetOperator, .admin])
        guard try await store.zones().contains(where: { $0.id == zoneID }) else { throw APIError.notFound("no zone \(zoneID)") }
        let now = api.configuration.wallClock()
        guard let first = FleetQueue.queue(zoneID: zoneID, taxis: try await store.fleetTaxis(), now: now).first else {
            throw APIError(status: .notFound, code: APIError.Code(rawValue: "no_taxi"), message: "no available taxi in zone \(zoneID)")
        }
        return try json(.ok, TaxiBody(first, now: now))
    }

    /// A bearer token of role `fleet_operator` for a ride-booking system (admin only).
    func createToken(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
        let token = BearerToken.generate()
        try await store.insertToken(
            StoredToken(id: token.id, secretHash: token.secretHash, role: .fleetOperator, deviceID: nil),
            createdMilliseconds: api.configuration.wallClock()
        )
        return try json(.created, FleetTokenBody(tokenID: token.id, token: token.text))
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
    }

    enum CodingKeys: String, CodingKey {
        case name, state, silent
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
