import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The part every server-sent event stream shares: the headers, a subscription to the notifier
/// taken when the body starts (before the body's first read of the store, so that whatever is
/// appended after that read wakes the stream: nothing falls in between), the client's `retry:`
/// delay, the end at graceful shutdown, and the end of the body. What a stream sends, and when it
/// ends, is the caller's `body`, which writes events and waits on the wakes.
enum EventStream {
    typealias Wakes = AsyncStream<FeedNotifier.Wake>

    static func response(
        notifier: FeedNotifier,
        retryMilliseconds: Int,
        logger: Logger,
        name: String,
        body: @escaping @Sendable (inout any ResponseBodyWriter, Wakes) async throws -> Void
    ) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                let (subscription, wakes) = notifier.subscribe()
                defer { notifier.unsubscribe(subscription) }
                do {
                    try await withGracefulShutdownHandler {
                        try await writer.write(ByteBuffer(string: "retry: \(retryMilliseconds)\n\n"))
                        try await body(&writer, wakes)
                    } onGracefulShutdown: {
                        notifier.unsubscribe(subscription)
                    }
                } catch {
                    // Usually the client went away; it comes back and resumes.
                    logger.debug("\(name) ended", metadata: ["error": "\(error)"])
                    throw error
                }
                try await writer.finish(nil)
            }
        )
    }
}
