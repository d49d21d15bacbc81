import Foundation
import MetricsTestKit
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The server's metrics go through swift-metrics into a swift-prometheus registry of each
/// server's own: the names, types and help dashboards rely on, the values MetricsTestKit sees,
/// and two servers in one process that do not share a count.
@Suite("Server metrics", .timeLimit(.minutes(10)))
struct ServerMetricsTests {
    /// The names dashboards query, each with its type. Written out, not taken from
    /// `ServerMetrics.Name`, so that renaming a case there fails here.
    static let published: [(name: String, type: String)] = [
        ("trackme_server_batches_total", "counter"),
        ("trackme_server_batches_replayed_total", "counter"),
        ("trackme_server_readings_stored_total", "counter"),
        ("trackme_server_readings_duplicate_total", "counter"),
        ("trackme_server_alert_updates_total", "counter"),
        ("trackme_server_alert_updates_duplicate_total", "counter"),
        ("trackme_server_alerts_acknowledged_total", "counter"),
        ("trackme_server_devices_silenced_total", "counter"),
        ("trackme_server_readings_retention_deleted_total", "counter"),
        ("trackme_server_rate_limited_total", "counter"),
        ("trackme_server_alert_raises_refused_total", "counter"),
        ("trackme_server_alert_floods_total", "counter"),
        ("trackme_server_connections_refused_total", "counter"),
        ("trackme_server_connections_timed_out_total", "counter"),
        ("trackme_server_batches_conflict_total", "counter"),
        ("trackme_server_retention_refused_total", "counter"),
        ("trackme_server_erasures_total", "counter"),
        ("trackme_server_statistics_days_kept_total", "counter"),
        ("trackme_server_statistics_days_summarised_total", "counter"),
        ("trackme_server_retention_deleted_total", "counter"),
        ("trackme_server_requests_abandoned_total", "counter"),
        ("trackme_server_responses_total", "counter"),
        ("trackme_server_database_damaged", "gauge"),
        ("trackme_server_retention_refusing", "gauge"),
        ("trackme_server_database_answering", "gauge"),
        ("trackme_server_database_writable", "gauge"),
        ("trackme_server_database_free_bytes", "gauge"),
        ("trackme_server_sse_clients", "gauge"),
        ("trackme_server_devices", "gauge"),
        ("trackme_server_devices_silent", "gauge"),
        ("trackme_server_readings", "gauge"),
        ("trackme_server_alerts", "gauge"),
    ]

    @Test("every published metric is on /metrics with its type and help, retention by every kind, responses by status")
    func everyNameTypeAndHelp() async throws {
        try await TestServer.with(.sqlite) { s in
            #expect(try await s.client.send("GET", "/health").status == 200)
            let response = try await s.client.send("GET", "/metrics")
            #expect(response.status == 200)
            #expect(response.headers["content-type"] == "text/plain; version=0.0.4")
            let scrape = MetricsScrape(response.text)
            for (name, type) in Self.published {
                #expect(scrape.type(of: name) == type, "\(name)")
                #expect(scrape.help(of: name)?.isEmpty == false, "\(name) has no help")
            }
            #expect(Set(scrape.types.keys) == Set(Self.published.map(\.name)), "a metric was added or removed: update the list and dashboards")
            for kind in PersonalDataKind.allCases {
                #expect(scrape.value(#"trackme_server_retention_deleted_total{kind="\#(kind.rawValue)"}"#) == 0, "\(kind)")
            }
            for route in ["statistics", "export", "track.gpx", "heart-rate", "positions"] {
                #expect(scrape.value(#"trackme_server_requests_abandoned_total{route="/v1/people/{id}/\#(route)"}"#) == 0, "\(route)")
            }
            #expect(scrape.value(#"trackme_server_requests_abandoned_total{route="/v1/group-figures"}"#) == 0)
            #expect(scrape.value(#"trackme_server_responses_total{status="200"}"#) == 1)
        }
    }

    @Test("MetricsTestKit sees what the handlers count, and /metrics shows the same values")
    func countedThroughSwiftMetrics() async throws {
        let metrics = TestMetrics()
        let s = try await TestServer.start(.sqlite, configure: { $0.metricsFactory = metrics })
        do {
            let token = try await s.enrol("pi-0001")
            let batch = Sample.batch("pi-0001", seq: 1, readings: (1...3).map { Sample.heartRate(seq: $0) })
            #expect(try await s.send(batch, token: token).status == 200)
            #expect(try await s.send(batch, token: token).status == 200)
            #expect(try await s.client.send("GET", "/v2/nothing").status == 404)

            #expect(try metrics.expectCounter("trackme_server_batches_total").totalValue == 2)
            #expect(try metrics.expectCounter("trackme_server_batches_replayed_total").totalValue == 1)
            #expect(try metrics.expectCounter("trackme_server_readings_stored_total").totalValue == 3)
            #expect(try metrics.expectCounter("trackme_server_readings_duplicate_total").totalValue == 0)
            #expect(try metrics.expectCounter("trackme_server_responses_total", [("status", "201")]).totalValue == 1)
            #expect(try metrics.expectCounter("trackme_server_responses_total", [("status", "200")]).totalValue == 2)
            #expect(try metrics.expectCounter("trackme_server_responses_total", [("status", "404")]).totalValue == 1)

            let scrape = MetricsScrape(try await s.client.send("GET", "/metrics").text)
            // Gauges are read when scraped: the store's counts and the open feed streams.
            #expect(try metrics.expectMeter("trackme_server_devices").lastValue == 1)
            #expect(try metrics.expectMeter("trackme_server_readings").lastValue == 3)
            #expect(try metrics.expectMeter("trackme_server_sse_clients").lastValue == 0)
            #expect(scrape.value("trackme_server_devices") == 1)
            #expect(scrape.value("trackme_server_readings") == 3)
            #expect(scrape.value("trackme_server_batches_total") == 2)
            #expect(scrape.value("trackme_server_batches_replayed_total") == 1)
            #expect(scrape.value(#"trackme_server_responses_total{status="404"}"#) == 1)
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test("two servers in one process count apart: each /metrics shows only its own requests")
    func serversDoNotShareCounts() async throws {
        let a = try await TestServer.start(.sqlite)
        let b: TestServer
        do {
            b = try await TestServer.start(.sqlite)
        } catch {
            await a.stop()
            throw error
        }
        do {
            let token = try await a.enrol("pi-0001")
            #expect(try await a.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token).status == 200)
            let onA = MetricsScrape(try await a.client.send("GET", "/metrics").text)
            let onB = MetricsScrape(try await b.client.send("GET", "/metrics").text)
            #expect(onA.value("trackme_server_batches_total") == 1)
            #expect(onA.value("trackme_server_readings_stored_total") == 1)
            #expect(onB.value("trackme_server_batches_total") == 0)
            #expect(onB.value("trackme_server_readings_stored_total") == 0)
            #expect(onB.value(#"trackme_server_responses_total{status="201"}"#) == nil)
        } catch {
            await a.stop()
            await b.stop()
            throw error
        }
        await a.stop()
        await b.stop()
    }

    @Test("a gauge with no value to give is left out of the scrape, and back once there is one")
    func absentGaugeIsLeftOut() {
        let metrics = ServerMetrics()
        let readiness = StoreReadiness(answers: true, writable: true, freeBytes: 4096)
        let full = MetricsScrape(
            metrics.render(store: StoreCounts(devices: 2, readings: 7, alerts: 1, silentDevices: 1), sseClients: 3, readiness: readiness)
        )
        #expect(full.value("trackme_server_devices") == 2)
        #expect(full.value("trackme_server_devices_silent") == 1)
        #expect(full.value("trackme_server_database_free_bytes") == 4096)
        #expect(full.value("trackme_server_sse_clients") == 3)
        // The database did not answer in time: no store counts, no readiness.
        let down = MetricsScrape(metrics.render(store: nil, sseClients: 0))
        for name in ["trackme_server_devices", "trackme_server_readings", "trackme_server_database_writable", "trackme_server_database_free_bytes"] {
            #expect(down.type(of: name) == nil, "\(name) kept a value the database did not give")
        }
        #expect(down.value("trackme_server_sse_clients") == 0)
        let back = MetricsScrape(metrics.render(store: StoreCounts(devices: 3, readings: 9, alerts: 0, silentDevices: 0), sseClients: 0))
        #expect(back.value("trackme_server_devices") == 3)
        #expect(back.help(of: "trackme_server_devices") == "Enrolled devices.")
    }
}

/// One scrape of `/metrics` in the Prometheus text format, read back: a sample's value by its
/// series (`name` or `name{label="value"}`), and each family's `# TYPE` and `# HELP`.
struct MetricsScrape {
    private(set) var values: [String: Double] = [:]
    private(set) var types: [String: String] = [:]
    private(set) var helps: [String: String] = [:]

    init(_ text: String) {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.dropFirst("# TYPE ".count).split(separator: " ", maxSplits: 1)
                if parts.count == 2 { types[String(parts[0])] = String(parts[1]) }
            } else if line.hasPrefix("# HELP ") {
                let parts = line.dropFirst("# HELP ".count).split(separator: " ", maxSplits: 1)
                if parts.count == 2 { helps[String(parts[0])] = String(parts[1]) }
            } else if !line.hasPrefix("#"), let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) {
                values[String(line[..<space])] = value
            }
        }
    }

    func value(_ series: String) -> Double? { values[series] }
    func type(of name: String) -> String? { types[name] }
    func help(of name: String) -> String? { helps[name] }
}
