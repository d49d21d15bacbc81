import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging

/// `data` of the `alert_flood` feed event: one per flood, at its first refused alert.
struct AlertFloodData: Codable, Hashable, Sendable {
    var deviceID: String
    var startedMilliseconds: Int64
    /// New alerts the device may raise (`burst`) and regain per minute before it floods.
    var burst: Int
    var perMinute: Double

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case startedMilliseconds = "started_ms"
        case burst
        case perMinute = "per_minute"
    }
}

extension FeedKind {
    static let alertFlood = "alert_flood"
}

extension ServerAPI {
    /// Lets a new alert of `deviceID` through, or refuses it with 429 and `Retry-After` (the
    /// device keeps it and sends it again then). The first refusal of a flood puts one
    /// `alert_flood` event on the feed, so a dispatcher sees the flood, not 500 alerts.
    func admitNewAlert(deviceID: String) async throws {
        guard let alertFloods, let limit = configuration.limits.alertRaisesPerDevice else { return }
        let now = configuration.wallClock()
        switch alertFloods.raise(deviceID: deviceID, now: now) {
        case .allowed:
            return
        case .refused(let seconds, let floodStarted):
            metrics.alertRaisesRefused.increment()
            if floodStarted {
                metrics.alertFloods.increment()
                let data = try StoreJSON.encode(
                    AlertFloodData(deviceID: deviceID, startedMilliseconds: now, burst: limit.burst, perMinute: limit.perSecond * 60)
                )
                try await store.appendFeedEvent(kind: FeedKind.alertFlood, data: data)
                notifier.notify()
                logger.warning("alert flood", metadata: ["server.device": "\(deviceID)"])
            }
            throw APIError.tooManyRequests("too many new alerts from device \(deviceID)", retryAfterSeconds: seconds)
        }
    }

    /// `/metrics` tells how many devices, readings and alerts there are: loopback peers (a
    /// Prometheus on the same host) may read it, anyone else needs the admin token.
    func authorizeMetrics(_ request: Request, context: ServerRequestContext) async throws {
        if context.peerIsLoopback { return }
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
    }
}
