import CoreMetrics
import Foundation
import Prometheus
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
import TrackMeSystem

@testable import TrackMeAgent

@Suite("Prometheus endpoint on loopback")
struct MetricsEndpointTests {
    /// One HTTP request over a real TCP connection to 127.0.0.1; returns the whole response.
    static func get(_ requestLine: String, port: Int) async throws -> String {
        let bytes = try await BlockingThreads.shared.run { () throws(SocketError) -> [UInt8] in
            let socket = try Socket.connectTCPLoopback(port: UInt16(port))
            defer { socket.close() }
            try socket.setTimeouts(milliseconds: 30_000)
            try socket.writeAll(Array("\(requestLine)\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            var response: [UInt8] = []
            while true {
                let chunk = try socket.read(maximum: 4096)
                if chunk.isEmpty { return response }
                response += chunk
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func withEndpoint(registry: PrometheusCollectorRegistry, _ body: @Sendable (Int) async throws -> Void) async throws {
        try await testGracefulShutdown { trigger in
            let endpoint = try MetricsEndpoint.bind(port: 0, registry: registry, logger: quietLogger)
            #expect(endpoint.port > 0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await endpoint.run() }
                try await body(endpoint.port)
                trigger.triggerGracefulShutdown()
                try await group.waitForAll()
            }
        }
    }

    @Test("GET /metrics serves swift-metrics values in the Prometheus text format")
    func scrape() async throws {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        Counter(label: AgentMetricNames.heartRateReadings, dimensions: [], factory: factory).increment(by: 3)
        Gauge(label: AgentMetricNames.heartRate, dimensions: [], factory: factory).record(72)
        try await Self.withEndpoint(registry: registry) { port in
            let response = try await Self.get("GET /metrics HTTP/1.1", port: port)
            #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(response.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"))
            #expect(response.contains("\n# TYPE trackme_heart_rate_readings_total counter\ntrackme_heart_rate_readings_total 3\n"))
            #expect(response.contains("\ntrackme_heart_rate_bpm 72"))
            let second = try await Self.get("GET /metrics HTTP/1.1", port: port)
            #expect(second.contains("trackme_metrics_scrapes_total 2"))
            let body = second.components(separatedBy: "\r\n\r\n").dropFirst().joined()
            let names = body.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.prefix { $0 != "{" && $0 != " " } }
            #expect(!names.isEmpty)
            #expect(names.allSatisfy { $0.hasPrefix("trackme_") })
        }
    }

    @Test(
        "other paths and methods are refused",
        arguments: [("GET / HTTP/1.1", "404"), ("POST /metrics HTTP/1.1", "405"), ("NONSENSE", "400")]
    )
    func refused(requestLine: String, status: String) async throws {
        try await Self.withEndpoint(registry: PrometheusCollectorRegistry()) { port in
            let response = try await Self.get(requestLine, port: port)
            #expect(response.hasPrefix("HTTP/1.1 \(status) "))
        }
    }

    @Test("the endpoint listens on loopback only")
    func loopbackOnly() async throws {
        let endpoint = try MetricsEndpoint.bind(port: 0, registry: PrometheusCollectorRegistry(), logger: quietLogger)
        // /proc files report size 0: read to EOF (String(contentsOfFile:) may stop after one
        // page when parallel tests leave many sockets listed).
        let file = try #require(FileHandle(forReadingAtPath: "/proc/net/tcp"))
        let listening = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
        try file.close()
        let portHex = String(format: "%04X", endpoint.port)
        let lines = listening.split(separator: "\n").filter { $0.contains(":\(portHex) ") && $0.contains(" 0A ") }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("0100007F:\(portHex)") == true)
    }
}
