import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A signed-in browser as the tests play it: the session cookie and the page's CSRF token.
struct BrowserSession {
    var cookie: String
    var csrf: String
}

extension TestServer {
    @discardableResult
    func createAccount(
        _ username: String,
        password: String = "correct horse",
        role: String = "dispatcher",
        displayName: String? = nil
    ) async throws -> String {
        var body: [String: Any] = ["username": username, "password": password, "role": role]
        if let displayName { body["display_name"] = displayName }
        let response = try await client.send("POST", "/v1/accounts", token: Self.adminToken, json: body)
        try #require(response.status == 201, "create account: \(response.text)")
        return try #require(response.object["id"] as? String)
    }

    func signIn(_ username: String, password: String = "correct horse") async throws -> BrowserSession {
        let response = try await client.send("POST", "/v1/session", json: ["username": username, "password": password])
        try #require(response.status == 200, "sign in: \(response.text)")
        let setCookie = try #require(response.headers["set-cookie"])
        let pair = try #require(setCookie.split(separator: ";").first)
        return BrowserSession(cookie: String(pair), csrf: try #require(response.object["csrf_token"] as? String))
    }

    /// A request as the page makes it: the cookie, and the CSRF token unless `csrf` is false.
    func page(
        _ method: String,
        _ path: String,
        _ session: BrowserSession,
        json: [String: Any]? = nil,
        csrf: Bool = true
    ) async throws -> HTTPTestClient.Response {
        var headers = ["Cookie": session.cookie]
        if csrf { headers["X-CSRF-Token"] = session.csrf }
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) }
        if body != nil { headers["Content-Type"] = "application/json" }
        return try await client.send(method, path, body: body, headers: headers)
    }

    func postAlert(_ update: AlertUpdate, token: String) async throws -> HTTPTestClient.Response {
        try await client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(update))
    }
}

@Suite("Console: accounts, sessions, the alert desk")
struct ConsoleTests {
    @Test("sign in: wrong password and unknown name 401 alike; the cookie is HttpOnly, SameSite=Strict", arguments: Backend.enabled)
    func signIn(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("dana", displayName: "Dana D.")
            #expect(try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "wrong password"]).status == 401)
            #expect(try await s.client.send("POST", "/v1/session", json: ["username": "nobody", "password": "correct horse"]).status == 401)
            // Another site's page may not sign the browser in (login CSRF).
            let foreign = try await s.client.send(
                "POST",
                "/v1/session",
                body: try JSONSerialization.data(withJSONObject: ["username": "dana", "password": "correct horse"]),
                headers: ["Origin": "https://evil.example", "Content-Type": "application/json"]
            )
            #expect(foreign.status == 403)
            let same = try await s.client.send(
                "POST",
                "/v1/session",
                body: try JSONSerialization.data(withJSONObject: ["username": "dana", "password": "correct horse"]),
                headers: ["Origin": "http://127.0.0.1:\(s.port)", "Content-Type": "application/json"]
            )
            #expect(same.status == 200)
            let response = try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "correct horse"])
            #expect(response.status == 200)
            let cookie = try #require(response.headers["set-cookie"])
            #expect(cookie.hasPrefix("trackme_session="))
            #expect(cookie.contains("HttpOnly"))
            #expect(cookie.contains("SameSite=Strict"))
            #expect(cookie.contains("Path=/"))
            #expect(!cookie.contains("Secure"), "no TLS configured here")
            #expect(!response.text.contains("password_hash"))
            let session = try await s.signIn("dana")
            let current = try await s.page("GET", "/v1/session", session)
            #expect(current.status == 200)
            #expect((current.object["account"] as? [String: Any])?["display_name"] as? String == "Dana D.")
            #expect(try await s.client.send("GET", "/v1/session").status == 401)
            // A forged cookie (right id, wrong secret) is refused.
            let forged = BrowserSession(cookie: String(session.cookie.split(separator: ".")[0]) + ".AAAA", csrf: session.csrf)
            #expect(try await s.page("GET", "/v1/session", forged).status == 401)
        }
    }

    @Test("every state change made with the cookie needs the CSRF token: 403 without it, nothing changes", arguments: Backend.enabled)
    func csrf(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            try await s.createAccount("dana")
            let session = try await s.signIn("dana")
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)

            for (method, path, body) in [
                ("POST", "/v1/alerts/alert-1/ack", nil), ("POST", "/v1/alerts/alert-1/resolve", ["outcome": "false_alarm"]),
                ("POST", "/v1/alerts/alert-1/notes", ["text": "called"]), ("DELETE", "/v1/session", nil),
            ] as [(String, String, [String: Any]?)] {
                let missing = try await s.page(method, path, session, json: body, csrf: false)
                #expect(missing.status == 403, "\(method) \(path)")
                #expect(missing.errorCode == "csrf")
                let wrong = try await s.page(method, path, BrowserSession(cookie: session.cookie, csrf: "not-the-token"), json: body)
                #expect(wrong.status == 403, "\(method) \(path)")
            }
            let alert = try await s.page("GET", "/v1/alerts/alert-1", session)
            #expect(alert.status == 200)
            let summary = try #require(alert.object["alert"] as? [String: Any])
            #expect(summary["acknowledged_ms"] == nil || summary["acknowledged_ms"] is NSNull)
            #expect(summary["open"] as? Bool == true)
            #expect((alert.object["notes"] as? [Any])?.isEmpty == true)

            let ack = try await s.page("POST", "/v1/alerts/alert-1/ack", session)
            #expect(ack.status == 200)
            // A bearer token needs no CSRF token: browsers never send it on their own.
            let dispatcher = try await s.dispatcher()
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/notes", token: dispatcher, json: ["text": "from a program"]).status == 201)
        }
    }

    @Test("a session ends: expiry returns 401, sign-out ends it at once", arguments: Backend.enabled)
    func sessionEnds(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("dana")
            let session = try await s.signIn("dana")
            let other = try await s.signIn("dana")
            s.wall.advance(milliseconds: 3_599_000)
            #expect(try await s.page("GET", "/v1/alerts", session).status == 200)
            s.wall.advance(milliseconds: 1_000)
            let expired = try await s.page("GET", "/v1/alerts", session)
            #expect(expired.status == 401)
            #expect(expired.text.contains("expired"))

            let fresh = try await s.signIn("dana")
            let out = try await s.page("DELETE", "/v1/session", fresh)
            #expect(out.status == 204)
            #expect(out.headers["set-cookie"]?.contains("Max-Age=0") == true)
            #expect(try await s.page("GET", "/v1/session", fresh).status == 401)
            _ = other
        }
    }

    @Test("the admin creates and disables dispatchers; a disabled account's sessions end", arguments: Backend.enabled)
    func adminAccounts(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let id = try await s.createAccount("dana")
            let session = try await s.signIn("dana")
            // A dispatcher may not create accounts, by session or by token.
            #expect(
                try await s.page("POST", "/v1/accounts", session, json: ["username": "eve", "password": "long enough", "role": "admin"]).status == 403
            )
            #expect(
                try await s.client.send(
                    "POST",
                    "/v1/accounts",
                    token: try await s.dispatcher(),
                    json: ["username": "eve", "password": "long enough", "role": "admin"]
                ).status == 403
            )

            let duplicate = try await s.client.send(
                "POST",
                "/v1/accounts",
                token: TestServer.adminToken,
                json: ["username": "dana", "password": "long enough", "role": "dispatcher"]
            )
            #expect(duplicate.status == 409)
            #expect(duplicate.errorField == "username")
            let badName = try await s.client.send(
                "POST",
                "/v1/accounts",
                token: TestServer.adminToken,
                json: ["username": "da na<b>", "password": "long enough", "role": "dispatcher"]
            )
            #expect(badName.status == 400)
            #expect(badName.errorField == "username")
            let short = try await s.client.send(
                "POST",
                "/v1/accounts",
                token: TestServer.adminToken,
                json: ["username": "fay", "password": "short", "role": "dispatcher"]
            )
            #expect(short.status == 400)
            #expect(short.errorField == "password")
            let badRole = try await s.client.send(
                "POST",
                "/v1/accounts",
                token: TestServer.adminToken,
                json: ["username": "fay", "password": "long enough", "role": "king"]
            )
            #expect(badRole.status == 400)
            #expect(badRole.errorField == "role")

            // An admin account signs in and manages dispatchers through the page.
            try await s.createAccount("root", role: "admin")
            let admin = try await s.signIn("root")
            #expect(try await s.page("POST", "/v1/accounts/\(id)/disable", admin, csrf: false).status == 403)
            let disabled = try await s.page("POST", "/v1/accounts/\(id)/disable", admin)
            #expect(disabled.status == 200)
            #expect(disabled.object["disabled"] as? Bool == true)
            #expect(try await s.page("GET", "/v1/session", session).status == 401)
            #expect(try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "correct horse"]).status == 401)
            #expect(try await s.page("POST", "/v1/accounts/nobody/disable", admin).status == 404)
            #expect(try await s.page("POST", "/v1/accounts/\(id)/enable", admin).status == 200)
            _ = try await s.signIn("dana")
            let list = try await s.page("GET", "/v1/accounts", admin)
            #expect((list.object["accounts"] as? [[String: Any]])?.map { $0["username"] as? String } == ["dana", "root"])
        }
    }

    @Test("resolve with an outcome closes the alert on the server, tells the feed, and the device learns it", arguments: Backend.enabled)
    func resolve(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)

            let bad = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "went_home"])
            #expect(bad.status == 400)
            #expect(bad.errorField == "outcome")
            #expect(try await s.client.send("POST", "/v1/alerts/nope/resolve", token: dispatcher, json: ["outcome": "false_alarm"]).status == 404)
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: device, json: ["outcome": "false_alarm"]).status == 403)

            let resolved = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "help_arrived"])
            #expect(resolved.status == 200)
            #expect(resolved.object["already_closed"] as? Bool == false)
            let again = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "false_alarm"])
            #expect(again.object["already_closed"] as? Bool == true)

            let events = try await feed.nextEvents(2)
            #expect(events.map(\.event) == ["alert", "alert_resolved"])
            let data = try #require(try JSONSerialization.jsonObject(with: Data(events[1].data.utf8)) as? [String: Any])
            #expect(data["outcome"] as? String == "help_arrived")

            let open = try await s.client.send("GET", "/v1/alerts?status=open", token: dispatcher)
            #expect((open.object["alerts"] as? [Any])?.isEmpty == true)
            let closed = try await s.client.send("GET", "/v1/alerts?status=closed", token: dispatcher)
            let history = try #require(closed.object["alerts"] as? [[String: Any]])
            #expect(history.map { $0["outcome"] as? String } == ["help_arrived"])

            // The device learns it as it learns acknowledgements: in its batch replies, and in the
            // reply to its next alert update, until it reports the alert closed.
            let batch = try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: device)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: batch.body).resolvedAlerts == ["alert-1"])
            let position = try await s.postAlert(Sample.alert("pi-0001", id: "alert-1", updateSeq: 1, type: .position), token: device)
            #expect(try WireCodec.decode(AlertIntakeResponse.self, from: position.body).resolved)
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1", updateSeq: 2, type: .resolved), token: device).status == 200)
            let after = try await s.send(Sample.batch("pi-0001", seq: 2, readings: [Sample.heartRate(seq: 2)]), token: device)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: after.body).resolvedAlerts == [])
        }
    }

    @Test("the person is on the feed and the desk; markup in names and notes is stored and served as text", arguments: Backend.enabled)
    func personTimelineNotes(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let hostile = "<img src=x onerror=alert(1)>Ada"
            let enrol = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: [
                    "device_id": "pi-0001",
                    "person": [
                        "name": hostile, "age": 81, "resting_hr": 62, "min_hr": 40, "max_hr": 150, "notes": "Door code 4711 <script>x</script>",
                        "contacts": [["name": "Ben", "relation": "son", "phone": "+39 555 0101"]],
                    ],
                ]
            )
            #expect(enrol.status == 201)
            let device = try #require(enrol.object["token"] as? String)
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
            let event = try #require(try await feed.nextEvents(1).first)
            let data = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            // A reference: the person comes with the detail, under the policy.
            #expect(data["alert_id"] as? String == "alert-1" && data["person"] == nil && !event.data.contains("Door code"))

            for seq in 1...3 {
                var update = Sample.alert("pi-0001", id: "alert-1", updateSeq: seq, type: .position)
                update.alert.position?.fix.latitude = 44.07 + Double(seq) * 0.0001
                s.wall.advance(milliseconds: 1000)
                #expect(try await s.postAlert(update, token: device).status == 200)
            }
            s.wall.advance(milliseconds: 1000)
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/ack", token: dispatcher).status == 200)
            s.wall.advance(milliseconds: 1000)
            let note = try await s.client.send("POST", "/v1/alerts/alert-1/notes", token: dispatcher, json: ["text": "<b>son</b> on the way"])
            #expect(note.status == 201)
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/notes", token: dispatcher, json: ["text": "   "]).status == 400)
            #expect(try await s.client.send("POST", "/v1/alerts/nope/notes", token: dispatcher, json: ["text": "x"]).status == 404)
            s.wall.advance(milliseconds: 1000)
            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "wearer_safe"]).status == 200)

            let detail = try await s.client.send("GET", "/v1/alerts/alert-1", token: dispatcher)
            #expect(detail.status == 200)
            let alert = try #require(detail.object["alert"] as? [String: Any])
            let person = try #require(alert["person"] as? [String: Any])
            #expect(person["name"] as? String == hostile)
            #expect(person["notes"] as? String == "Door code 4711 <script>x</script>")
            #expect((person["contacts"] as? [[String: Any]])?.first?["name"] as? String == "Ben")
            let timeline = try #require(detail.object["timeline"] as? [[String: Any]]).compactMap { $0["event"] as? String }
            #expect(timeline == ["first_critical", "raised", "delivered", "acknowledged", "note", "resolved"])
            let notes = try #require(detail.object["notes"] as? [[String: Any]])
            #expect(notes.map { $0["text"] as? String } == ["<b>son</b> on the way"])
            let track = try #require(detail.object["track"] as? [[String: Any]])
            #expect(track.count == 4)
        }
    }

    @Test("the board lists the most severe open alert first, then the newest", arguments: Backend.enabled)
    func boardOrder(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let first = try await s.enrol("pi-0001")
            let second = try await s.enrol("pi-0002")
            let third = try await s.enrol("pi-0003")
            let dispatcher = try await s.dispatcher()
            var high = Sample.alert("pi-0001", id: "a-high")
            high.alert.kind = .heartRateHigh
            #expect(try await s.postAlert(high, token: first).status == 200)
            s.wall.advance(milliseconds: 1000)
            #expect(try await s.postAlert(Sample.alert("pi-0002", id: "b-nopulse"), token: second).status == 200)
            s.wall.advance(milliseconds: 1000)
            var silent = Sample.alert("pi-0003", id: "c-silent")
            silent.alert.kind = .strapSilent
            #expect(try await s.postAlert(silent, token: third).status == 200)
            let board = try await s.client.send("GET", "/v1/alerts", token: dispatcher)
            let ids = (board.object["alerts"] as? [[String: Any]])?.compactMap { $0["alert_id"] as? String }
            #expect(ids == ["b-nopulse", "a-high", "c-silent"])
            let devices = try await s.client.send("GET", "/v1/devices", token: dispatcher)
            #expect((devices.object["devices"] as? [Any])?.count == 3)
            #expect(try await s.client.send("GET", "/v1/devices", token: first).status == 403)
        }
    }

    @Test("the console page and its assets are served by the server with a strict content policy")
    func page() async throws {
        try await TestServer.with(.sqlite) { s in
            let page = try await s.client.send("GET", "/")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            #expect(page.text.contains("/assets/console.js"))
            #expect(page.text.contains("/assets/trackme.css"))
            #expect(try await s.client.send("GET", "/assets/console.js").status == 200)
            // Kept by the browser and revalidated: the same bytes answer 304 with no body.
            let style = try await s.client.send("GET", "/assets/trackme.css")
            #expect(style.status == 200)
            #expect(style.headers["cache-control"] == "no-cache")
            let etag = try #require(style.headers["etag"])
            let again = try await s.client.send("GET", "/assets/trackme.css", headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            #expect(again.text.isEmpty)
            #expect(try await s.client.send("GET", "/assets/leaflet/..%2F..%2F..%2Fetc%2Fpasswd").status == 404)
            #expect(try await s.client.send("GET", "/assets/leaflet/../../../../etc/passwd").status == 404)
        }
    }

    @Test("the feed sends a heartbeat when it opens and every configured interval after, on the feed's clock", arguments: Backend.enabled)
    func heartbeat(backend: Backend) async throws {
        let tick = VirtualClock()
        let twoSeconds: (inout ConsoleConfiguration) -> Void = { $0.feedHeartbeat = .seconds(2) }
        let tickClock: (inout ServerConfiguration) -> Void = { $0.feedTickClock = tick }
        try await TestServer.with(backend, console: twoSeconds, configure: tickClock) { s in
            let dispatcher = try await s.dispatcher()
            let feed = try SSETestClient(port: s.port, token: dispatcher, heartbeats: true)
            defer { feed.close() }
            let first = try await feed.nextEvents(1)
            #expect(first.map(\.event) == ["heartbeat"])
            // Without an id: a heartbeat must not move the page's Last-Event-ID.
            #expect(first.first?.id == nil)
            let data = try #require(try JSONSerialization.jsonObject(with: Data(first[0].data.utf8)) as? [String: Any])
            #expect((data["interval_ms"] as? NSNumber)?.int64Value == 2000)
            #expect((data["at_ms"] as? NSNumber)?.int64Value == TestServer.startWall)

            // The tick sleeps on its clock; one configured interval later the stream hears again.
            try await eventually("the feed's tick waits on its clock", within: .seconds(30)) { tick.sleeperCount == 1 }
            s.wall.advance(milliseconds: 2000)
            tick.advance(by: .seconds(2))
            let next = try await feed.nextEvents(1)
            #expect(next.map(\.event) == ["heartbeat"])
            let nextData = try #require(try JSONSerialization.jsonObject(with: Data(next[0].data.utf8)) as? [String: Any])
            #expect((nextData["at_ms"] as? NSNumber)?.int64Value == TestServer.startWall + 2000)

            // The page reads the interval before its first heartbeat arrives.
            let config = try await s.client.send("GET", "/v1/console/config")
            #expect((config.object["feed_heartbeat_ms"] as? NSNumber)?.int64Value == 2000)
        }
    }
}
