import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Testing

@testable import TrackMeSimulation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `trackme-sim run race-200.json --serve N`: a crowd's run served for people to watch, as a
/// single device's is: its page and a sign-in announced, the page answering while the run goes.
@Suite struct CrowdServeTests {
    static let simulations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("simulations")

    struct Announcement: Sendable {
        var url: String
        var username: String
        var password: String
    }

    @Test func aServedRaceAnnouncesItsPageAndASignIn() async throws {
        let scenario = try CrowdScenario.load(from: Self.simulations.appendingPathComponent("scenarios/race-200.json"))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = CrowdRunner.Options(simulationsDirectory: Self.simulations, logger: logger)
        options.runners = 3
        options.durationSeconds = 2
        let (announcements, announced) = AsyncStream.makeStream(of: Announcement.self)
        // Far longer than the checks take on any machine, however busy: the test ends the window
        // itself by cancelling the run once it has seen what it checks.
        options.serve = ScenarioRunner.Serve(seconds: 600) { url, username, password in
            announced.yield(Announcement(url: url, username: username, password: password))
        }
        let run = Task { try await CrowdRunner(options: options).run(scenario) }
        defer { run.cancel() }

        var iterator = announcements.makeAsyncIterator()
        let announcement = try #require(await iterator.next())
        let page = try #require(URL(string: announcement.url))
        #expect(page.path.hasPrefix("/runs/"), "\(announcement.url)")
        let (html, response) = try await URLSession.shared.data(from: page)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(String(decoding: html, as: UTF8.self).contains("<main"))
        // The run's data behind the page: the runners who consented to be shown.
        let runID = page.lastPathComponent
        let (data, _) = try await URLSession.shared.data(
            from: page.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("v1/public/runs/\(runID)")
        )
        #expect((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["runners"] != nil)
        // The sign-in announced works, as the race's organiser.
        var signIn = URLRequest(url: page.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("v1/session"))
        signIn.httpMethod = "POST"
        signIn.setValue("application/json", forHTTPHeaderField: "Content-Type")
        signIn.httpBody = try JSONSerialization.data(withJSONObject: ["username": announcement.username, "password": announcement.password])
        let (session, signedIn) = try await URLSession.shared.data(for: signIn)
        #expect((signedIn as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: session, as: UTF8.self))")
        let account = (try JSONSerialization.jsonObject(with: session) as? [String: Any])?["account"] as? [String: Any]
        #expect(account?["role"] as? String == "organiser")

        run.cancel()
        _ = await run.result
        announced.finish()
    }

    /// A watched race goes on today's clock: the run's start and every fix spectators see are
    /// placed between the test's own start and the moment it saw them, so the page's "N s ago"
    /// is true.
    @Test func aServedRaceFilesItsFixesAtThePresent() async throws {
        let scenario = try CrowdScenario.load(from: Self.simulations.appendingPathComponent("scenarios/race-200.json"))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = CrowdRunner.Options(simulationsDirectory: Self.simulations, logger: logger)
        options.runners = 5
        options.durationSeconds = 3
        let (announcements, announced) = AsyncStream.makeStream(of: Announcement.self)
        // Up until the test has read the feed (it cancels the run then), however busy the machine.
        options.serve = ScenarioRunner.Serve(seconds: 600) { url, username, password in
            announced.yield(Announcement(url: url, username: username, password: password))
        }
        let before = wallMilliseconds()
        let run = Task { try await CrowdRunner(options: options).run(scenario) }
        defer { run.cancel() }

        var iterator = announcements.makeAsyncIterator()
        let announcement = try #require(await iterator.next())
        let page = try #require(URL(string: announcement.url))
        let origin = page.deletingLastPathComponent().deletingLastPathComponent()
        // The spectators' feed, until it shows a runner's fix.
        let shown = try await withHTTPClient { client async throws -> String? in
            let stream = try await client.execute(
                HTTPClientRequest(url: origin.appendingPathComponent("v1/public/runs/\(page.lastPathComponent)/stream").absoluteString),
                timeout: .seconds(60)
            )
            var feed = AlertToConsoleBenchmark.SSEReader(body: stream.body.makeAsyncIterator())
            while let event = try await feed.next() {
                let data = try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any]
                let runners = data?["runners"] as? [[String: Any]] ?? []
                if event.name == "standings", runners.contains(where: { $0["fix_ms"] is NSNumber }) { return event.data }
            }
            return nil
        }
        let seen = wallMilliseconds()
        let event = try #require(shown)
        let standings = try #require(try JSONSerialization.jsonObject(with: Data(event.utf8)) as? [String: Any])
        let start = try #require((standings["start_ms"] as? NSNumber)?.int64Value)
        #expect((before...seen).contains(start), "the run starts at \(start), not between \(before) and \(seen)")
        for runner in standings["runners"] as? [[String: Any]] ?? [] {
            guard let fix = (runner["fix_ms"] as? NSNumber)?.int64Value else { continue }
            #expect((before...seen).contains(fix), "\(runner["name"] ?? "?")'s fix at \(fix), not between \(before) and \(seen)")
        }
        run.cancel()
        _ = await run.result
    }
}

/// `body` with an HTTP client, shut down after it whatever happens.
func withHTTPClient<T: Sendable>(_ body: (HTTPClient) async throws -> T) async throws -> T {
    let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
    do {
        let result = try await body(client)
        try await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}

/// The wall clock the test reads, as a browser's: ms since 1970.
func wallMilliseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded())
}
