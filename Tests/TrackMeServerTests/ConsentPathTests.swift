import Foundation
import GRDB
import Hummingbird
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO
#endif

/// Every path to a person's data passes `AccessPolicy`: the dispatcher feed (bounded replay,
/// references not dossiers), the devices list and care settings, the alert detail (bounded
/// whatever the fleet and the alert's age), path ids decoded on every route, and a table of
/// routes the router is held to. Both backends.
@Suite("Consent on every path")
struct ConsentPathTests {
    static let day: Int64 = 86_400_000

    static func events(until marker: String, on feed: SSETestClient) async throws -> [SSETestClient.Event] {
        var seen: [SSETestClient.Event] = []
        while !seen.contains(where: { $0.data.contains("\"\(marker)\"") }) {
            seen += try await feed.nextEvents(1)
        }
        return seen
    }

    @Test("the feed replays only a short window, only alerts the dispatcher may handle, and carries no dossier", arguments: Backend.enabled)
    func feedReplayBounded(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let person: [String: Any] = [
                "name": "Olga Replay", "age": 84, "notes": "door code 4711", "contacts": [["name": "Pieter Replay", "phone": "+31 555 0199"]],
            ]
            let enrolled = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-old", "person": person]
            )
            let old = try #require(enrolled.object["token"] as? String)
            // An alert closed three days ago, and one left open since then.
            #expect(try await s.postAlert(Sample.alert("pi-old", id: "closed-long-ago"), token: old).status == 200)
            #expect(try await s.postAlert(Sample.alert("pi-old", id: "closed-long-ago", updateSeq: 1, type: .cancelled), token: old).status == 200)
            #expect(try await s.postAlert(Sample.alert("pi-old", id: "open-for-days"), token: old).status == 200)
            s.wall.advance(milliseconds: 3 * Self.day)
            let now = try await s.enrol("pi-now")
            #expect(try await s.postAlert(Sample.alert("pi-now", id: "open-now"), token: now).status == 200)
            let dispatcher = try await s.dispatcher()

            // Resuming from the feed's very beginning.
            let feed = try SSETestClient(port: s.port, token: dispatcher, lastEventID: "0")
            defer { feed.close() }
            let first = try await feed.nextEvents(1)
            #expect(first.map(\.event) == ["feed_reset"], "\(first)")
            #expect(try await s.postAlert(Sample.alert("pi-now", id: "marker"), token: now).status == 200)
            let seen = first + (try await Self.events(until: "marker", on: feed))
            let text = seen.map(\.data).joined(separator: "\n")
            for absent in ["closed-long-ago", "open-for-days", "Olga Replay", "door code", "Pieter", "\"person\""] {
                #expect(!text.contains(absent), "\(absent) replayed: \(text)")
            }
            #expect(seen.filter { $0.event == "alert" }.compactMap { AlertReferenceProbe.alertID($0.data) } == ["open-now", "marker"])
            // What the board needs is in the event itself.
            let reference = try #require(seen.first { $0.data.contains("\"open-now\"") })
            let data = try #require(try JSONSerialization.jsonObject(with: Data(reference.data.utf8)) as? [String: Any])
            #expect(data["kind"] as? String == "no_pulse" && data["type"] as? String == "raised" && data["device_id"] as? String == "pi-now")
            #expect((data["position"] as? [String: Any])?["lat"] as? Double == 44.07)

            // The dossier comes with the detail, under the policy and into the person's access log.
            let logged = try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM access_log WHERE subject = 'device:pi-old'")
            let detail = try await s.client.send("GET", "/v1/alerts/open-for-days", token: dispatcher)
            #expect(detail.status == 200)
            #expect(((detail.object["alert"] as? [String: Any])?["person"] as? [String: Any])?["notes"] as? String == "door code 4711")
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM access_log WHERE subject = 'device:pi-old'") == logged + 1)
            #expect(try await s.client.send("GET", "/v1/alerts/closed-long-ago", token: dispatcher).status == 403)

            // A resume inside the window gets exactly what came after it.
            let lastID = try #require(seen.last?.id)
            #expect(try await s.postAlert(Sample.alert("pi-now", id: "after-resume"), token: now).status == 200)
            let resumed = try SSETestClient(port: s.port, token: dispatcher, lastEventID: "\(lastID)")
            defer { resumed.close() }
            let next = try await resumed.nextEvents(1)
            #expect(next.map(\.event) == ["alert"] && next.first?.data.contains("\"after-resume\"") == true, "\(next)")
        }
    }

    @Test(
        "an alert id with a space or a slash is opened, noted, acknowledged and resolved",
        arguments: Backend.enabled
    )
    func pathIDsDecoded(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let id = "night alert/2"
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: id), token: token).status == 200)
            let dispatcher = try await s.dispatcher()
            let path = "/v1/alerts/night%20alert%2F2"
            let detail = try await s.client.send("GET", path, token: dispatcher)
            #expect(detail.status == 200, "\(detail.text)")
            #expect((detail.object["alert"] as? [String: Any])?["alert_id"] as? String == id)
            #expect(try await s.client.send("POST", path + "/notes", token: dispatcher, json: ["text": "on the way"]).status == 201)
            #expect(try await s.client.send("POST", path + "/ack", token: dispatcher).status == 200)
            let resolved = try await s.client.send("POST", path + "/resolve", token: dispatcher, json: ["outcome": "help_arrived"])
            #expect(resolved.status == 200 && resolved.object["alert_id"] as? String == id, "\(resolved.text)")
        }
    }

    @Test(
        "a dispatcher sees every device's health and a person only around an alert being handled, logged; care settings likewise",
        arguments: Backend.enabled
    )
    func devicesAndCareUnderPolicy(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            for (id, name) in [("pi-a", "Anna Alert"), ("pi-b", "Bert Quiet")] {
                let enrolled = try await s.client.send(
                    "POST",
                    "/v1/devices",
                    token: TestServer.adminToken,
                    json: ["device_id": id, "person": ["name": name, "age": 70]]
                )
                let token = try #require(enrolled.object["token"] as? String)
                #expect(try await s.send(Sample.batch(id, seq: 1, readings: []), token: token).status == 200)
                if id == "pi-a" { #expect(try await s.postAlert(Sample.alert(id, id: "alert-a"), token: token).status == 200) }
            }
            let dispatcher = try await s.dispatcher()
            let list = try await s.client.send("GET", "/v1/devices", token: dispatcher)
            #expect(list.status == 200)
            let devices = try #require(list.object["devices"] as? [[String: Any]])
            let byID = Dictionary(uniqueKeysWithValues: devices.compactMap { d in (d["device_id"] as? String).map { ($0, d) } })
            #expect(byID.count == 2)
            #expect(byID["pi-b"]?["heartbeat"] is [String: Any], "health is shown")
            #expect(!list.text.contains("Bert Quiet"), "\(list.text)")
            #expect((byID["pi-a"]?["person"] as? [String: Any])?["name"] as? String == "Anna Alert")
            #expect(
                try await DatabaseScan.count(
                    s.server.store,
                    "SELECT count(*) FROM access_log WHERE subject = 'device:pi-a' AND reader_role = 'dispatcher'"
                ) >= 1
            )
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM access_log WHERE subject = 'device:pi-b'") == 0)
            // Admins see everyone (and are not the subject of this rule).
            #expect(try await s.client.send("GET", "/v1/devices", token: TestServer.adminToken).text.contains("Bert Quiet"))
            // Care settings: around the alert only, and logged.
            #expect(try await s.client.send("GET", "/v1/devices/pi-b/care-settings", token: dispatcher).status == 403)
            let before = try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM access_log WHERE subject = 'device:pi-a'")
            #expect(try await s.client.send("GET", "/v1/devices/pi-a/care-settings", token: dispatcher).status == 200)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM access_log WHERE subject = 'device:pi-a'") == before + 1)
        }
    }

    @Test("the alert detail reads the newest positions and every other update, however long the alert ran", arguments: Backend.enabled)
    func detailBoundedInAge(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "long"), token: token).status == 200)
            let positions = AlertsRoom.trackPositions + 150
            for seq in 1...positions {
                var update = Sample.alert("pi-0001", id: "long", updateSeq: seq, type: .position)
                update.alert.position?.fix.latitude = 44.0 + Double(seq) * 0.0001
                #expect(
                    try await s.server.ingestStore.recordAlertUpdate(
                        update,
                        body: try StoreJSON.encode(update),
                        feedData: "{}",
                        receivedMilliseconds: s.wall.now + Int64(seq) * 1000
                    ) != .foreignAlert
                )
            }
            var kindChanged = Sample.alert("pi-0001", id: "long", updateSeq: positions + 1, type: .kindChanged)
            kindChanged.alert.kind = .manual
            kindChanged.alert.position?.fix.latitude = 44.0 + Double(positions) * 0.0001
            #expect(try await s.postAlert(kindChanged, token: token).status == 200)
            let dispatcher = try await s.dispatcher()
            let detail = try await s.client.send("GET", "/v1/alerts/long", token: dispatcher)
            #expect(detail.status == 200)
            let track = try #require(detail.object["track"] as? [[String: Any]])
            // The raised update's position, the newest positions; the kind change's repeats the last.
            #expect(track.count == AlertsRoom.trackPositions + 1, "\(track.count)")
            #expect(track.last?["lat"] as? Double == 44.0 + Double(positions) * 0.0001)
            let timeline = try #require(detail.object["timeline"] as? [[String: Any]]).compactMap { $0["event"] as? String }
            #expect(timeline.contains("raised") && timeline.contains("delivered") && timeline.contains("kind_changed"), "\(timeline)")
        }
    }

    @Test("every table of the database is declared by a room: reached by erasure, or saying why it holds no one", arguments: Backend.enabled)
    func everyTableDeclared(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let tables = Set(try await DatabaseScan.tables(in: s.server.store))
            let declared = PersonalTables.all.map(\.name)
            #expect(declared.count == Set(declared).count, "a table declared twice")
            #expect(tables.subtracting(declared).isEmpty, "tables no room declares: \(tables.subtracting(declared).sorted())")
            #expect(Set(declared).subtracting(tables).isEmpty, "declared tables that do not exist: \(Set(declared).subtracting(tables).sorted())")
            for table in PersonalTables.all {
                #expect(!table.keys.isEmpty || table.holdsNoOne != nil, "\(table.name) neither reaches a person nor says why it holds none")
            }
        }
    }

    @Test("retention ages the group figures' summaries and answers, finished runs' entries and silent taxis' rows", arguments: Backend.enabled)
    func retentionOfEveryKind(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            #expect(
                try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.fix(seq: 2)]), token: token).status
                    == 200
            )
            let store = s.server.store
            s.wall.advance(milliseconds: Self.day)
            try await GroupFigureDesk(store: store, wallClock: { s.wall.now }).rollUp()
            #expect(try await DatabaseScan.count(store, "SELECT count(*) FROM person_days WHERE person_key = 'device:pi-0001'") == 1)
            let cell = GroupFigures.Cell(ageBandFrom: 0, ageBandTo: 10, south: 0, west: 0, north: 10, east: 10, dayFrom: 0, dayTo: 1)
            try await store.recordAnsweredGroup(AnsweredGroup(organisationID: "org", cell: cell, people: 1001, atMilliseconds: s.wall.now))
            let path = try RunPath(points: [[44.07, -121.31], [44.08, -121.31]])
            let run = Run(
                id: "run-1",
                code: "RUN-1",
                name: "Morning",
                organiserAccountID: "org",
                startMilliseconds: s.wall.now - 3_600_000,
                endMilliseconds: s.wall.now,
                enrolmentOpen: false,
                path: path,
                createdMilliseconds: s.wall.now - Self.day
            )
            #expect(try await s.server.runStore.insertRun(run))
            try await s.server.runStore.saveRunEntry(
                RunEntry(
                    runID: "run-1",
                    deviceID: "pi-0001",
                    name: "Runner One",
                    showToSpectators: true,
                    enrolledMilliseconds: s.wall.now - Self.day,
                    checkedInMilliseconds: nil,
                    latitude: 44.075,
                    longitude: -121.31,
                    fixMilliseconds: s.wall.now,
                    distanceMetres: 500,
                    receivedMilliseconds: s.wall.now
                )
            )
            try await store.saveFleetTaxi(FleetTaxi(deviceID: "pi-0001", name: "Cab 1", state: "available", lastReportMilliseconds: s.wall.now))
            for table in ["person_days", "group_queries", "run_entries", "fleet_taxis"] {
                #expect(try await DatabaseScan.count(store, "SELECT count(*) FROM \(table)") == 1, "\(table) filled")
            }
            s.wall.advance(milliseconds: 30 * Self.day)
            await s.runJobs(advancingBy: .seconds(30 * 86_400))
            for table in ["person_days", "group_queries", "run_entries", "fleet_taxis"] {
                #expect(try await DatabaseScan.count(store, "SELECT count(*) FROM \(table)") == 1, "\(table) kept within the period")
            }
            s.wall.advance(milliseconds: 31 * Self.day)
            await s.runJobs(advancingBy: .seconds(31 * 86_400))
            for table in ["person_days", "group_queries", "run_entries", "fleet_taxis"] {
                #expect(try await DatabaseScan.count(store, "SELECT count(*) FROM \(table)") == 0, "\(table) aged")
            }
            // The person is active: their device stays.
            #expect(try await DatabaseScan.count(store, "SELECT count(*) FROM devices") == 1)
        }
    }

    @Test(
        "every route is declared; every route that reads a person's data turns away who the policy turns away, and tells them nothing",
        arguments: Backend.enabled
    )
    func everyRouteUnderThePolicy(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let routes = s.server.hall.makeRouter().routes.map { "\($0.method) \($0.path)" }
            #expect(routes.count > 60)
            let undeclared = routes.filter { RouteAccess.table[$0] == nil }
            #expect(undeclared.isEmpty, "routes without a declared access requirement: \(undeclared)")
            let stale = Set(RouteAccess.table.keys).subtracting(routes)
            #expect(stale.isEmpty, "declared routes the router does not have: \(stale.sorted())")
            let declarations = RouteAccess.rooms.map(\.count).reduce(0, +)
            #expect(declarations == RouteAccess.table.count, "a route declared by two rooms")

            // A person with data on every side: readings, an alert closed three days ago, care settings.
            let marker = "Quentin Marker"
            let enrolled = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-subject", "person": ["name": marker, "age": 70, "notes": "key under the mat"]]
            )
            let device = try #require(enrolled.object["token"] as? String)
            #expect(
                try await s.send(Sample.batch("pi-subject", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.fix(seq: 2)]), token: device).status
                    == 200
            )
            #expect(try await s.postAlert(Sample.alert("pi-subject", id: "subject-alert"), token: device).status == 200)
            #expect(
                try await s.postAlert(Sample.alert("pi-subject", id: "subject-alert", updateSeq: 1, type: .cancelled), token: device).status == 200
            )
            let wearerID = try await s.createAccount("quentin", role: "wearer", displayName: marker)
            #expect(
                try await s.client.send("POST", "/v1/people/\(wearerID)/devices", token: TestServer.adminToken, json: ["device_id": "pi-subject"])
                    .status == 201
            )
            s.wall.advance(milliseconds: 3 * Self.day)

            // Who the policy turns away: a dispatcher with no alert of the person being handled,
            // an organisation without consent, another wearer.
            let dispatcher = try await s.dispatcher()
            let organisation = try await s.organisation("org-probe", name: "Probe Org")
            _ = try await s.wearer("other-wearer", device: "pi-other")
            let other = try await s.signIn("other-wearer")
            let values = ["/v1/people/": wearerID, "/v1/devices/": "pi-subject", "/v1/alerts/": "subject-alert"]
            var probed = 0
            for route in routes.sorted() {
                guard case .personData = RouteAccess.table[route], route.hasPrefix("GET "), !route.hasSuffix("/stream") else { continue }
                var path = String(route.dropFirst(4))
                let value = values.first { path.hasPrefix($0.key) }?.value ?? "x"
                for parameter in ["{id}", "{carer}"] { path = path.replacingOccurrences(of: parameter, with: value) }
                if path == "/v1/alerts" { path += "?status=closed" }
                let answers = [
                    ("dispatcher", try await s.client.send("GET", path, token: dispatcher)),
                    ("organisation", try await s.page("GET", path, organisation)),
                    ("another wearer", try await s.page("GET", path, other)),
                ]
                for (who, answer) in answers {
                    #expect(
                        answer.status != 200 || !(answer.text.contains(marker) || answer.text.contains("key under the mat")),
                        "\(route) as \(who): \(answer.status) \(answer.text.prefix(300))"
                    )
                    #expect(answer.status < 500, "\(route) as \(who): \(answer.status)")
                }
                probed += 1
            }
            #expect(probed >= 15)
            // Without credentials, only the open routes answer.
            for route in routes.sorted() where RouteAccess.table[route] != .open && !route.hasSuffix("/stream") {
                let method = String(route.prefix { $0 != " " })
                var path = String(route.dropFirst(method.count + 1))
                for parameter in ["{id}", "{carer}", "{token}"] { path = path.replacingOccurrences(of: parameter, with: "x") }
                let answer = try await (method == "GET" ? s.client.send(method, path) : s.client.send(method, path, json: [:]))
                #expect([401, 403].contains(answer.status), "\(route) without credentials: \(answer.status)")
            }
            // A device's door lets device tokens in, and no other.
            var doors = 0
            for route in routes.sorted() where RouteAccess.table[route] == .device {
                let method = String(route.prefix { $0 != " " })
                let path = String(route.dropFirst(method.count + 1))
                let answer = try await s.client.send(method, path, token: dispatcher, json: [:])
                #expect(answer.status == 403, "\(route) with a dispatcher token: \(answer.status)")
                doors += 1
            }
            #expect(doors == 4)
        }
    }
}

/// The alert id of an `alert` event's data.
enum AlertReferenceProbe {
    static func alertID(_ data: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])?["alert_id"] as? String
    }
}
