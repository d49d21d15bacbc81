public import Foundation

/// The real gpsd reading a recorded log from a loopback TCP feed: the deterministic way to run
/// gpsd in tests (every sentence reaches gpsd, as fast as it parses them, and several feeds run
/// in parallel). The log's `#` header lines are left out. `stop()` ends both.
public final class GPSDFeed: Sendable {
    public let feed: LogFeedServer
    public let gpsd: GPSDProcess

    /// The port to give the reader.
    public var port: Int { gpsd.port }

    private init(feed: LogFeedServer, gpsd: GPSDProcess) {
        self.feed = feed
        self.gpsd = gpsd
    }

    /// Serves the log at `url` and starts gpsd on it, on a free port or on `port`.
    public static func start(log url: URL, port: Int? = nil) async throws -> GPSDFeed {
        try await start(bytes: LogFeedServer.receiverBytes(ofLog: url), port: port)
    }

    /// Serves `bytes` as the receiver's output and starts gpsd on it. End them with
    /// `LogFeedServer.endOfLogMarker` so that gpsd reports the end as the receiver closing.
    public static func start(bytes: [UInt8], port: Int? = nil) async throws -> GPSDFeed {
        let feed = try LogFeedServer(bytes: bytes)
        do {
            let gpsd = try await GPSDProcess.start(device: "tcp://127.0.0.1:\(feed.port)", port: port)
            return GPSDFeed(feed: feed, gpsd: gpsd)
        } catch {
            feed.stop()
            throw error
        }
    }

    public func stop() {
        gpsd.stop()
        feed.stop()
    }
}
