import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Stops a person's heavy read when its client hangs up.
///
/// Hummingbird lets a client half-close its side of a connection, so a handler is not told that
/// its client went: a statistic would read and summarise to its end for no one, and a download
/// would read until its next write failed. Here the request's body, still the connection's own
/// stream of request parts, is read while the work runs; when that stream ends (the client
/// closed, half-closed or reset the connection) the work's task is cancelled. Its page loops
/// stop before their next page, its work waiting for `PeopleRoom.heavyWork` is dropped unrun
/// (`WorkPool.run`), and it reads nothing more from the database. The abandonment is counted
/// (`trackme_server_requests_abandoned_total{route}`) and logged at info.
///
/// Reading the stream to its end leaves nothing for a next request on the connection: the
/// connection closes after the response, and the response says so (`Connection: close`).
struct HangUpWatch: Sendable {
    /// The routes watched, as the metric's `route` label names them.
    enum Route: String, CaseIterable, Sendable {
        case statistics = "/v1/people/{id}/statistics"
        case export = "/v1/people/{id}/export"
        case track = "/v1/people/{id}/track.gpx"
        case heartRate = "/v1/people/{id}/heart-rate"
        case positions = "/v1/people/{id}/positions"
        case groupFigures = "/v1/group-figures"
    }

    /// What a request whose client went is answered, for the response counter only (no one
    /// reads it): nginx's "client closed request".
    static let clientClosedRequest = HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request")

    let metrics: ServerMetrics

    /// Runs a handler that reads and then answers in one go (statistics, the views, group
    /// figures). When the client hangs up first, the handler is cancelled and the answer is 499.
    /// The handler is given the request to read its body from: while watched, the body comes
    /// through the watch, which holds the connection's stream.
    func respond(
        to request: Request,
        context: ServerRequestContext,
        route: Route,
        _ handler: (Request) async throws -> Response
    ) async throws -> Response {
        guard context.bodyIsConnectionStream else { return try await handler(request) }
        var response: Response
        do {
            response = try await watch(request, logger: context.logger, route: route) { body in
                var watched = request
                watched.body = body
                return try await handler(watched)
            }
        } catch is ClientWent {
            response = Response(status: Self.clientClosedRequest)
        } catch let error as APIError {
            // Answered here rather than by `ErrorBodyMiddleware` so that it carries the header.
            response = try error.response(from: request, context: context)
        }
        response.headers[.connection] = "close"
        return response
    }

    /// A download whose body is read and written after its handler returned: the body is
    /// written while the client stays. When the client hangs up, or a write fails because it
    /// went, the writing stops there and the connection closes.
    func streaming(_ response: Response, to request: Request, context: ServerRequestContext, route: Route) -> Response {
        guard context.bodyIsConnectionStream else { return response }
        var response = response
        let body = response.body
        response.headers[.connection] = "close"
        let logger = context.logger
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            let failed = FailedWrite()
            do {
                try await watch(request, logger: logger, route: route) { _ in
                    try await body.write(NoticingWriter(writer: writer, failed: failed))
                }
            } catch let error where !(error is ClientWent) && failed.happened {
                abandoned(route, logger: logger)
                throw error
            }
        }
        return response
    }

    /// Runs `work` while listening to the request's stream; throws `ClientWent` when the
    /// stream ended first. `work` is given the request's body as the watch passes it on.
    private func watch<T: Sendable>(
        _ request: Request,
        logger: Logger,
        route: Route,
        _ work: (HummingbirdCore.RequestBody) async throws -> T
    ) async throws -> T {
        do {
            return try await request.body.consumeWithCancellationOnInboundClose { body in try await work(body) }
        } catch is CancellationError where !Task.isCancelled {
            // Only the end of the stream cancels the work while this task is not cancelled
            // itself (a server shutting down cancels it, and that is not the client going).
            abandoned(route, logger: logger)
            throw ClientWent()
        }
    }

    private func abandoned(_ route: Route, logger: Logger) {
        metrics.recordAbandoned(route)
        logger.info("client went before its answer was complete; request stopped", metadata: ["http.route": "\(route.rawValue)"])
    }

    /// The client closed the connection before the work was done.
    struct ClientWent: Error {}

    /// Whether a write of a download failed (the client went while it was written).
    private final class FailedWrite: Sendable {
        private let value = Mutex(false)
        func mark() { value.withLock { $0 = true } }
        var happened: Bool { value.withLock { $0 } }
    }

    /// The response's writer, noting a failed write.
    private struct NoticingWriter: ResponseBodyWriter {
        var writer: any ResponseBodyWriter
        let failed: FailedWrite

        mutating func write(_ buffer: ByteBuffer) async throws {
            do {
                try await writer.write(buffer)
            } catch {
                failed.mark()
                throw error
            }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            do {
                try await writer.finish(trailingHeaders)
            } catch {
                failed.mark()
                throw error
            }
        }
    }
}

/// The listening server's responder: the router's, told that every request it is handed still
/// has the connection's own stream as its body (`ServerRequestContext.bodyIsConnectionStream`).
struct ListeningResponder: HTTPResponder {
    typealias Context = ServerRequestContext
    let router: RouterResponder<ServerRequestContext>

    func respond(to request: Request, context: ServerRequestContext) async throws -> Response {
        var context = context
        context.bodyIsConnectionStream = true
        return try await router.respond(to: request, context: context)
    }
}
