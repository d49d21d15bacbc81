import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// The hall of the HTTP API (openapi.yaml): the middleware every request passes (error bodies,
/// rate limits, the heavy requests' gate), the server's health, counters and API document, and
/// the rooms mounted behind it, each with its own store and doors declared once: device intake
/// (`IngestRoom`), the dispatcher's desk and feed (`AlertsRoom`), people's data (`PeopleRoom`),
/// sessions and accounts (`AccessRoom`), care settings, contacts, runs, the fleet and the pages.
struct ServerHall: Sendable {
    /// Only what `/health` and `/metrics` read: the counts and whether the database answers.
    let store: any HallStore
    let configuration: ServerConfiguration
    let authenticator: Authenticator
    let notifier: FeedNotifier
    let metrics: ServerMetrics
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
    /// Sessions, accounts and the credentials an admin issues: a room with a store of its own.
    let access: AccessRoom
    /// The console page, the shared stylesheet and the pages' headers, which every room serves its pages with.
    let pages: PagesRoom
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
        router.addRoutes(ingest.routes(), atPath: IngestRoom.path)
        router.addRoutes(alerts.routes(), atPath: AlertsRoom.path)
        router.addRoutes(pages.routes(authenticator: authenticator))
        router.addRoutes(access.routes { file, request in pages.serve(file, request) })
        router.addRoutes(care.routes())
        router.addRoutes(people.routes { file, request in pages.serve(file, request) })
        router.addRoutes(runs.routes { file, request in pages.serve(file, request) })
        router.addRoutes(fleet.routes(), atPath: FleetRoom.path)
        router.addRoutes(fleet.pages(pages.serve))
        router.addRoutes(contacts.routes { file, request in pages.serve(file, request) })
        return router
    }

    /// Once the server stopped: its work pools' waiting threads end (a process that starts
    /// many servers, as the tests do, would otherwise keep every one's).
    func endIdleThreads() {
        ingest.batchWork.endIdleThreads()
        people.heavyWork.endIdleThreads()
        access.passwords.pool.endIdleThreads()
    }

    // MARK: - Plumbing

    func metricsResponse() async throws -> Response {
        // Bounded like /health: a database that went away must not hold the scrape.
        let store = self.store
        let counts = await Task.value(within: configuration.healthProbeTimeout) { try? await store.counts() } ?? nil
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

/// What the hall reads of the database: counts for `/metrics`, and whether it answers and a
/// write would succeed, for `/health`.
protocol HallStore: Sendable {
    func counts() async throws -> StoreCounts
    func readiness(minimumFreeBytes: Int64) async -> StoreReadiness
}
