import Hummingbird
import Logging

/// What a room is given beside its own store: the server's configuration, the authenticator
/// its doors ask, the feed's wake-ups, the counters and the log. Made once by the server and
/// handed to each room, so that no room spells the same five out again.
struct RoomServices: Sendable {
    let configuration: ServerConfiguration
    let authenticator: Authenticator
    let notifier: FeedNotifier
    let metrics: ServerMetrics
    let logger: Logger

    /// The request's body as `type`: inflated if gzip, 413 past the server's limit in either
    /// form, 400 when it is not the JSON `type` reads.
    func body<T: Decodable>(_ type: T.Type, of request: Request) async throws -> T {
        try RequestBody.decode(type, try await RequestBody.read(request, limit: configuration.maxBodyBytes))
    }
}
