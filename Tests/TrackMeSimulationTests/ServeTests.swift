import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing

@testable import TrackMeSimulation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `trackme-sim run SCENARIO --serve N` for a single device: watched, the run goes on today's
/// clock, so the console's times and ages are true.
@Suite struct ServeTests {
    static let simulations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("simulations")

    /// A short run: the wearer presses SOS at 3 s (raised at 8 s, after the countdown).
    static let scenario = """
        {"name": "served-sos", "seed": 1, "person": {"name": "Hal Button", "age": 45},
         "heart_rate": {"trace": "traces/hr/mitdb113_sinus_arrhythmia.csv", "from_s": 0, "to_s": 10},
         "gps": {"log": "traces/gpsd/garmin-10x.log", "loop": true},
         "faults": [{"type": "manual_sos", "from_s": 3}],
         "expect": [{"type": "alert", "alert_kind": "manual", "from_s": 3, "to_s": 4},
                    {"type": "no_readings_lost"}, {"type": "all_synced"}]}
        """

    struct Announcement: Sendable {
        var url: String
        var username: String
        var password: String
    }

    /// What the console saw: the feed's first heartbeat and the alert, the alert's detail, and
    /// the device's stored readings, each as the server's JSON.
    struct Seen: Sendable {
        var heartbeat: String
        var alert: String
        var detail: Data
        var readings: Data
    }

    /// The console's feed opens on the server's present, the alert arrives stamped with it, and
    /// the readings stored before it (heart rate and fixes) are placed between the test's own
    /// start and the moment it read them.
    @Test func aServedRunFilesItsReadingsAndAlertAtThePresent() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("served-sos-\(UUID().uuidString).json")
        try Data(Self.scenario.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let scenario = try Scenario.load(from: file)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = ScenarioRunner.Options(simulationsDirectory: Self.simulations, logger: logger)
        let (announcements, announced) = AsyncStream.makeStream(of: Announcement.self)
        // Long enough for a slow sign-in (bcrypt at the server's cost on a loaded machine) and the
        // reads after the alert to find the server up: beside the whole suite on 2 cores, 15 s
        // was not. The run waits for the window, so the test takes at least this long.
        options.serve = ScenarioRunner.Serve(seconds: 90) { url, username, password in
            announced.yield(Announcement(url: url, username: username, password: password))
        }
        let before = wallMilliseconds()
        async let outcome = ScenarioRunner(options: options).run(scenario)

        var iterator = announcements.makeAsyncIterator()
        let announcement = try #require(await iterator.next())
        let base = try #require(URL(string: announcement.url))
        // Signed in as the console is; following its feed starts the run.
        var signIn = URLRequest(url: base.appendingPathComponent("v1/session"))
        signIn.httpMethod = "POST"
        signIn.setValue("application/json", forHTTPHeaderField: "Content-Type")
        signIn.httpBody = try JSONSerialization.data(withJSONObject: ["username": announcement.username, "password": announcement.password])
        let (_, signedIn) = try await URLSession.shared.data(for: signIn)
        let setCookie = try #require((signedIn as? HTTPURLResponse)?.value(forHTTPHeaderField: "Set-Cookie"))
        let cookie = String(setCookie.prefix { $0 != ";" })

        let seen = try await withHTTPClient { client async throws -> Seen? in
            func get(_ path: String) async throws -> Data {
                var request = HTTPClientRequest(url: base.absoluteString + path)
                request.headers.add(name: "Cookie", value: cookie)
                let response = try await client.execute(request, timeout: .seconds(30))
                return Data(Array(buffer: try await response.body.collect(upTo: 16 << 20)))
            }
            var request = HTTPClientRequest(url: base.absoluteString + "v1/alerts/stream")
            request.headers.add(name: "Cookie", value: cookie)
            let stream = try await client.execute(request, timeout: .seconds(120))
            var feed = AlertToConsoleBenchmark.SSEReader(body: stream.body.makeAsyncIterator())
            var heartbeat: String?
            while let event = try await feed.next() {
                if event.name == "heartbeat", heartbeat == nil { heartbeat = event.data }
                guard event.name == "alert" else { continue }
                let id = try #require((try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])?["alert_id"] as? String)
                return Seen(
                    heartbeat: try #require(heartbeat),
                    alert: event.data,
                    detail: try await get("v1/alerts/\(id)"),
                    readings: try await get("v1/devices/sim-device/readings?limit=1000")
                )
            }
            return nil
        }
        // The run steps its clock a trace second at a time, its rules half a second ahead within
        // one, so what it files may be up to a second ahead of the moment the test read it.
        let read = wallMilliseconds() + 1000
        let console = try #require(seen)
        let heartbeat = try #require(try JSONSerialization.jsonObject(with: Data(console.heartbeat.utf8)) as? [String: Any])
        let heartbeatAt = try #require((heartbeat["at_ms"] as? NSNumber)?.int64Value)
        #expect((before...read).contains(heartbeatAt), "the feed opened at \(heartbeatAt), not between \(before) and \(read)")
        let alert = try #require(try JSONSerialization.jsonObject(with: Data(console.alert.utf8)) as? [String: Any])
        let received = try #require((alert["received_ms"] as? NSNumber)?.int64Value)
        #expect((before...read).contains(received), "the alert arrived at \(received), not between \(before) and \(read)")
        let detail = try #require(try JSONSerialization.jsonObject(with: console.detail) as? [String: Any])
        let timeline = detail["timeline"] as? [[String: Any]] ?? []
        #expect(!timeline.isEmpty)
        for entry in timeline {
            let at = try #require((entry["at_ms"] as? NSNumber)?.int64Value)
            #expect((before...read).contains(at), "\(entry["event"] ?? "?") at \(at), not between \(before) and \(read)")
        }
        let page = try #require(try JSONSerialization.jsonObject(with: console.readings) as? [String: Any])
        let readings = page["readings"] as? [[String: Any]] ?? []
        #expect(!readings.isEmpty, "no readings stored before the alert")
        for reading in readings {
            let placed = try #require((reading["placed_ms"] as? NSNumber)?.int64Value)
            #expect((before...read).contains(placed), "reading \(reading["seq"] ?? "?") placed at \(placed), not between \(before) and \(read)")
            #expect(reading["time_flag"] is NSNull, "reading \(reading["seq"] ?? "?"): \(reading["time_flag"] ?? "?")")
        }

        let report = try await outcome.report
        #expect(report.passed, "\(report.expectations.filter { !$0.passed }.map(\.message))")
        // Watched, the run went at real time: its trace (rows from 2 s to 10 s) took at least that.
        #expect(wallMilliseconds() - before >= report.virtualDurationMilliseconds)
    }
}
