// Data path, step 6 (simulation): the server benchmarks' HTTP connection and figures.

package import NIOCore
package import NIOHTTP1
import NIOPosix
package import NIOSSL

/// One keep-alive HTTP/1.1 connection (SwiftNIO, already built with the server), requests one at
/// a time, like a device's sync loop.
package struct BenchHTTPConnection {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        /// The answer's status, 0 when there was none.
        package var status = 0
    }

    let inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>
    let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    private let box: IteratorBox

    final class IteratorBox {
        var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator
        init(_ iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator) { self.iterator = iterator }
    }

    package static func with<T: Sendable>(port: Int, tls: NIOSSLContext?, _ body: (BenchHTTPConnection) async throws -> T) async throws -> T {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(120))
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: "localhost"))
                    }
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(BenchHTTPConnection(inbound: inbound, outbound: outbound, box: IteratorBox(inbound.makeAsyncIterator())))
        }
    }

    /// Sends one request and reads its whole response; returns the time it took.
    package func request(method: HTTPMethod, uri: String, headers: [(String, String)], body: ByteBuffer?, expect: Int) async throws -> Duration {
        try await requestWithBody(method: method, uri: uri, headers: headers, body: body, expect: expect).0
    }

    /// The same, with the response body.
    package func requestWithBody(
        method: HTTPMethod,
        uri: String,
        headers: [(String, String)],
        body: ByteBuffer?,
        expect: Int
    ) async throws -> (Duration, String) {
        let clock = ContinuousClock()
        let start = clock.now
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: uri)
        head.headers.add(name: "Host", value: "127.0.0.1")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "Content-Length", value: "\(body?.readableBytes ?? 0)")
        try await outbound.write(.head(head))
        if let body { try await outbound.write(.body(.byteBuffer(body))) }
        try await outbound.write(.end(nil))
        var status = 0
        var responseBody = ""
        reading: while let part = try await box.iterator.next() {
            switch part {
            case .head(let response): status = Int(response.status.code)
            case .body(let buffer): responseBody += String(buffer: buffer)
            case .end: break reading
            }
        }
        guard status == expect else { throw Failure(description: "\(method) \(uri): \(status) \(responseBody)", status: status) }
        return (start.duration(to: clock.now), responseBody)
    }
}

/// The figures the server-side benchmarks report, computed one way.
package enum BenchFigures {
    package static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) / 1e18
    }

    /// The `p` quantile (nearest rank) in milliseconds; 0 for no values.
    package static func percentile(_ values: [Duration], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))
        return seconds(sorted[index]) * 1000
    }
}
