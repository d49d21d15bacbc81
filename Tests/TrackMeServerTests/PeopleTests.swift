import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

extension TestServer {
    /// A wearer account linked to a newly enrolled device; returns (account id, device token).
    func wearer(_ username: String, device: String, age: Int = 70, displayName: String? = nil) async throws -> (String, String) {
        let token = try await enrol(device, age: age)
        let id = try await createAccount(username, role: "wearer", displayName: displayName)
        let link = try await client.send("POST", "/v1/people/\(id)/devices", token: Self.adminToken, json: ["device_id": device])
        try #require(link.status == 201, "link: \(link.text)")
        return (id, token)
    }

    func organisation(_ username: String, name: String) async throws -> BrowserSession {
        let response = try await client.send(
            "POST",
            "/v1/organisations",
            json: ["username": username, "password": "correct horse", "display_name": name, "role": "third_party"]
        )
        try #require(response.status == 201, "register: \(response.text)")
        return try await signIn(username)
    }

    /// Moves the wall clock to `milliseconds` after the start.
    func at(_ milliseconds: Int64) {
        let target = Self.startWall + milliseconds
        if target > wall.now { wall.advance(milliseconds: target - wall.now) }
    }

    func heartRates(_ path: String, _ session: BrowserSession) async throws -> [Int]? {
        let response = try await page("GET", path, session)
        guard response.status == 200 else { return nil }
        return (response.object["heart_rate"] as? [[String: Any]])?.compactMap { $0["bpm"] as? Int }
    }
}

@Suite("People: wearers, consent, third parties, dispatchers (issue 20)")
struct PeopleTests {
    static let t0 = TestServer.startWall

    @Test(
        "a wearer sees their own heart rate, positions, daily statistics and alerts, and downloads them as JSON, CSV and GPX",
        arguments: Backend.enabled
    )
    func wearerSeesOwnData(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001", age: 70, displayName: "Ada L.")
            s.at(60_000)
            let readings: [WireReading] = [
                Sample.heartRate(seq: 1, bpm: 50, wall: Self.t0 + 1_000), Sample.heartRate(seq: 2, bpm: 60, wall: Self.t0 + 2_000),
                Sample.heartRate(seq: 3, bpm: 200, wall: Self.t0 + 3_000), Sample.heartRate(seq: 4, bpm: 70, wall: Self.t0 + 4_000),
                Sample.fix(seq: 5, wall: Self.t0 + 5_000), Sample.fix(seq: 6, wall: Self.t0 + 6_000),
            ]
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: readings), token: device).status == 200)
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-ada"), token: device).status == 200)
            let dispatcher = try await s.dispatcher()
            #expect(
                try await s.client.send("POST", "/v1/alerts/alert-ada/resolve", token: dispatcher, json: ["outcome": "false_alarm"]).status == 200
            )

            let session = try await s.signIn("ada")
            let span = "from=\(Self.t0)&to=\(Self.t0 + 3_600_000)"
            #expect(try await s.heartRates("/v1/people/me/heart-rate?\(span)", session) == [50, 60, 200, 70])
            // A narrower span gives only what is in it.
            #expect(try await s.heartRates("/v1/people/me/heart-rate?from=\(Self.t0 + 2_000)&to=\(Self.t0 + 3_500)", session) == [60, 200])
            let positions = try await s.page("GET", "/v1/people/me/positions?\(span)", session)
            #expect((positions.object["positions"] as? [[String: Any]])?.count == 2)
            let stats = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            let day = try #require((stats.object["days"] as? [[String: Any]])?.first)
            #expect(day["min"] as? Int == 50)
            #expect(day["max"] as? Int == 200)
            #expect(day["mean"] as? Double == 95)
            #expect(day["readings"] as? Int == 4)
            // 200 bpm is over the age-predicted maximum (159 at 70) until the next reading 1 s later.
            #expect(day["seconds_out_of_range"] as? Int == 1)
            #expect(day["limit_max"] as? Int == 159)
            let alerts = try await s.page("GET", "/v1/people/me/alerts", session)
            let alert = try #require((alerts.object["alerts"] as? [[String: Any]])?.first)
            #expect(alert["alert_id"] as? String == "alert-ada")
            #expect(alert["outcome"] as? String == "false_alarm")

            let exported = try await s.page("GET", "/v1/people/me/export?format=json&\(span)", session)
            #expect(exported.status == 200)
            #expect(exported.headers["content-disposition"]?.contains("attachment") == true)
            #expect((exported.object["heart_rate"] as? [Any])?.count == 4)
            #expect((exported.object["positions"] as? [Any])?.count == 2)
            #expect((exported.object["alerts"] as? [Any])?.count == 1)
            let csv = try await s.page("GET", "/v1/people/me/export?format=csv&\(span)", session)
            #expect(csv.headers["content-type"]?.hasPrefix("text/csv") == true)
            let lines = csv.text.split(separator: "\r\n")
            #expect(lines.first?.hasPrefix("record,at_ms,at,device_id,bpm") == true)
            #expect(lines.filter { $0.hasPrefix("heart_rate,") }.count == 4)
            #expect(lines.filter { $0.hasPrefix("position,") }.count == 2)
            #expect(lines.contains { $0.hasPrefix("alert,") && $0.contains("false_alarm") })
            let gpx = try await s.page("GET", "/v1/people/me/track.gpx?\(span)", session)
            #expect(gpx.text.contains("<gpx version=\"1.1\""))
            #expect(gpx.text.components(separatedBy: "<trkpt lat=\"44.07\" lon=\"-121.31\">").count == 3)
            #expect(gpx.text.contains("<name>Ada L.</name>"))

            // Another wearer reads none of it; their own page is empty.
            _ = try await s.wearer("bob", device: "pi-0002")
            let bob = try await s.signIn("bob")
            #expect(try await s.page("GET", "/v1/people/\(ada)/heart-rate?\(span)", bob).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/export?format=csv", bob).status == 403)
            #expect(try await s.heartRates("/v1/people/me/heart-rate?\(span)", bob) == [])
            // Her own reads are not in her access log (nobody else read anything).
            let log = try await s.page("GET", "/v1/people/me/access-log", session)
            #expect((log.object["entries"] as? [Any])?.isEmpty == true)
            // Linking needs the admin; a device is one wearer's.
            #expect(try await s.client.send("POST", "/v1/people/\(ada)/devices", token: dispatcher, json: ["device_id": "pi-0002"]).status == 403)
            #expect(
                try await s.client.send("POST", "/v1/people/\(ada)/devices", token: TestServer.adminToken, json: ["device_id": "pi-0002"]).status
                    == 409
            )
        }
    }

    @Test(
        "a third party reads nothing before approval, after revocation by either side, after expiry, outside the window or kinds; every read is logged",
        arguments: Backend.enabled
    )
    func consentRules(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001")
            s.at(10_000)
            #expect(
                try await s.send(
                    Sample.batch(
                        "pi-0001",
                        seq: 1,
                        readings: [1, 2, 3].map { Sample.heartRate(seq: $0, bpm: 60 + Int($0), wall: Self.t0 + $0 * 1_000) }
                    ),
                    token: device
                ).status == 200
            )
            var acme = try await s.organisation("acme", name: "Acme Research")
            let ask: [String: Any] = ["person": "ada", "kinds": ["heart_rate"], "days": 2, "purpose": "sleep study"]
            let request = try await s.page("POST", "/v1/access-requests", acme, json: ask)
            #expect(request.status == 201)
            let requestID = try #require(request.object["id"] as? String)
            #expect(request.object["status"] as? String == "pending")
            #expect(
                try await s.page("POST", "/v1/access-requests", acme, json: ["person": "nobody", "kinds": ["heart_rate"], "days": 2, "purpose": "x"])
                    .status == 404
            )
            #expect(
                try await s.page("POST", "/v1/access-requests", acme, json: ["person": "ada", "kinds": [], "days": 2, "purpose": "x"]).status == 400
            )
            #expect(
                try await s.page("POST", "/v1/access-requests", acme, json: ["person": "ada", "kinds": ["heart_rate"], "days": 0, "purpose": "x"])
                    .status == 400
            )
            let hr = "/v1/people/\(ada)/heart-rate?from=0"

            // Before approval: nothing.
            #expect(try await s.heartRates(hr, acme) == nil)
            #expect(try await s.page("GET", "/v1/people/\(ada)/export?format=json", acme).status == 403)
            // An organisation cannot approve for the person, nor another wearer.
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", acme).status == 403)
            _ = try await s.wearer("bob", device: "pi-0002")
            let bob = try await s.signIn("bob")
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", bob).status == 404)

            var person = try await s.signIn("ada")
            let pending = try await s.page("GET", "/v1/people/me/access-requests", person)
            let listed = try #require((pending.object["requests"] as? [[String: Any]])?.first)
            #expect(listed["organisation_name"] as? String == "Acme Research")
            #expect(listed["status"] as? String == "pending")
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", person, csrf: false).status == 403)
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", person).status == 200)
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", person).status == 409)

            // Approved at +10 s with no earlier start: the readings before are outside the window.
            #expect(try await s.heartRates(hr, acme) == [])
            s.at(20_000)
            #expect(
                try await s.send(
                    Sample.batch(
                        "pi-0001",
                        seq: 2,
                        readings: [Sample.heartRate(seq: 4, bpm: 90, wall: Self.t0 + 15_000), Sample.fix(seq: 5, wall: Self.t0 + 16_000)]
                    ),
                    token: device
                ).status == 200
            )
            #expect(try await s.heartRates(hr, acme) == [90])
            // Only the kinds approved: positions and alerts were not, and asking for them is refused.
            #expect(try await s.page("GET", "/v1/people/\(ada)/positions?from=0", acme).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/alerts", acme).status == 403)
            // The person sees who read what: only the read that returned data (the refused ones and
            // the empty one before the new reading are not reads of her data), by the organisation's name.
            let log = try await s.page("GET", "/v1/people/me/access-log", person)
            let entries = try #require(log.object["entries"] as? [[String: Any]])
            #expect(entries.count == 1, "\(entries)")
            #expect(
                entries.allSatisfy { $0["reader_name"] as? String == "Acme Research" && ($0["what"] as? String)?.hasPrefix("heart_rate") == true }
            )
            #expect(entries.allSatisfy { $0["reason"] as? String == "consent" })
            // Another party sees no log and no data.
            #expect(try await s.page("GET", "/v1/people/\(ada)/access-log", acme).status == 403)

            // The person revokes: nothing more.
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/revoke", person).status == 200)
            #expect(try await s.heartRates(hr, acme) == nil)

            // Asked again for the data since the start; approved; now the earlier readings too.
            var again = ask
            again["data_from_ms"] = Self.t0
            again["days"] = 1
            let second = try #require(try await s.page("POST", "/v1/access-requests", acme, json: again).object["id"] as? String)
            #expect(try await s.page("POST", "/v1/access-requests/\(second)/approve", person).status == 200)
            #expect(try await s.heartRates(hr, acme) == [61, 62, 63, 90])
            // The organisation ends it itself.
            #expect(try await s.page("POST", "/v1/access-requests/\(second)/revoke", acme).status == 200)
            #expect(try await s.heartRates(hr, acme) == nil)

            // Approved for one day: it ends by itself.
            let third = try #require(try await s.page("POST", "/v1/access-requests", acme, json: again).object["id"] as? String)
            #expect(try await s.page("POST", "/v1/access-requests/\(third)/approve", person).status == 200)
            #expect(try await s.heartRates(hr, acme) == [61, 62, 63, 90])
            s.wall.advance(milliseconds: 86_400_000 - 1)
            // (Sessions last an hour in tests: sign in again after moving the clock by days.)
            acme = try await s.signIn("acme")
            #expect(try await s.heartRates(hr, acme) != nil)
            s.wall.advance(milliseconds: 1)
            #expect(try await s.heartRates(hr, acme) == nil)
            let mine = try await s.page("GET", "/v1/access-requests", acme)
            #expect((mine.object["requests"] as? [[String: Any]])?.first { $0["id"] as? String == third }?["status"] as? String == "expired")

            // Unanswered for 3 days: refused, and can no longer be approved.
            let fourth = try #require(try await s.page("POST", "/v1/access-requests", acme, json: again).object["id"] as? String)
            s.wall.advance(milliseconds: 3 * 86_400_000 - 1)
            person = try await s.signIn("ada")
            acme = try await s.signIn("acme")
            let still = try await s.page("GET", "/v1/people/me/access-requests", person)
            #expect((still.object["requests"] as? [[String: Any]])?.first { $0["id"] as? String == fourth }?["status"] as? String == "pending")
            s.wall.advance(milliseconds: 1)
            let lapsed = try await s.page("GET", "/v1/people/me/access-requests", person)
            #expect(
                (lapsed.object["requests"] as? [[String: Any]])?.first { $0["id"] as? String == fourth }?["status"] as? String == "refused_unanswered"
            )
            #expect(try await s.page("POST", "/v1/access-requests/\(fourth)/approve", person).status == 409)
            #expect(try await s.heartRates(hr, acme) == nil)
        }
    }

    @Test(
        "a download (JSON, CSV, GPX) that returns none of the person's data leaves no access-log row; one that returns some leaves one",
        arguments: Backend.enabled
    )
    func emptyDownloadsAreNotLogged(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001")
            let acme = try await s.organisation("acme", name: "Acme Research")
            let ask: [String: Any] = ["person": "ada", "kinds": ["heart_rate", "position"], "days": 2, "purpose": "sleep study"]
            let requestID = try #require(try await s.page("POST", "/v1/access-requests", acme, json: ask).object["id"] as? String)
            let person = try await s.signIn("ada")
            #expect(try await s.page("POST", "/v1/access-requests/\(requestID)/approve", person).status == 200)
            let downloads = ["export?format=json", "export?format=csv", "track.gpx"]

            // Nothing recorded yet: every download answers, empty, and none is a read of her data.
            s.at(10_000)
            for path in downloads {
                let empty = try await s.page("GET", "/v1/people/\(ada)/\(path)", acme)
                #expect(empty.status == 200, "\(path): \(empty.text)")
            }
            #expect(try await CarerTests.entries(s, person).isEmpty)

            // Heart rate only: the JSON and CSV downloads hold it and are logged; the GPX track has no position and is not.
            #expect(
                try await s.send(
                    Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 61, wall: Self.t0 + 15_000)]),
                    token: device
                )
                .status == 200
            )
            s.at(20_000)
            for path in downloads { #expect(try await s.page("GET", "/v1/people/\(ada)/\(path)", acme).status == 200) }
            var whats = try await CarerTests.entries(s, person).compactMap {
                ($0["what"] as? String)?.split(separator: " ").prefix(2).joined(separator: " ")
            }
            #expect(whats.sorted() == ["export csv", "export json"], "\(whats)")

            // A position: now the track is a read too.
            #expect(
                try await s.send(Sample.batch("pi-0001", seq: 2, readings: [Sample.fix(seq: 2, wall: Self.t0 + 21_000)]), token: device).status == 200
            )
            s.at(30_000)
            let track = try await s.page("GET", "/v1/people/\(ada)/track.gpx", acme)
            #expect(track.status == 200 && track.text.contains("<trkpt"), "\(track.text)")
            whats = try await CarerTests.entries(s, person).compactMap {
                ($0["what"] as? String)?.split(separator: " ").prefix(2).joined(separator: " ")
            }
            #expect(whats.sorted() == ["export csv", "export json", "track gpx"], "\(whats)")
        }
    }

    @Test("a third party subscribes to new data over SSE; the stream ends when the person revokes", arguments: Backend.enabled)
    func subscription(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001")
            let acme = try await s.organisation("acme", name: "Acme")
            let person = try await s.signIn("ada")
            let id = try #require(
                try await s.page(
                    "POST",
                    "/v1/access-requests",
                    acme,
                    json: ["person": "ada", "kinds": ["heart_rate"], "days": 30, "purpose": "care"]
                ).object["id"]
                    as? String
            )
            // Before approval the stream is refused.
            let refused = try await s.page("GET", "/v1/people/\(ada)/stream", acme)
            #expect(refused.status == 403)
            #expect(try await s.page("POST", "/v1/access-requests/\(id)/approve", person).status == 200)
            s.at(5_000)
            let stream = try SSETestClient(port: s.port, token: "", path: "/v1/people/\(ada)/stream", cookie: acme.cookie)
            defer { stream.close() }
            // Wait until the stream is open (a follower is counted) before sending.
            while s.server.feedFollowers == 0 { await Task.yield() }
            // Batches arrive while the stream is looking at the last one: none is skipped (the
            // stream once moved its cursor to the newest row after reading, losing a batch stored
            // in between). Positions are not granted and never sent.
            for seq in Int64(1)...25 {
                #expect(
                    try await s.send(
                        Sample.batch(
                            "pi-0001",
                            seq: seq,
                            readings: [
                                Sample.heartRate(seq: 2 * seq - 1, bpm: Int(50 + seq), wall: Self.t0 + 4_000 + seq),
                                Sample.fix(seq: 2 * seq, wall: Self.t0 + 4_500 + seq),
                            ]
                        ),
                        token: device
                    ).status == 200
                )
            }
            let events = try await stream.nextEvents(25)
            #expect(events.map(\.event) == Array(repeating: "heart_rate", count: 25))
            #expect(events.first?.data.contains("\"bpm\":51") == true)
            #expect(events.last?.data.contains("\"bpm\":75") == true)
            #expect(try await s.page("POST", "/v1/access-requests/\(id)/revoke", person).status == 200)
            let ended = try await stream.nextEvents(1)
            #expect(ended.map(\.event) == ["access_ended"])
            #expect(ended.first?.data == "{}", "ended by the revocation")
        }
    }

    @Test(
        "a dispatcher reads a person's readings only from a little before an alert opened until it closed, and the person sees it",
        arguments: Backend.enabled
    )
    func dispatcherNarrowed(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device) = try await s.wearer("cy", device: "pi-0003")
            _ = try await s.enrol("pi-0004")
            let dispatcher = try await s.dispatcher()
            let minute: Int64 = 60_000
            s.at(2 * minute)
            #expect(
                try await s.send(
                    Sample.batch("pi-0003", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 61, wall: Self.t0 + minute)]),
                    token: device
                ).status == 200
            )
            // No alert: nothing, for either device.
            #expect(try await s.client.send("GET", "/v1/devices/pi-0003/readings", token: dispatcher).status == 403)
            #expect(try await s.client.send("GET", "/v1/devices/pi-0004/readings", token: dispatcher).status == 403)
            s.at(16 * minute)
            #expect(
                try await s.send(
                    Sample.batch("pi-0003", seq: 2, readings: [Sample.heartRate(seq: 2, bpm: 62, wall: Self.t0 + 15 * minute)]),
                    token: device
                ).status == 200
            )
            s.at(20 * minute)
            #expect(try await s.postAlert(Sample.alert("pi-0003", id: "alert-cy"), token: device).status == 200)
            s.at(22 * minute)
            #expect(
                try await s.send(
                    Sample.batch("pi-0003", seq: 3, readings: [Sample.heartRate(seq: 3, bpm: 63, wall: Self.t0 + 21 * minute)]),
                    token: device
                ).status == 200
            )
            // From 10 minutes before the alert: not the reading of minute 1.
            #expect(try await s.readings("pi-0003", token: dispatcher).compactMap { $0["seq"] as? Int } == [2, 3])
            #expect(try await s.readings("pi-0003").compactMap { $0["seq"] as? Int } == [1, 2, 3], "the admin reads all")
            s.at(25 * minute)
            #expect(
                try await s.client.send("POST", "/v1/alerts/alert-cy/resolve", token: dispatcher, json: ["outcome": "help_arrived"]).status == 200
            )
            s.at(31 * minute)
            #expect(
                try await s.send(
                    Sample.batch("pi-0003", seq: 4, readings: [Sample.heartRate(seq: 4, bpm: 64, wall: Self.t0 + 30 * minute)]),
                    token: device
                ).status == 200
            )
            // Until it closed: not the reading after.
            #expect(try await s.readings("pi-0003", token: dispatcher).compactMap { $0["seq"] as? Int } == [2, 3])
            // A day after it closed: nothing.
            s.at(25 * minute + 86_400_000 + 1)
            #expect(try await s.client.send("GET", "/v1/devices/pi-0003/readings", token: dispatcher).status == 403)
            // The desk's history keeps what happened but no longer the person.
            let history = try await s.client.send("GET", "/v1/alerts?status=closed", token: dispatcher)
            let entry = try #require((history.object["alerts"] as? [[String: Any]])?.first)
            #expect(entry["outcome"] as? String == "help_arrived")
            #expect(entry["person"] == nil || entry["person"] is NSNull)
            #expect(entry["record"] == nil || entry["record"] is NSNull)
            // The person sees the dispatcher's reads.
            let person = try await s.signIn("cy")
            let log = try #require(try await s.page("GET", "/v1/people/me/access-log", person).object["entries"] as? [[String: Any]])
            #expect(log.contains { $0["reader_role"] as? String == "dispatcher" && $0["reason"] as? String == "open_alert" })
            #expect(log.contains { $0["reader_role"] as? String == "dispatcher" && $0["reason"] as? String == "recently_closed_alert" })
            // A dispatcher's token has no account: named for what it is, never by its id.
            #expect(
                log.filter { $0["reader_role"] as? String == "dispatcher" }.allSatisfy { $0["reader_name"] as? String == "A dispatcher" },
                "\(log)"
            )
        }
    }
}
