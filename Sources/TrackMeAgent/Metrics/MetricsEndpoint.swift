import CoreMetrics
import Foundation
public import Logging
public import Prometheus
public import ServiceLifecycle
import TrackMeSystem

/// A small HTTP/1.1 server on 127.0.0.1 that serves `GET /metrics` in the Prometheus text
/// format, from a `PrometheusCollectorRegistry`.
///
/// Only loopback: a node exporter or a local Prometheus agent scrapes it and forwards what it
/// wants; a wearable never opens a port to the network. One request per connection
/// (`Connection: close`), which is what Prometheus scrapers handle fine.
public final class MetricsEndpoint: Service, Sendable {
    /// The bound port (useful when the configuration asked for port 0).
    public let port: Int
    private let listener: Socket
    private let registry: PrometheusCollectorRegistry
    private let logger: Logger
    private let scrapes: CoreMetrics.Counter

    private init(port: Int, listener: Socket, registry: PrometheusCollectorRegistry, logger: Logger, scrapes: CoreMetrics.Counter) {
        self.port = port
        self.listener = listener
        self.registry = registry
        self.logger = logger
        self.scrapes = scrapes
    }

    /// Binds 127.0.0.1:`port` now, so a port in use fails the start.
    public static func bind(port: Int, registry: PrometheusCollectorRegistry, logger: Logger) throws -> MetricsEndpoint {
        let listener = try Socket.listenTCPLoopback(port: UInt16(clamping: port))
        let bound = Int(try listener.localPort())
        let scrapes = CoreMetrics.Counter(
            label: AgentMetricNames.metricsScrapes,
            dimensions: [],
            factory: PrometheusMetricsFactory(registry: registry)
        )
        return MetricsEndpoint(port: bound, listener: listener, registry: registry, logger: logger, scrapes: scrapes)
    }

    public func run() async throws {
        let logger = self.logger
        let loop = AcceptLoop(listener: listener) { error in
            logger.info("metrics accept failed", metadata: ["error": "\(error)"])
        }
        logger.info("metrics endpoint listening", metadata: ["metrics.address": "127.0.0.1:\(port)"])
        await withDiscardingTaskGroup { group in
            for await connection in loop.connections.cancelOnGracefulShutdown() {
                group.addTask { await self.serve(connection) }
            }
            await loop.stopAndWait()
        }
    }

    private func serve(_ connection: Socket) async {
        defer { connection.close() }
        do {
            try connection.setTimeouts(milliseconds: 5000)
            let head = try await BlockingThreads.shared.run { () throws(SocketError) in try Self.readHead(connection) }
            let response = respond(toHead: head)
            try await BlockingThreads.shared.run { () throws(SocketError) in try connection.writeAll(response) }
        } catch {
            logger.debug("metrics client failed", metadata: ["error": "\(error)"])
        }
    }

    /// Reads up to the blank line that ends an HTTP request head (bodies are not expected).
    private static func readHead(_ connection: Socket) throws(SocketError) -> [UInt8] {
        var head: [UInt8] = []
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while !head.suffix(4).elementsEqual(end) {
            guard head.count < 8192 else {
                throw SocketError(code: .messageTooLong, context: connection.label)
            }
            let chunk = try connection.read(maximum: 1024)
            if chunk.isEmpty { break }
            head += chunk
            if let range = head.firstRange(of: end) { head = Array(head[..<range.upperBound]) }
        }
        return head
    }

    func respond(toHead head: [UInt8]) -> [UInt8] {
        let requestLine = String(decoding: head.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else {
            return Self.response(status: "400 Bad Request", contentType: "text/plain", body: Array("bad request\n".utf8))
        }
        let path = parts[1].split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard path == "/metrics" else {
            return Self.response(status: "404 Not Found", contentType: "text/plain", body: Array("try /metrics\n".utf8))
        }
        guard parts[0] == "GET" || parts[0] == "HEAD" else {
            return Self.response(
                status: "405 Method Not Allowed",
                contentType: "text/plain",
                body: Array("GET only\n".utf8),
                extra: "Allow: GET, HEAD\r\n"
            )
        }
        scrapes.increment()
        let body = registry.emitToBuffer()
        return Self.response(
            status: "200 OK",
            contentType: "text/plain; version=0.0.4; charset=utf-8",
            body: parts[0] == "HEAD" ? [] : body,
            length: body.count
        )
    }

    private static func response(status: String, contentType: String, body: [UInt8], length: Int? = nil, extra: String = "") -> [UInt8] {
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length ?? body.count)\r\n\(extra)Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }
}
