import Foundation
import Logging
import Testing
import TrackMeSimulation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `trackme-sim run race-200.json --serve N`: a crowd's run served for people to watch, as a
/// single device's is: its page and a sign-in announced, the page answering while the run goes,
/// the server up for the seconds asked.
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
        let seconds = 4
        options.serve = ScenarioRunner.Serve(seconds: seconds) { url, username, password in
            announced.yield(Announcement(url: url, username: username, password: password))
        }
        let started = ContinuousClock.now
        async let outcome = CrowdRunner(options: options).run(scenario)

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

        _ = try await outcome
        announced.finish()
        // Up for the seconds asked from the announcement, and the run went at real time.
        #expect(ContinuousClock.now - started >= .seconds(seconds))
    }
}
