public import Hummingbird
public import NIOCore

/// The request context of every route: Hummingbird's basic one plus the peer's address, which
/// the per-address rate limit and the loopback rule of `/metrics` need, and the principal an
/// authentication middleware found.
public struct ServerRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The address the connection came in on (its port names this server in links it sends).
    let localAddress: SocketAddress?
    /// Who the request comes from, once a room's authentication middleware has established it
    /// (`DeviceAuthentication`); nil before and on routes without one.
    var principal: Principal?
    /// Whether the request's body is still the connection's own stream of request parts, which
    /// is what lets a handler hear its client hang up (`HangUpWatch`): set for every request the
    /// listening server takes (`ListeningResponder`); a request handed over in process carries
    /// a body of its own and leaves it false. A middleware that replaces a request's body must
    /// set it false.
    var bodyIsConnectionStream = false

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        localAddress = source.channel.localAddress
    }

    /// The peer's IP address without the port ("?" when unknown).
    var peerKey: String { PeerConnections.key(remoteAddress) }

    /// Whether the peer is this machine.
    var peerIsLoopback: Bool { Self.isLoopback(remoteAddress) }

    /// 127.0.0.0/8, ::1, an IPv4-mapped 127.x address, or a Unix socket.
    static func isLoopback(_ address: SocketAddress?) -> Bool {
        guard let address else { return false }
        if address.pathname != nil { return true }
        guard let ip = address.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}
