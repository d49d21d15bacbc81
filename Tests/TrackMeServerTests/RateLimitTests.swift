import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// 429 with Retry-After per token and per address, and alert floods kept off the feed. The wall
/// clock is the test's: buckets refill only when the test moves it.
@Suite("Rate limits")
struct RateLimitTests {
    @Test("one token past its burst gets 429 with Retry-After; another token is unaffected; time refills", arguments: Backend.enabled)
    func perToken(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.requestsPerToken = RateLimit(burst: 5, perSecond: 0.5)
        try await TestServer.with(backend, limits: limits) { s in
            let token = try await s.enrol("pi-0001")
            let other = try await s.enrol("pi-0002")
            for seq in 1...5 {
                #expect(try await s.send(Sample.batch("pi-0001", seq: Int64(seq), readings: []), token: token).status == 200)
            }
            let refused = try await s.send(Sample.batch("pi-0001", seq: 6, readings: []), token: token)
            #expect(refused.status == 429)
            #expect(refused.headers["retry-after"] == "2")
            #expect(refused.errorCode == "too_many_requests")
            #expect(try await s.send(Sample.batch("pi-0002", seq: 1, readings: []), token: other).status == 200)
            s.wall.advance(milliseconds: 2000)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 6, readings: []), token: token).status == 200)
            // A refused batch stored nothing: seq 6 went in once, on the retry.
            #expect(try await s.send(Sample.batch("pi-0001", seq: 7, readings: []), token: token).status == 429)
        }
    }

    @Test("one address past its burst gets 429 with Retry-After, with or without a token")
    func perAddress() async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.requestsPerAddress = RateLimit(burst: 10, perSecond: 1)
        try await TestServer.with(.sqlite, limits: limits) { s in
            var statuses: [Int] = []
            for _ in 0..<12 { statuses.append(try await s.client.send("GET", "/health").status) }
            #expect(statuses == Array(repeating: 200, count: 10) + [429, 429])
            let refused = try await s.client.send("POST", "/v1/batches", token: "guess.guess", body: Data("{}".utf8))
            #expect(refused.status == 429)
            #expect(refused.headers["retry-after"] == "1")
            s.wall.advance(milliseconds: 1000)
            #expect(try await s.client.send("GET", "/health").status == 200)
        }
    }

    @Test(
        "500 distinct no_pulse alerts from one device: a few pass, the rest 429, ONE alert_flood event; another device's alert is not buried",
        arguments: Backend.enabled
    )
    func alertFlood(backend: Backend) async throws {
        try await TestServer.with(backend, limits: ServerLimits()) { s in
            let flooder = try await s.enrol("pi-0001")
            let wearer = try await s.enrol("pi-0002")
            let answers = try await withThrowingTaskGroup(of: (String, Int).self) { group in
                var answers: [(String, Int)] = []
                var next = 0
                func add() {
                    let id = "flood-\(next)"
                    next += 1
                    group.addTask {
                        let response = try await s.client.send(
                            "POST",
                            "/v1/alerts",
                            token: flooder,
                            body: try WireCodec.encode(Sample.alert("pi-0001", id: id))
                        )
                        return (id, response.status)
                    }
                }
                for _ in 0..<16 { add() }
                while let answer = try await group.next() {
                    answers.append(answer)
                    if next < 500 { add() }
                }
                return answers
            }
            let limit = try #require(ServerLimits().alertRaisesPerDevice)
            #expect(answers.count == 500)
            let accepted = answers.filter { $0.1 == 200 }.map(\.0)
            #expect(accepted.count == limit.burst)
            #expect(answers.filter { $0.1 == 429 }.count == 500 - limit.burst)

            let real = Sample.alert("pi-0002", id: "real-no-pulse")
            #expect(try await s.client.send("POST", "/v1/alerts", token: wearer, body: try WireCodec.encode(real)).status == 200)
            // Updates of an open alert are not new alerts: an accepted one still gets its positions
            // (once the token's own request budget has refilled a little).
            s.wall.advance(milliseconds: 6000)
            let open = try #require(accepted.first)
            let position = Sample.alert("pi-0001", id: open, updateSeq: 1, type: .position)
            #expect(try await s.client.send("POST", "/v1/alerts", token: flooder, body: try WireCodec.encode(position)).status == 200)

            let feed = try await s.server.store.feedEvents(after: 0, limit: 1000)
            let floods = feed.filter { $0.kind == "alert_flood" }
            #expect(floods.count == 1)
            #expect(floods.first?.data.contains("\"device_id\":\"pi-0001\"") == true)
            // The feed carries references to alerts ({alert_id, device_id, update_seq, ...}), not the updates.
            let flooderAlerts = feed.filter { $0.kind == "alert" }
                .compactMap { (try? JSONSerialization.jsonObject(with: Data($0.data.utf8))) as? [String: Any] }
                .filter { $0["device_id"] as? String == "pi-0001" && $0["update_seq"] as? Int == 0 }
            #expect(flooderAlerts.count == limit.burst)
            // The flooder's accepted alerts, its one position update, the flood, the real alert.
            #expect(feed.count == limit.burst + 3)
            #expect(feed.contains { $0.kind == "alert" && $0.data.contains("real-no-pulse") })
        }
    }
}
