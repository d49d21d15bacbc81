import CoreMetrics
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

/// People's heavy reads — exports, GPX tracks, statistics, group figures — each read a person's
/// whole history and hold a core while they do. At most `limit` of them run at once in the
/// server and one at a time per principal (bearer token, browser session, or else address);
/// past that they are told to come back (429 with `Retry-After`) rather than queue in front of
/// device intake. Intake is never gated here.
struct HeavyRequestMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let gate: HeavyRequestGate
    let metrics: ServerMetrics

    static func isHeavy(_ path: Substring) -> Bool {
        path == "/v1/group-figures"
            || (path.hasPrefix("/v1/people/")
                && (path.hasSuffix("/export") || path.hasSuffix("/track.gpx") || path.hasSuffix("/statistics")))
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isHeavy(Substring(request.uri.path)) else { return try await next(request, context) }
        let principal =
            BearerToken(authorization: request.headers[.authorization]).map { "token:\($0.id)" }
            ?? request.cookies[SessionCookie.name].flatMap { BearerToken(authorization: "Bearer \($0.value)") }.map { "session:\($0.id)" }
            ?? "address:\(context.peerKey)"
        switch gate.enter(principal) {
        case .admitted:
            break
        case .principalBusy:
            metrics.rateLimited.increment()
            throw APIError.tooManyRequests("another export or statistics request of yours is still running", retryAfterSeconds: 5)
        case .serverBusy:
            metrics.rateLimited.increment()
            throw APIError.tooManyRequests("the server is busy with other exports: try again shortly", retryAfterSeconds: 5)
        }
        // Downloads are written after the handler returns: the place is held until the body is
        // written, or the response dropped unwritten (the ticket's release on deinit), whichever
        // comes first.
        let ticket = HeavyRequestGate.Ticket(gate: gate, principal: principal)
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            ticket.release()
            throw error
        }
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            defer { ticket.release() }
            try await body.write(ReleasingWriter(writer: writer, ticket: ticket))
        }
        return response
    }

    /// The response's writer, giving the place back just before the response's end is sent: a
    /// client that has read one download to its end and asks for the next must find its place
    /// free, not still held by the first one's last steps.
    private struct ReleasingWriter: ResponseBodyWriter {
        var writer: any ResponseBodyWriter
        let ticket: HeavyRequestGate.Ticket

        mutating func write(_ buffer: ByteBuffer) async throws {
            try await writer.write(buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
            ticket.release()
            try await writer.finish(trailingHeaders)
        }
    }
}

/// The counts behind `HeavyRequestMiddleware`.
final class HeavyRequestGate: Sendable {
    enum Admission: Equatable {
        case admitted
        case principalBusy
        case serverBusy
    }

    private struct State {
        var running: [String: Int] = [:]
        var total = 0
    }

    let limit: Int
    private let state = Mutex(State())

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func enter(_ principal: String) -> Admission {
        state.withLock { s in
            if s.running[principal, default: 0] > 0 { return .principalBusy }
            if s.total >= limit { return .serverBusy }
            s.running[principal, default: 0] += 1
            s.total += 1
            return .admitted
        }
    }

    func leave(_ principal: String) {
        state.withLock { s in
            let left = s.running[principal, default: 1] - 1
            s.running[principal] = left > 0 ? left : nil
            s.total -= 1
        }
    }

    var running: Int { state.withLock { $0.total } }

    /// One admitted request's place, given back once.
    final class Ticket: Sendable {
        private let gate: HeavyRequestGate
        private let principal: String
        private let held = Mutex(true)

        init(gate: HeavyRequestGate, principal: String) {
            self.gate = gate
            self.principal = principal
        }

        func release() {
            let wasHeld = held.withLock { held in
                let was = held
                held = false
                return was
            }
            if wasHeld { gate.leave(principal) }
        }

        deinit { release() }
    }
}
