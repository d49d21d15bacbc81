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

extension ServerHall {
    /// `/metrics` tells how many devices, readings and alerts there are: loopback peers (a
    /// Prometheus on the same host) may read it, anyone else needs the admin token.
    func authorizeMetrics(_ request: Request, context: ServerRequestContext) async throws {
        if context.peerIsLoopback { return }
        _ = try await authenticator.authenticate(request.headers[.authorization], roles: [.admin])
    }
}
