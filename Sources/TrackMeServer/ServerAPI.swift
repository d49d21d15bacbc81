import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import TrackMeCore

/// The HTTP API (openapi.yaml): request parsing, authorisation, and the mapping of store
/// results to answers. Storage behaviour lives behind `ServerStore`; device intake is a room of
/// its own (`IngestRoom`), mounted here, whose store this hall cannot reach.
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
    /// Runs (Track4Run): a room with a store of its own, its routes at their full paths.
    let runs: RunsRoom
    /// The taxi fleet and its rides: a room with a store of its own, mounted at `FleetRoom.path`.
    let fleet: FleetRoom
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
        router.get("/v1/alerts/stream") { request, _ in try await alertStream(request) }
        router.post("/v1/alerts/:id/ack") { request, context in
            try await acknowledgeAlert(request, id: try context.pathID("id"))
        }
        router.get("/v1/devices/:id/readings") { request, context in
            try await listReadings(request, deviceID: try context.pathID("id"))
        }
        AccountRoutes(api: self).register(on: router)
        AlertRoutes(api: self).register(on: router)
        ConsoleRoutes(api: self).register(on: router)
        ContactRoutes(api: self).register(on: router)
        TokenRoutes(api: self).register(on: router)
        CareRoutes(api: self).register(on: router)
        PeopleRoutes(api: self).register(on: router)
        PeoplePages(api: self).register(on: router)
        let pages = ConsoleRoutes(api: self)
        router.addRoutes(runs.routes { file, request in pages.serve(file, request) })
        router.addRoutes(fleet.routes(), atPath: FleetRoom.path)
        router.addRoutes(fleet.pages(pages.serve))
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

    // MARK: - Dispatcher

    func acknowledgeAlert(_ request: Request, id: String) async throws -> Response {
        let principal = try await authenticator.authenticate(request, roles: [.dispatcher])
        switch try await store.acknowledgeAlert(id: id, by: principal.actor, atMilliseconds: configuration.wallClock()) {
        case .notFound:
            throw APIError.notFound("no alert \(id)")
        case .acknowledged(let deviceID):
            metrics.alertsAcknowledged.increment()
            notifier.notify()
            return try json(.ok, AcknowledgeResponse(alertID: id, deviceID: deviceID, acknowledged: true, already: false))
        case .alreadyAcknowledged(let deviceID):
            return try json(.ok, AcknowledgeResponse(alertID: id, deviceID: deviceID, acknowledged: true, already: true))
        }
    }

    func alertStream(_ request: Request) async throws -> Response {
        let authorization = request.headers[.authorization]
        let principal = try await authenticator.authenticate(request, roles: [.dispatcher])
        let authenticator = self.authenticator
        // A stream lasts as long as what opened it: a revoked token, or a browser session that
        // expired, was signed out or whose account was disabled, gets nothing more.
        let stillValid: @Sendable () async -> Bool = {
            if principal.accountID != nil { return (try? await authenticator.session(of: request)) != nil }
            return await authenticator.isStillValid(authorization, roles: [.dispatcher])
        }
        let resumeText = request.headers[.lastEventID] ?? request.uri.queryParameters.get("last_event_id")
        var requested: Int64?
        if let resumeText, !resumeText.isEmpty {
            guard let value = Int64(resumeText), value >= 0 else {
                throw APIError.invalid("Last-Event-ID", "must be an event id from this feed")
            }
            requested = value
        }
        let wallClock = configuration.wallClock
        let heartbeatMilliseconds = configuration.console.feedHeartbeat.milliseconds
        // No id: a heartbeat says the connection is alive and moves no one's Last-Event-ID.
        let heartbeat: @Sendable () -> ByteBuffer = {
            ByteBuffer(string: "event: \(FeedKind.heartbeat)\ndata: {\"at_ms\":\(wallClock()),\"interval_ms\":\(heartbeatMilliseconds)}\n\n")
        }
        let (resumeAfter, reset) = try await FeedReplay.start(requested: requested, store: self.store, now: wallClock())
        let filter = FeedReplay(store: self.store, principal: principal)
        let store = self.store
        let notifier = self.notifier
        let logger = self.logger
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                let (subscription, wakes) = notifier.subscribe()
                defer { notifier.unsubscribe(subscription) }
                // Subscribed before the first read: whatever is appended from here on wakes us,
                // and the store read catches everything before. Nothing falls in between.
                do {
                    try await withGracefulShutdownHandler {
                        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                        try await writer.write(heartbeat())
                        // Older than the replay window: the page re-reads the board instead.
                        if reset { try await writer.write(ByteBuffer(string: "event: \(FeedKind.feedReset)\ndata: {\"after\":\(resumeAfter)}\n\n")) }
                        var last = resumeAfter
                        var replay = filter
                        var iterator = wakes.makeAsyncIterator()
                        let page = 256
                        while !Task.isCancelled {
                            let events = try await store.feedEvents(after: last, limit: page)
                            if !events.isEmpty {
                                var text = ""
                                let now = wallClock()
                                for event in events {
                                    last = event.id
                                    guard try await replay.admits(event, now: now) else { continue }
                                    text += "id: \(event.id)\nevent: \(event.kind)\ndata: \(event.data)\n\n"
                                }
                                if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
                                if events.count == page { continue }
                            }
                            guard let wake = await iterator.next() else { break }
                            guard await stillValid() else { break }
                            if case .tick = wake { try await writer.write(heartbeat()) }
                        }
                    } onGracefulShutdown: {
                        notifier.unsubscribe(subscription)
                    }
                } catch {
                    // Usually the dispatcher went away; it resumes with Last-Event-ID.
                    logger.debug("alert stream ended", metadata: ["error": "\(error)"])
                    throw error
                }
                try await writer.finish(nil)
            }
        )
    }

    func listReadings(_ request: Request, deviceID: String) async throws -> Response {
        let principal = try await authenticator.authenticate(request, roles: [.admin, .dispatcher])
        let parameters = request.uri.queryParameters
        func integer(_ name: String) throws -> Int64? {
            guard let text = parameters.get(name), !text.isEmpty else { return nil }
            guard let value = Int64(text) else { throw APIError(status: .badRequest, code: .wrongType, field: name, message: "expected an integer") }
            return value
        }
        var kind: WireReading.Kind?
        if let text = parameters.get("kind"), !text.isEmpty {
            guard let parsed = WireReading.Kind(rawValue: text) else { throw APIError.invalid("kind", "expected hr or fix") }
            kind = parsed
        }
        let limit = Int(try integer("limit") ?? Int64(configuration.maxPageSize))
        guard (1...configuration.maxPageSize).contains(limit) else {
            throw APIError.invalid("limit", "must be 1-\(configuration.maxPageSize)")
        }
        guard try await store.device(id: deviceID) != nil else { throw APIError.notFound("no device \(deviceID)") }
        let rows = try await store.readings(
            ReadingQuery(
                deviceID: deviceID,
                fromMilliseconds: try integer("from"),
                toMilliseconds: try integer("to"),
                kind: kind,
                afterSequence: try integer("after_seq") ?? 0,
                limit: limit
            )
        )
        // Dispatchers: only around an alert they handle, and logged (People/DispatcherAccess.swift).
        var shown = rows
        if principal.role != .admin { shown = try await PersonData(api: self).narrowReadings(rows, deviceID: deviceID, principal: principal) }
        // The stored wire JSON is spliced in as it is rather than decoded and encoded again.
        var text = "{\"device_id\":\(try StoreJSON.encode(deviceID)),\"next_after_seq\":"
        text += rows.count == limit ? "\(rows[rows.count - 1].sequence)" : "null"
        text += ",\"readings\":["
        for (index, row) in shown.enumerated() {
            if index > 0 { text += "," }
            let flag = row.timeFlag.map { "\"\($0.rawValue)\"" } ?? "null"
            text += "{\"placed_ms\":\(row.placedMilliseconds),\"received_ms\":\(row.receivedMilliseconds),\"time_flag\":\(flag),"
            text += row.body.dropFirst()
        }
        text += "]}"
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
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
