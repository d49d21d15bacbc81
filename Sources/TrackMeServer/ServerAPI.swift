import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// The HTTP API (openapi.yaml): request parsing, authorisation, and the mapping of store
/// results to answers. Storage behaviour lives behind `ServerStore`; device intake
/// (`IngestRoom`), the dispatcher's desk and feed (`AlertsRoom`), people's data (`PeopleRoom`),
/// care settings, contacts, runs and the fleet are rooms of their own, mounted here, each
/// holding only its own store.
struct ServerAPI: Sendable {
    let store: any ServerStore
    let configuration: ServerConfiguration
    let authenticator: Authenticator
    let notifier: FeedNotifier
    let metrics: ServerMetrics
    let passwords: PasswordHasher
    let signInGuard: SignInGuard
    /// People's exports and statistics: `ServerLimits.heavyRequests` at once, one per principal.
    let heavyRequests: HeavyRequestGate
    let logger: Logger
    /// Device intake: a room with a store of its own, mounted at `IngestRoom.path`.
    let ingest: IngestRoom
    /// The dispatcher's desk and feed: a room with a store of its own, mounted at `AlertsRoom.path`.
    let alerts: AlertsRoom
    /// Runs (Track4Run): a room with a store of its own, its routes at their full paths.
    let runs: RunsRoom
    /// The taxi fleet and its rides: a room with a store of its own, mounted at `FleetRoom.path`.
    let fleet: FleetRoom
    /// The emergency contacts' links and pages: a room with a store of its own, at full paths.
    let contacts: ContactsRoom
    /// A person's care settings and erasure: a room with a store of its own, at full paths.
    let care: CareRoom
    /// Data4Help: a person's data, consents, carers and group figures, and the people's page; a
    /// room with a store of its own, at full paths.
    let people: PeopleRoom
    var databaseHealth = DatabaseHealth()

    func makeRouter() -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: ErrorBodyMiddleware(metrics: metrics, databaseHealth: databaseHealth))
        router.add(middleware: RateLimitMiddleware(limits: configuration.limits, metrics: metrics, wallClock: configuration.wallClock))
        router.add(middleware: HeavyRequestMiddleware(gate: heavyRequests, metrics: metrics))
        router.get("/health") { _, _ in try await healthResponse() }
        router.get("/metrics") { request, context in
            try await authorizeMetrics(request, context: context)
            return try await metricsResponse()
        }
        router.get("/openapi.yaml") { request, _ in APIDocument.response(ifNoneMatch: request.headers[.ifNoneMatch]) }
        router.post("/v1/devices") { request, _ in try await enrolDevice(request) }
        router.post("/v1/dispatchers") { request, _ in try await createDispatcher(request) }
        router.addRoutes(ingest.routes(), atPath: IngestRoom.path)
        router.addRoutes(alerts.routes(), atPath: AlertsRoom.path)
        AccountRoutes(api: self).register(on: router)
        ConsoleRoutes(api: self).register(on: router)
        TokenRoutes(api: self).register(on: router)
        router.addRoutes(care.routes())
        let pages = ConsoleRoutes(api: self)
        router.addRoutes(people.routes { file, request in pages.serve(file, request) })
        router.addRoutes(runs.routes { file, request in pages.serve(file, request) })
        router.addRoutes(fleet.routes(), atPath: FleetRoom.path)
        router.addRoutes(fleet.pages(pages.serve))
        router.addRoutes(contacts.routes { file, request in pages.serve(file, request) })
        return router
    }

    // MARK: - Admin

    func enrolDevice(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
        let body = try await readBody(request)
        let enrolment = try decode(EnrolDeviceRequest.self, body)
        let credentials = try await ServerAdministration(store: store, wallClock: configuration.wallClock)
            .enrolDevice(deviceID: enrolment.deviceID, person: enrolment.person)
        return try json(.created, credentials)
    }

    func createDispatcher(_ request: Request) async throws -> Response {
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
        let body = try await readBody(request)
        let request = body.isEmpty ? CreateDispatcherRequest() : try decode(CreateDispatcherRequest.self, body)
        if let days = request.expiresInDays, !(1...3650).contains(days) { throw APIError.invalid("expires_in_days", "must be 1-3650") }
        let credentials = try await ServerAdministration(
            store: store,
            wallClock: configuration.wallClock,
            dispatcherTokenLifetime: configuration.dispatcherTokenLifetime
        ).createDispatcher(name: request.name, lifetime: request.expiresInDays.map { .seconds($0 * 24 * 3600) })
        return try json(.created, credentials)
    }

    // MARK: - Plumbing

    func metricsResponse() async throws -> Response {
        // Bounded like /health: a database that went away must not hold the scrape.
        let store = self.store
        let counts = await Self.withinProbeTimeout(configuration.healthProbeTimeout) { try? await store.counts() } ?? nil
        let readiness = await probeReadiness()
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4"
        let text = metrics.render(
            store: counts,
            sseClients: notifier.subscriberCount,
            databaseDamaged: databaseHealth.databaseProblem != nil,
            retentionRefused: databaseHealth.retentionRefusal != nil,
            readiness: readiness
        )
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The request body, inflated if gzip, refused with 413 past the limit in either form.
    func readBody(_ request: Request) async throws -> [UInt8] {
        try await RequestBody.read(request, limit: configuration.maxBodyBytes)
    }

    func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        try RequestBody.decode(type, bytes)
    }
}

func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
    var headers = HTTPFields()
    headers[.contentType] = "application/json"
    return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try WireCodec.encode(value))))
}

extension HTTPField.Name {
    // Both names are valid tokens, so the initialiser never fails; the fallback only avoids a `!`.
    static let idempotencyKey = HTTPField.Name("Idempotency-Key") ?? .contentLocation
    static let lastEventID = HTTPField.Name("Last-Event-ID") ?? .contentLocation
}

/// Turns every error into the WIRE.md error body (Hummingbird's own 404s and 500s included)
/// and counts responses by status.
struct ErrorBodyMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let metrics: ServerMetrics
    let databaseHealth: DatabaseHealth

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as APIError {
            response = try error.response(from: request, context: context)
        } catch let error as PersonKeyError {
            // The sealed value or key stays as it is; the operator's log says which.
            context.logger.error("personal data does not open", metadata: ["error": "\(error)"])
            let status: HTTPResponse.Status = error.code == .keyDestroyed ? .gone : .internalServerError
            response = try APIError(status: status, code: APIError.Code(rawValue: error.code.rawValue), message: error.message)
                .response(from: request, context: context)
        } catch let error as HTTPError {
            let code: APIError.Code =
                switch error.status {
                case .notFound: .notFound
                case .contentTooLarge: .tooLarge
                case .unauthorized: .unauthorized
                default: APIError.Code(rawValue: "http_\(error.status.code)")
                }
            response = try APIError(status: error.status, code: code, message: error.body ?? error.status.reasonPhrase)
                .response(from: request, context: context)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(error)"])
            let answer =
                StoreFailures.answer(for: error, health: databaseHealth)
                ?? APIError(status: .internalServerError, code: .internalError, message: "internal error")
            response = try answer.response(from: request, context: context)
        }
        metrics.recordResponse(status: response.status.code)
        return response
    }
}
