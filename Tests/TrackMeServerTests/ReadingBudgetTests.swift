import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Exports, tracks and statistics are charged the readings they would read before they start.
/// The wall clock is the test's: budgets refill only when the test moves it.
@Suite("Reading budget")
struct ReadingBudgetTests {
    static let t0 = TestServer.startWall

    /// `count` heart-rate readings, one a second from t0 + 1 s, in batches of 500.
    static func heartRates(_ s: TestServer, device: String, token: String, count: Int) async throws {
        for first in stride(from: 1, through: count, by: 500) {
            let readings = (first..<min(first + 500, count + 1)).map { n in
                Sample.heartRate(seq: Int64(n), bpm: 60 + n % 40, wall: t0 + Int64(n) * 1000)
            }
            let sent = try await s.send(Sample.batch(device, seq: Int64(first / 500 + 1), readings: readings), token: token)
            try #require(sent.status == 200, "\(sent.text)")
        }
    }

    @Test(
        "past its budget a statistics or export request is 429 with Retry-After and nothing read; another person is unaffected; time refills",
        arguments: Backend.enabled
    )
    func budget(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.readingsPerPrincipal = RateLimit(burst: 1_000, perSecond: 10)
        try await TestServer.with(backend, limits: limits) { s in
            let (_, ada) = try await s.wearer("ada", device: "pi-0001")
            let (_, bob) = try await s.wearer("bob", device: "pi-0002")
            s.at(3_600_000)
            try await Self.heartRates(s, device: "pi-0001", token: ada, count: 600)
            try await Self.heartRates(s, device: "pi-0002", token: bob, count: 600)
            let adaSession = try await s.signIn("ada")
            let bobSession = try await s.signIn("bob")
            let span = "from=\(Self.t0)&to=\(Self.t0 + 86_400_000)"

            let first = try await s.page("GET", "/v1/people/me/statistics?\(span)", adaSession)
            #expect(first.status == 200)
            // 600 more with 400 left: refused, and told when 600 will be there (200 at 10 a second).
            let refused = try await s.page("GET", "/v1/people/me/statistics?\(span)", adaSession)
            #expect(refused.status == 429)
            #expect(refused.errorCode == "too_many_requests")
            #expect(refused.headers["retry-after"] == "20")
            let message = (refused.object["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("600 readings"), "\(message)")
            // The export costs the same and is refused the same way: the budget is the person's, whatever they ask.
            let export = try await s.page("GET", "/v1/people/me/export?format=csv&\(span)", adaSession)
            #expect(export.status == 429)
            #expect(export.headers["retry-after"] == "20")
            // A narrower span costs less and fits what is left.
            let narrow = try await s.page("GET", "/v1/people/me/statistics?from=\(Self.t0)&to=\(Self.t0 + 300_500)", adaSession)
            #expect(narrow.status == 200)

            // Bob's budget is his own.
            #expect(try await s.page("GET", "/v1/people/me/statistics?\(span)", bobSession).status == 200)

            // The refusals charged nothing: 100 left after the narrow read, and 50 s bring 500 more.
            s.wall.advance(milliseconds: 49_000)
            #expect(try await s.page("GET", "/v1/people/me/statistics?\(span)", adaSession).status == 429)
            s.wall.advance(milliseconds: 1_000)
            #expect(try await s.page("GET", "/v1/people/me/statistics?\(span)", adaSession).status == 200)
        }
    }

    @Test("a request over the whole budget waits for a full bucket rather than being refused for ever", arguments: Backend.enabled)
    func overTheBurst(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.readingsPerPrincipal = RateLimit(burst: 400, perSecond: 10)
        try await TestServer.with(backend, limits: limits) { s in
            let (_, ada) = try await s.wearer("ada", device: "pi-0001")
            s.at(3_600_000)
            try await Self.heartRates(s, device: "pi-0001", token: ada, count: 600)
            let session = try await s.signIn("ada")
            let span = "from=\(Self.t0)&to=\(Self.t0 + 86_400_000)"
            let whole = try await s.page("GET", "/v1/people/me/export?format=json&\(span)", session)
            #expect(whole.status == 200)
            #expect((whole.object["heart_rate"] as? [Any])?.count == 600)
            let again = try await s.page("GET", "/v1/people/me/export?format=json&\(span)", session)
            #expect(again.status == 429)
            #expect(again.headers["retry-after"] == "40")
            s.wall.advance(milliseconds: 40_000)
            #expect(try await s.page("GET", "/v1/people/me/export?format=json&\(span)", session).status == 200)
        }
    }

    @Test(
        "a group query is charged the daily summaries it scans: past the budget 429 with Retry-After, counted; another organisation is unaffected",
        arguments: Backend.enabled
    )
    func groupFigures(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.readingsPerPrincipal = RateLimit(burst: 25_000, perSecond: 100)
        try await TestServer.with(backend, limits: limits) { s in
            s.at(40 * GroupFigures.dayMilliseconds)
            let acme = try await s.organisation("acme", name: "Acme")
            let other = try await s.organisation("other", name: "Other")
            // 1,001 people over ten days: 10,010 person-days in the group's cell.
            try await s.population("p", count: 1001, days: 1...10)
            let refusedBefore = MetricsScrape(try await s.client.send("GET", "/metrics").text).value("trackme_server_rate_limited_total") ?? 0

            // Twice 10,010 fit in 25,000; the third needs 5,030 more than is left: 51 s at 100 a second.
            #expect(try await s.groupQuery(acme).status == 200)
            #expect(try await s.groupQuery(acme).status == 200)
            let refused = try await s.groupQuery(acme)
            #expect(refused.status == 429, "\(refused.text)")
            #expect(refused.errorCode == "too_many_requests")
            #expect(refused.headers["retry-after"] == "51")
            let message = (refused.object["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(message.contains("10010 readings"), "\(message)")
            let refusedAfter = MetricsScrape(try await s.client.send("GET", "/metrics").text).value("trackme_server_rate_limited_total") ?? 0
            #expect(refusedAfter == refusedBefore + 1)

            // Another organisation's budget is its own. Its wider group overlaps the three answered
            // before: each one's two differences scan the cell twice more, over the burst, charged
            // as the whole burst, so it waits for a full bucket (10,010 spent: 101 s).
            #expect(try await s.groupQuery(other).status == 200)
            let wider = try await s.groupQuery(other, north: 45.2)
            #expect(wider.status == 429, "\(wider.text)")
            #expect(wider.headers["retry-after"] == "101")

            // The refusal charged nothing: 51 s later the same group is answered.
            s.wall.advance(milliseconds: 51_000)
            #expect(try await s.groupQuery(acme).status == 200)
        }
    }

    @Test("a bucket charged a cost: all or nothing, capped at the burst, and the wait it names is the wait it needs")
    func bucketWithCost() {
        let limit = RateLimit(burst: 100, perSecond: 10)
        var bucket = TokenBucket(limit: limit, now: 0)
        #expect(bucket.take(60, limit: limit, now: 0) == .allowed)
        #expect(bucket.take(60, limit: limit, now: 0) == .refused(retryAfterSeconds: 2))
        #expect(bucket.tokens == 40)
        var early = bucket
        #expect(early.take(60, limit: limit, now: 1_999) == .refused(retryAfterSeconds: 1))
        #expect(bucket.take(60, limit: limit, now: 2_000) == .allowed)
        // Over the burst: charged as the burst, so only a full bucket admits it.
        #expect(bucket.take(1_000, limit: limit, now: 2_000) == .refused(retryAfterSeconds: 10))
        #expect(bucket.take(1_000, limit: limit, now: 12_000) == .allowed)
        #expect(bucket.tokens == 0)
        // One request's token, as the other limits take it, is unchanged.
        #expect(bucket.take(limit: limit, now: 12_100) == .allowed)
        #expect(bucket.take(limit: limit, now: 12_100) == .refused(retryAfterSeconds: 1))
    }

    @Test("withoutRateLimits switches the reading budget off too")
    func offSwitch() {
        #expect(ServerLimits.withoutRateLimits.readingsPerPrincipal == nil)
        #expect(ServerLimits().readingsPerPrincipal != nil)
    }
}
