import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// Closes a connection that misses the deadline `ConnectionDeadlines` sets. Sits after HTTP
/// decoding (it sees whole request heads), one per connection.
final class ConnectionDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var machine: ConnectionDeadlines
    private var timer: Scheduled<Void>?
    private let onTimeout: @Sendable () -> Void

    init(limits: ServerLimits, onTimeout: @escaping @Sendable () -> Void) {
        machine = ConnectionDeadlines(idleTimeout: TimeAmount(limits.idleTimeout), bodyTimeout: TimeAmount(limits.bodyTimeout))
        self.onTimeout = onTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { apply(.opened, context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        apply(.opened, context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: apply(.requestHead, context: context)
        case .body: break
        case .end: apply(.requestEnd, context: context)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { apply(.responseEnd, context: context) }
        context.write(data, promise: promise)
    }

    private func apply(_ event: ConnectionDeadlines.Event, context: ChannelHandlerContext) {
        let deadline = machine.receive(event, now: .now())
        timer?.cancel()
        timer = nil
        guard let deadline else { return }
        let loopBound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            guard handler.machine.isExpired(now: .now()) else { return }
            handler.onTimeout()
            context.close(promise: nil)
        }
    }
}

/// Open connections per peer address, capped. A connection over the cap is closed as it is
/// accepted, before any byte is read, so one address cannot take the descriptors everyone needs.
final class PeerConnections: Sendable {
    let maxPerAddress: Int
    private let counts = Mutex<[String: Int]>([:])

    init(maxPerAddress: Int) {
        self.maxPerAddress = maxPerAddress
    }

    /// Counts the channel in until it closes; false (and not counted) when its address is full.
    func admit(_ channel: any Channel) -> Bool {
        let key = Self.key(channel.remoteAddress)
        let admitted = counts.withLock { counts -> Bool in
            let open = counts[key, default: 0]
            guard open < maxPerAddress else { return false }
            counts[key] = open + 1
            return true
        }
        guard admitted else { return false }
        channel.closeFuture.whenComplete { [self] _ in
            counts.withLock { counts in
                let left = counts[key, default: 1] - 1
                counts[key] = left > 0 ? left : nil
            }
        }
        return true
    }

    func openConnections(from address: String) -> Int {
        counts.withLock { $0[address, default: 0] }
    }

    /// The IP address without the port (the whole path for a Unix socket).
    static func key(_ address: SocketAddress?) -> String {
        guard let address else { return "?" }
        return address.ipAddress ?? address.pathname ?? "?"
    }
}

struct ConnectionRefused: Error, CustomStringConvertible {
    var address: String
    var description: String { "too many connections from \(address)" }
}

/// Wraps the HTTP (or TLS) child channel: refuses a connection over its address's cap before
/// the base channel sets anything up.
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let connections: PeerConnections
    let onRefused: @Sendable () -> Void

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard connections.admit(channel) else {
            onRefused()
            let address = PeerConnections.key(channel.remoteAddress)
            logger.debug("connection refused: too many from one address", metadata: ["server.peer": "\(address)"])
            // NIO's async accept loop does not close a channel whose setup failed ("must be
            // handled in the transformation"): close it here, or its descriptor stays open.
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ConnectionRefused(address: address))
        }
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
