import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import TrackMeServer

/// Fast mode's server: the server's router, middleware, handlers and store, handed each request
/// in process, with no socket, no HTTP parser and no event-loop hop.
///
/// Every request's context is made on one testing channel that lives as long as the router.
/// Hummingbird's router test mode makes a channel per request and never closes it, and an NIO
/// channel that is not closed keeps its pipeline: about 5 KB a request, 86 MB over a simulated
/// day of a device's batches. What only a listening server has (the connection guard, TLS, the
/// periodic jobs) is not here, and a request's peer is not loopback.
struct InProcessRouter: Sendable {
    private let responder: RouterResponder<ServerRequestContext>
    private let channel: NIOAsyncTestingChannel
    private let logger: Logger

    init(server: TrackMeServer, logger: Logger = Logger(label: "trackme.sim.in-process", factory: { _ in SwiftLogNoOpLogHandler() })) {
        responder = server.inProcessResponder()
        channel = NIOAsyncTestingChannel()
        self.logger = logger
    }

    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: ByteBuffer
    }

    /// One request through the router. An error that no middleware turned into a response is a
    /// 500, as Hummingbird's router test mode answers it.
    func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws -> Answer {
        var headers = headers
        if let body { headers[.contentLength] = String(body.readableBytes) }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: uri, headerFields: headers),
            body: RequestBody(buffer: body ?? ByteBuffer())
        )
        let context = ServerRequestContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        let response: Response
        do {
            response = try await responder.respond(to: request, context: context)
        } catch {
            response = Response(status: .internalServerError)
        }
        let collected = Collected()
        try await response.body.write(Collector(collected: collected))
        return Answer(status: response.status, headers: response.headers, body: collected.body.withLock { $0 })
    }

    private final class Collected: Sendable {
        let body = Mutex(ByteBuffer())
    }

    private struct Collector: ResponseBodyWriter {
        let collected: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            collected.body.withLock { body in
                var buffer = buffer
                body.writeBuffer(&buffer)
            }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
