import CoreMetrics
import Hummingbird
import HummingbirdCore
import NIOCore

/// How each accepted connection is set up: the per-address cap first, then TLS when configured,
/// then HTTP/1.1 with the deadline handler after the decoder.
enum ServerChannels {
    static func builder(limits: ServerLimits, metrics: ServerMetrics, tls: TLSCertificates?) -> HTTPServerBuilder {
        let connections = PeerConnections(maxPerAddress: limits.maxConnectionsPerAddress)
        return HTTPServerBuilder { responder in
            let http = HTTP1Channel(
                responder: responder,
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [
                        ConnectionDeadlineHandler(limits: limits) { metrics.connectionsTimedOut.increment() }
                    ])
            )
            let refused: @Sendable () -> Void = { metrics.connectionsRefused.increment() }
            if let tls {
                return GuardedChildChannel(base: ReloadableTLSChannel(base: http, certificates: tls), connections: connections, onRefused: refused)
            }
            return GuardedChildChannel(base: http, connections: connections, onRefused: refused)
        }
    }
}
