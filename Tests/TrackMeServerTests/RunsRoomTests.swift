import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The runs room over HTTP: the public list, the organiser's side (cap, removal, health under
/// consent, close with standings), the spectators' live feed, and courses that are no course.
@Suite("Runs room: the public list, the organiser, the live feed")
struct RunsRoomTests {
    /// A runner's device reporting one fix `metres` up the course at `wall`, and optionally a heart rate.
    struct Runner {
        let s: TestServer
        let id: String
        let token: String
        let code: String
        var seq: Int64 = 0
        var show = true
        var health = false
        var checkedIn: Int64?

        init(_ s: TestServer, _ id: String, name: String, code: String) async throws {
            self.s = s
            self.id = id
            self.code = code
            token = try await s.enrol(id, name: name)
        }

        mutating func report(metres: Double, at wall: Int64, bpm: Int? = nil) async throws {
            seq += 1
            var readings = [RaceSample.fix(seq: seq * 2, metres: metres, wall: wall)]
            if let bpm { readings.append(Sample.heartRate(seq: seq * 2 + 1, bpm: bpm, wall: wall)) }
            let participation = RunParticipation(code: code, showToSpectators: show, shareHealth: health, checkedInMilliseconds: checkedIn)
            let batch = RaceSample.batch(id, seq: seq, readings: readings) {
                $0.profile = .runner
                $0.run = participation
            }
            let response = try await s.send(batch, token: token)
            try #require(response.status == 200, "batch: \(response.text)")
        }
    }

    static func createRun(
        _ s: TestServer,
        _ session: BrowserSession,
        name: String,
        place: String,
        code: String,
        start: Int64,
        cap: Int? = nil
    ) async throws -> String {
        var body: [String: Any] = ["name": name, "place": place, "start_ms": start, "end_ms": start + 3_600_000, "code": code, "gpx": RaceSample.gpx]
        if let cap { body["cap"] = cap }
        let created = try await s.page("POST", "/v1/runs", session, json: body)
        try #require(created.status == 201, "create: \(created.text)")
        let id = try #require(created.object["id"] as? String)
        #expect(try await s.page("POST", "/v1/runs/\(id)/enrolment", session, json: ["open": true]).status == 200)
        return id
    }

    @Test("the public list: upcoming, live and finished runs, found by name or place", arguments: Backend.enabled)
    func publicList(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let now = s.wall.now
            let live = try await Self.createRun(s, olga, name: "City 10K", place: "Turin", code: "CITY-10K", start: now - 60_000)
            let upcoming = try await Self.createRun(s, olga, name: "Night Trail", place: "Aosta Valley", code: "NIGHT", start: now + 86_400_000)
            let done = try await Self.createRun(s, olga, name: "Park Run", place: "Turin Parco", code: "PARK", start: now - 600_000)
            #expect(try await s.page("POST", "/v1/runs/\(done)/close", olga).status == 200)

            func listed(_ query: String) async throws -> [String: String] {
                let answer = try await s.client.send("GET", "/v1/public/runs\(query)")
                try #require(answer.status == 200, "\(query): \(answer.text)")
                let runs = try #require(answer.object["runs"] as? [[String: Any]])
                return Dictionary(
                    uniqueKeysWithValues: runs.compactMap { run in (run["id"] as? String).map { ($0, run["status"] as? String ?? "") } }
                )
            }
            #expect(try await listed("") == [live: "live", upcoming: "upcoming", done: "finished"])
            #expect(try await listed("?q=turin") == [live: "live", done: "finished"], "by place, whatever the case")
            #expect(try await listed("?q=TRAIL") == [upcoming: "upcoming"], "by name")
            #expect(try await listed("?q=turin&status=live") == [live: "live"])
            #expect(try await listed("?status=finished") == [done: "finished"])
            #expect(try await listed("?q=nowhere").isEmpty)
            let bad = try await s.client.send("GET", "/v1/public/runs?status=soon")
            #expect(bad.status == 400 && bad.errorField == "status")
            let long = try await s.client.send("GET", "/v1/public/runs?q=\(String(repeating: "a", count: 101))")
            #expect(long.status == 400 && long.errorField == "q")
            // The list holds no code and no organiser: nothing to enrol with, nobody to find.
            let all = try await s.client.send("GET", "/v1/public/runs")
            #expect(!all.text.contains("CITY-10K") && !all.text.contains("olga"))
            let page = try await s.client.send("GET", "/runs")
            #expect(page.status == 200 && page.text.contains("/assets/runs.js"))
            #expect(try await s.client.send("GET", "/organise").status == 200)
        }
    }

    @Test(
        "the organiser: a cap, removal of who did not check in, heart rate only under consent and logged, the close with standings",
        arguments: Backend.enabled
    )
    func organiser(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser", displayName: "Olga Organiser")
            let olga = try await s.signIn("olga")
            let start = s.wall.now + 60_000
            let runID = try await Self.createRun(s, olga, name: "City 1K", place: "Turin", code: "CITY-1K", start: start, cap: 3)
            s.wall.advance(milliseconds: 200_000)
            var ann = try await Runner(s, "r-ann", name: "Ann Consenting", code: "CITY-1K")
            ann.health = true
            ann.checkedIn = start - 5_000
            var bob = try await Runner(s, "r-bob", name: "Bob Private", code: "CITY-1K")
            bob.checkedIn = start - 5_000
            var cat = try await Runner(s, "r-cat", name: "Cat Absent", code: "CITY-1K")
            var dan = try await Runner(s, "r-dan", name: "Dan Over Cap", code: "CITY-1K")
            try await ann.report(metres: 0, at: start, bpm: 100)
            try await bob.report(metres: 0, at: start, bpm: 101)
            try await cat.report(metres: 0, at: start - 60_000)
            try await dan.report(metres: 0, at: start)

            var view = try await s.page("GET", "/v1/runs/\(runID)", olga)
            var entries = try #require(view.object["entries"] as? [[String: Any]])
            #expect(entries.compactMap { $0["device_id"] as? String }.sorted() == ["r-ann", "r-bob", "r-cat"], "the cap of 3 kept Dan out")

            // Cat never checked in: taken off, and her device's next report does not enter her again.
            let keepBob = try await s.page("POST", "/v1/runs/\(runID)/removals", olga, json: ["device_id": "r-bob"])
            #expect(keepBob.status == 409, "Bob checked in: \(keepBob.text)")
            #expect(try await s.page("POST", "/v1/runs/\(runID)/removals", olga, json: ["device_id": "r-cat"]).status == 200)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/removals", olga, json: ["device_id": "r-cat"]).status == 404)
            try await cat.report(metres: 50, at: start + 10_000)

            // Live: both run with a strap on; only Ann agreed to show her heart rate.
            try await ann.report(metres: 400, at: start + 120_000, bpm: 162)
            try await bob.report(metres: 300, at: start + 120_000, bpm: 171)
            view = try await s.page("GET", "/v1/runs/\(runID)", olga)
            #expect(view.object["status"] as? String == "live")
            entries = try #require(view.object["entries"] as? [[String: Any]])
            #expect(entries.compactMap { $0["device_id"] as? String } == ["r-ann", "r-bob"], "Cat is off the run")
            let annView = try #require(entries.first { $0["device_id"] as? String == "r-ann" })
            let bobView = try #require(entries.first { $0["device_id"] as? String == "r-bob" })
            #expect((annView["health"] as? [String: Any])?["heart_rate_bpm"] as? Int == 162)
            #expect(annView["shares_health"] as? Bool == true)
            #expect(bobView["health"] is NSNull, "Bob did not consent: \(bobView)")
            #expect(!view.text.contains("171"), "Bob's heart rate is nowhere in the answer")
            // A backlog from before (older fix, older heart rate) arrives late: the newest stays.
            try await ann.report(metres: 200, at: start + 60_000, bpm: 140)
            let afterBacklog = try await s.page("GET", "/v1/runs/\(runID)", olga)
            let annAfter = try #require((afterBacklog.object["entries"] as? [[String: Any]])?.first { $0["device_id"] as? String == "r-ann" })
            #expect((annAfter["health"] as? [String: Any])?["heart_rate_bpm"] as? Int == 162, "\(annAfter)")

            // The runners' access logs show the organiser's reads, by name, once per span.
            let annLog = try await s.server.store.accessLog(subjects: ["device:r-ann"], limit: 10)
            let bobLog = try await s.server.store.accessLog(subjects: ["device:r-bob"], limit: 10)
            #expect(annLog.contains { $0.readerName == "Olga Organiser" && $0.what.contains("heart rate") && $0.reason == "joined_run" })
            #expect(bobLog.contains { $0.readerName == "Olga Organiser" && $0.what == "position in the run City 1K" })
            #expect(!bobLog.contains { $0.what.contains("heart rate") })
            _ = try await s.page("GET", "/v1/runs/\(runID)", olga)
            #expect(try await s.server.store.accessLog(subjects: ["device:r-bob"], limit: 10).count == bobLog.count)

            // A runner may withdraw their health consent; it is not given later.
            s.wall.advance(milliseconds: 20_000)
            ann.health = false
            try await ann.report(metres: 500, at: start + 150_000, bpm: 163)
            bob.health = true
            try await bob.report(metres: 400, at: start + 150_000, bpm: 172)
            view = try await s.page("GET", "/v1/runs/\(runID)", olga)
            #expect(!view.text.contains("\"heart_rate_bpm\""), "no health once Ann withdrew and Bob never gave it at enrolment")

            // Closed: final standings with time, distance and pace; enrolment shut for good.
            let closed = try await s.page("POST", "/v1/runs/\(runID)/close", olga)
            try #require(closed.status == 200, "close: \(closed.text)")
            #expect(closed.object["status"] as? String == "finished")
            let standings = try #require(closed.object["entries"] as? [[String: Any]])
            #expect(standings.compactMap { $0["device_id"] as? String } == ["r-ann", "r-bob"])
            let first = try #require(standings.first)
            let elapsed = try #require(first["elapsed_s"] as? Double)
            let distance = try #require(first["distance_m"] as? Double)
            #expect(abs(elapsed - 150) < 0.01, "from the gun to Ann's last fix")
            #expect(abs(distance - 500) < 2)
            #expect(abs((first["pace_s_per_km"] as? Double ?? 0) - elapsed / (distance / 1000)) < 0.1)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/enrolment", olga, json: ["open": true]).status == 409)
            // Fixes after the close count for nothing.
            try await bob.report(metres: 900, at: start + 200_000)
            let after = try await s.page("GET", "/v1/runs/\(runID)", olga)
            let bobAfter = try #require((after.object["entries"] as? [[String: Any]])?.first { $0["device_id"] as? String == "r-bob" })
            #expect(abs((bobAfter["distance_m"] as? Double ?? 0) - 400) < 2)
            let csv = try await s.page("GET", "/v1/runs/\(runID)/results.csv", olga)
            #expect(csv.text.hasPrefix("rank,name,distance_m,checked_in_ms,last_fix_ms,finish_ms,elapsed_s,time_s,pace_s_per_km\n1,Ann Consenting,"))
        }
    }

    @Test("a runner's public position ends with the run: a closed run serves standings without positions", arguments: Backend.enabled)
    func positionsEndWithTheRun(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let start = s.wall.now - 60_000
            let runID = try await Self.createRun(s, olga, name: "Short", place: "Turin", code: "SHORT", start: start)
            var ann = try await Runner(s, "r-ann", name: "Ann Runner", code: "SHORT")
            try await ann.report(metres: 0, at: start)
            try await ann.report(metres: 200, at: start + 30_000)
            let live = try await s.client.send("GET", "/v1/public/runs/\(runID)")
            let liveRunner = try #require((live.object["runners"] as? [[String: Any]])?.first)
            #expect(liveRunner["lat"] is Double && liveRunner["lon"] is Double)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/close", olga).status == 200)
            let closed = try await s.client.send("GET", "/v1/public/runs/\(runID)")
            #expect(closed.object["status"] as? String == "finished")
            let closedRunner = try #require((closed.object["runners"] as? [[String: Any]])?.first)
            #expect(closedRunner["name"] as? String == "Ann Runner", "the standings stay")
            #expect(closedRunner["lat"] is NSNull && closedRunner["lon"] is NSNull, "the position goes: \(closedRunner)")

            // A run past its end without a close is finished the same way.
            let other = try await Self.createRun(s, olga, name: "Old", place: "Turin", code: "OLD-RUN", start: s.wall.now - 30_000)
            var bob = try await Runner(s, "r-bob", name: "Bob Runner", code: "OLD-RUN")
            try await bob.report(metres: 0, at: s.wall.now - 30_000)
            try await bob.report(metres: 100, at: s.wall.now - 1_000)
            s.wall.advance(milliseconds: 3_600_000)
            let ended = try await s.client.send("GET", "/v1/public/runs/\(other)")
            #expect(ended.object["status"] as? String == "finished")
            #expect(((ended.object["runners"] as? [[String: Any]])?.first?["lat"]) is NSNull)
        }
    }

    @Test(
        "spectators follow a live feed: standings as runners move, then the finish without positions, and the stream ends",
        arguments: Backend.enabled
    )
    func liveFeed(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let start = s.wall.now - 60_000
            let runID = try await Self.createRun(s, olga, name: "Feed", place: "Turin", code: "FEED", start: start)
            var ann = try await Runner(s, "r-ann", name: "Ann Runner", code: "FEED")
            try await ann.report(metres: 0, at: start)
            let feed = try SSETestClient(port: s.port, token: "", path: "/v1/public/runs/\(runID)/stream")
            defer { feed.close() }
            var events = feed.items.makeAsyncIterator()
            func next() async throws -> SSETestClient.Event {
                while let item = await events.next() {
                    switch item {
                    case .status(let code): try #require(code == 200)
                    case .event(let event): return event
                    case .ended(let why): throw SSETestClient.Failure(description: "stream ended: \(why)")
                    }
                }
                throw SSETestClient.Failure(description: "stream ended")
            }
            func distance(_ event: SSETestClient.Event) throws -> Double? {
                let object = try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any]
                return (object?["runners"] as? [[String: Any]])?.first?["distance_m"] as? Double
            }
            let first = try await next()
            #expect(first.event == "standings")
            #expect(try distance(first) == 0)
            try await ann.report(metres: 300, at: start + 40_000)
            var moved = try await next()
            while try distance(moved) == 0 { moved = try await next() }
            #expect(moved.event == "standings")
            #expect(abs((try distance(moved) ?? 0) - 300) < 2)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/close", olga).status == 200)
            var last = try await next()
            while last.event == "standings" { last = try await next() }
            #expect(last.event == "finished")
            #expect(!last.data.contains("\"lat\":4"), "no position in the finish: \(last.data)")
            #expect(last.data.contains("Ann Runner"))
            // The stream ends after the finish.
            var ended = false
            while let item = await events.next() {
                if case .ended = item { ended = true }
            }
            #expect(ended)
            // A finished run's feed answers the finish at once and ends.
            let again = try SSETestClient(port: s.port, token: "", path: "/v1/public/runs/\(runID)/stream")
            defer { again.close() }
            var replay = again.items.makeAsyncIterator()
            var kinds: [String] = []
            while let item = await replay.next() {
                if case .event(let event) = item { kinds.append(event.event) }
            }
            #expect(kinds == ["finished"])
            #expect(try await s.client.send("GET", "/v1/public/runs/nosuchrun/stream").status == 404)
        }
    }

    @Test("a course from drawn points; a course that is no course is a clear 400 naming the field", arguments: [Backend.sqlite])
    func courses(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let start = s.wall.now + 3_600_000
            let drawn = try await s.page(
                "POST",
                "/v1/runs",
                olga,
                json: ["name": "Drawn", "start_ms": start, "points": [[45.0, 7.0], [45.001, 7.0], [45.002, 7.001]]]
            )
            #expect(drawn.status == 201, "\(drawn.text)")
            #expect(abs((drawn.object["length_m"] as? Double ?? 0) - 247) < 5)
            let bad: [([String: Any], String)] = [
                (["points": [[45.0, 7.0]]], "points"),
                (["points": [[95.0, 7.0], [45.0, 7.0]]], "points"),
                (["points": [[45.0], [45.0, 7.0]]], "points"),
                ([:], "gpx"),
                (["gpx": RaceSample.gpx, "points": [[45.0, 7.0], [45.001, 7.0]]], "gpx"),
            ]
            for (course, field) in bad {
                var body: [String: Any] = ["name": "Bad", "start_ms": start]
                body.merge(course) { _, new in new }
                let answer = try await s.page("POST", "/v1/runs", olga, json: body)
                #expect(answer.status == 400 && answer.errorField == field, "\(course): \(answer.status) \(answer.text)")
            }
            let hostile = [
                "",
                "not xml at all",
                "<gpx><trk><trkseg><trkpt lat=\"45\" lon=\"7\"></trkseg></trk>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat=\"nan\" lon=\"7\"/></gpx>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat=\"inf\" lon=\"7\"/></gpx>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat=\"1e400\" lon=\"7\"/></gpx>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat=\"45.1\"",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat='45.1 lon='7'/></gpx>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/><trkpt lat=\"&lat;\" lon=\"7\"/></gpx>",
                "<!DOCTYPE gpx [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><gpx><trkpt lat=\"&b;\" lon=\"7\"/></gpx>",
                "<gpx><trkpt lat=\"45\" lon=\"7\"/></gpx>",
                "<gpx>" + String(repeating: "<trkpt lat=\"45\" lon=\"7\"/>", count: RunPath.maximumPoints + 1) + "</gpx>",
                "<gpx>" + String(repeating: "<trkpt ", count: 50_000) + "</gpx>",
                String(repeating: "<", count: 100_000),
            ]
            for gpx in hostile {
                let answer = try await s.page("POST", "/v1/runs", olga, json: ["name": "Hostile", "start_ms": start, "gpx": gpx])
                #expect(answer.status == 400 && answer.errorField == "gpx", "\(gpx.prefix(80)): \(answer.status) \(answer.text.prefix(200))")
            }
            // Route points serve when there is no track; the server is still up after all of it.
            let route = "<gpx version=\"1.1\"><rte><rtept lat=\"45\" lon=\"7\"/><rtept lat=\"45.001\" lon=\"7\"/></rte></gpx>"
            #expect(try await s.page("POST", "/v1/runs", olga, json: ["name": "Route", "start_ms": start, "gpx": route]).status == 201)
        }
    }

    @Test("the room's doors are its declaration: open routes for anyone, the organiser's for organisers (and the admin) only")
    func doors() async throws {
        try await TestServer.with(.sqlite) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let runID = try await Self.createRun(s, olga, name: "Doors", place: "Turin", code: "DOORS", start: s.wall.now + 3_600_000)
            let dispatcher = try await s.dispatcher()
            let device = try await s.enrol("r-door", name: "Door Runner")
            let (_, _) = try await s.wearer("walter", device: "pi-walter")
            let walter = try await s.signIn("walter")
            var guarded = 0
            for (route, requirement) in RunsRoom.access.sorted(by: { $0.key < $1.key }) {
                let method = String(route.prefix { $0 != " " })
                let path = String(route.dropFirst(method.count + 1)).replacingOccurrences(of: "{id}", with: runID)
                if path.hasSuffix("/stream") { continue }
                func ask(token: String?) async throws -> Int {
                    try await (method == "GET" ? s.client.send(method, path, token: token) : s.client.send(method, path, token: token, json: [:]))
                        .status
                }
                switch requirement {
                case .open:
                    #expect(try await ask(token: nil) == 200, "\(route) without credentials")
                case .roles(let roles), .personData(let roles):
                    #expect(roles == [.organiser, .admin], "\(route)")
                    #expect(try await ask(token: nil) == 401, "\(route) without credentials")
                    #expect(try await ask(token: dispatcher) == 403, "\(route) as a dispatcher")
                    #expect(try await ask(token: device) == 403, "\(route) as a device")
                    let asWearer = try await (method == "GET" ? s.page(method, path, walter) : s.page(method, path, walter, json: [:])).status
                    #expect(asWearer == 403, "\(route) as a wearer")
                    let asOrganiser = try await (method == "GET" ? s.page(method, path, olga) : s.page(method, path, olga, json: [:])).status
                    #expect(![401, 403].contains(asOrganiser), "\(route) as its organiser: \(asOrganiser)")
                    guarded += 1
                case .device:
                    Issue.record("\(route): the runs room has no device door")
                }
            }
            #expect(guarded == 8)
        }
    }
}
