import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A straight course due north from (45.0, 7.0), about 1.1 km, as a GPX track.
enum RaceSample {
    static let start = (45.0, 7.0)
    /// Degrees of latitude per metre.
    static let degreePerMetre = 1 / RunPath.metresPerDegree

    static func point(atMetres metres: Double) -> (Double, Double) { (start.0 + metres * degreePerMetre, start.1) }

    static let gpx: String = {
        var points = ""
        for step in 0...11 {
            let (lat, lon) = point(atMetres: Double(step) * 100)
            points += "<trkpt lat=\"\(lat)\" lon=\"\(lon)\"><ele>240</ele></trkpt>\n"
        }
        return """
            <?xml version="1.0"?><gpx version="1.1" creator="test"><trk><name>course</name><trkseg>
            \(points)</trkseg></trk></gpx>
            """
    }()

    static func fix(seq: Int64, metres: Double, wall: Int64, east: Double = 0) -> WireReading {
        let (lat, lon) = point(atMetres: metres)
        return WireReading(
            sequence: seq,
            timestamp: Sample.timestamp(wall: wall, mono: UInt64(seq) * 1_000_000_000),
            payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: lat, longitude: lon + east))
        )
    }

    static func batch(_ deviceID: String, seq: Int64, readings: [WireReading], heartbeat: (inout DeviceHeartbeat) -> Void) -> SyncBatch {
        var beat = DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: 0, storeBytes: 4096)
        heartbeat(&beat)
        return SyncBatch(deviceID: deviceID, batchSequence: seq, heartbeat: beat, readings: readings)
    }
}

extension TestServer {
    /// Enrols a device for a person of this name; returns its token.
    func enrol(_ deviceID: String, name: String) async throws -> String {
        let response = try await client.send(
            "POST",
            "/v1/devices",
            token: Self.adminToken,
            json: ["device_id": deviceID, "person": ["name": name, "age": 35]]
        )
        try #require(response.status == 201, "enrol: \(response.text)")
        return try #require(response.object["token"] as? String)
    }
}

@Suite("Runs: organisers, enrolment, consent, the spectator page")
struct RaceTests {
    @Test(
        "a run from GPX: enrolment only while open, check-ins, live standings, consent on the public page, results and tracks",
        arguments: Backend.enabled
    )
    func runLifecycle(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            try await s.createAccount("other", role: "organiser")
            let olga = try await s.signIn("olga")
            let start = TestServer.startWall + 60_000
            // A course that is no GPX is refused with the field named.
            let bad = try await s.page("POST", "/v1/runs", olga, json: ["name": "x", "start_ms": start, "gpx": "<gpx></gpx>"])
            #expect(bad.status == 400)
            #expect(bad.errorField == "gpx")
            let created = try await s.page(
                "POST",
                "/v1/runs",
                olga,
                json: ["name": "City 1K", "start_ms": start, "code": "CITY-1K", "gpx": RaceSample.gpx]
            )
            try #require(created.status == 201, "create: \(created.text)")
            let runID = try #require(created.object["id"] as? String)
            let length = try #require(created.object["length_m"] as? Double)
            #expect(abs(length - 1100) < 1)
            #expect(created.object["enrolment_open"] as? Bool == false)
            // The same code twice is a conflict.
            #expect(
                try await s.page("POST", "/v1/runs", olga, json: ["name": "again", "start_ms": start, "code": "CITY-1K", "gpx": RaceSample.gpx])
                    .status == 409
            )

            // The server's time is past every fix below (fixes from the future are filed at receipt).
            s.wall.advance(milliseconds: 200_000)
            let hostile = "<img src=x onerror=alert(1)>Eve"
            let ann = try await s.enrol("r-ann", name: "Ann Runner")
            let eve = try await s.enrol("r-eve", name: hostile)
            let hid = try await s.enrol("r-hid", name: "Hidden Person")
            func report(_ id: String, _ token: String, seq: Int64, metres: Double, show: Bool, checkedIn: Bool = true, at wall: Int64) async throws {
                let batch = RaceSample.batch(id, seq: seq, readings: [RaceSample.fix(seq: seq, metres: metres, wall: wall)]) {
                    $0.profile = .runner
                    $0.run = RunParticipation(code: "CITY-1K", showToSpectators: show, checkedInMilliseconds: checkedIn ? start - 5_000 : nil)
                }
                let response = try await s.send(batch, token: token)
                try #require(response.status == 200, "batch: \(response.text)")
            }
            // Enrolment closed: a runner's report does not enrol them.
            try await report("r-ann", ann, seq: 1, metres: 0, show: true, at: start - 10_000)
            var organiserView = try await s.page("GET", "/v1/runs/\(runID)", olga)
            #expect((organiserView.object["entries"] as? [Any])?.count == 0)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/enrolment", olga, json: ["open": true]).status == 200)
            // Another organiser cannot see or change this run.
            let other = try await s.signIn("other")
            #expect(try await s.page("GET", "/v1/runs/\(runID)", other).status == 404)
            #expect(try await s.page("POST", "/v1/runs/\(runID)/enrolment", other, json: ["open": false]).status == 404)
            // A runner account kind that is not an organiser may not create runs.
            try await s.createAccount("disp")
            #expect(
                try await s.page("POST", "/v1/runs", try await s.signIn("disp"), json: ["name": "x", "start_ms": start, "gpx": RaceSample.gpx]).status
                    == 403
            )

            // Distances are counted along each runner's own fixes from the gun.
            try await report("r-ann", ann, seq: 2, metres: 0, show: true, at: start)
            try await report("r-eve", eve, seq: 1, metres: 0, show: true, at: start)
            try await report("r-hid", hid, seq: 1, metres: 0, show: false, checkedIn: false, at: start)
            try await report("r-ann", ann, seq: 3, metres: 300, show: true, at: start + 60_000)
            try await report("r-eve", eve, seq: 2, metres: 600, show: true, at: start + 60_000)
            try await report("r-hid", hid, seq: 2, metres: 700, show: false, checkedIn: false, at: start + 60_000)
            // An older fix arriving later (a backlog after a tunnel) does not move a runner back.
            try await report("r-ann", ann, seq: 4, metres: 100, show: true, at: start + 30_000)

            organiserView = try await s.page("GET", "/v1/runs/\(runID)", olga)
            let entries = try #require(organiserView.object["entries"] as? [[String: Any]])
            #expect(entries.count == 3, "the organiser sees every runner of the run, consenting or not")
            let checkedIn = entries.filter { $0["checked_in_ms"] is NSNumber }.compactMap { $0["device_id"] as? String }.sorted()
            #expect(checkedIn == ["r-ann", "r-eve"])

            // The public page's data: no account, consenting runners only, the leader first.
            let spectator = try await s.client.send("GET", "/v1/public/runs/\(runID)")
            try #require(spectator.status == 200)
            #expect(!spectator.text.contains("Hidden Person"))
            #expect(!spectator.text.contains("r-hid") && !spectator.text.contains("r-ann") && !spectator.text.contains("r-eve"), "no device ids")
            let runners = try #require(spectator.object["runners"] as? [[String: Any]])
            #expect(runners.compactMap { $0["name"] as? String } == [hostile, "Ann Runner"])
            #expect(spectator.object["leader"] as? String == runners.first?["id"] as? String)
            let distances = runners.compactMap { $0["distance_m"] as? Double }
            #expect(distances.count == 2 && abs(distances[0] - 600) < 2 && abs(distances[1] - 300) < 2)

            // Results: every runner, furthest first; the hostile name is plain CSV text.
            let results = try await s.page("GET", "/v1/runs/\(runID)/results.csv", olga)
            #expect(results.status == 200)
            let lines = results.text.split(separator: "\n")
            #expect(lines.count == 4)
            #expect(lines[1].hasPrefix("1,Hidden Person,"))
            #expect(lines[2].hasPrefix("2,\(hostile),"))
            // Tracks: one GPX track per runner, names escaped as XML.
            let tracks = try await s.page("GET", "/v1/runs/\(runID)/tracks.gpx", olga)
            #expect(tracks.status == 200)
            #expect(tracks.text.components(separatedBy: "<trk>").count - 1 == 3)
            #expect(tracks.text.contains("&lt;img src=x onerror=alert(1)&gt;Eve"))
            #expect(!tracks.text.contains("<img"))
            #expect(
                tracks.text.components(separatedBy: "<trkpt").count - 1 == 8,
                "ann's four fixes (one before the run's window is kept: 10 s before start), eve's two and hid's two"
            )
            #expect(try await s.page("GET", "/v1/runs/\(runID)/tracks.gpx", other).status == 404)
            #expect(try await s.client.send("GET", "/v1/runs/\(runID)/tracks.gpx").status == 401)

            // Consent withdrawn: gone from the public page at the next report.
            try await report("r-eve", eve, seq: 3, metres: 650, show: false, at: start + 70_000)
            let after = try await s.client.send("GET", "/v1/public/runs/\(runID)")
            #expect(!after.text.contains("Eve"))
            #expect((after.object["runners"] as? [[String: Any]])?.count == 1)

            // The page itself is public and under the console's Content-Security-Policy.
            let page = try await s.client.send("GET", "/runs/\(runID)")
            #expect(page.status == 200)
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            #expect(try await s.client.send("GET", "/v1/public/runs/nosuchrun").status == 404)
        }
    }
}

extension RaceTests {
    /// The run and fleet reads once chained `.map` after GRDB's `read { }`, which picked the
    /// synchronous read and blocked the cooperative pool: forty runners reporting at once hung
    /// the server (found by the race scenario). The limit catches that hang; it is generous
    /// because the suite must also pass on a machine busy with other work.
    @Test("forty runners reporting at once are all enrolled and placed", .timeLimit(.minutes(10)), arguments: Backend.enabled)
    func manyAtOnce(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let start = TestServer.startWall
            let created = try await s.client.send(
                "POST",
                "/v1/runs",
                token: TestServer.adminToken,
                json: ["name": "Rush", "start_ms": start, "code": "RUSH", "gpx": RaceSample.gpx]
            )
            let runID = try #require(created.object["id"] as? String)
            #expect(try await s.client.send("POST", "/v1/runs/\(runID)/enrolment", token: TestServer.adminToken, json: ["open": true]).status == 200)
            s.wall.advance(milliseconds: 120_000)
            var tokens: [String] = []
            for index in 0..<40 { tokens.append(try await s.enrol("rush-\(index)", name: "Rusher \(index)")) }
            // Eight at a time: the server's per-peer connection limit, not the store, bounds it.
            for chunk in stride(from: 0, to: tokens.count, by: 8) {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for (index, token) in tokens.enumerated() where (chunk..<chunk + 8).contains(index) {
                        group.addTask {
                            let readings = [
                                RaceSample.fix(seq: 1, metres: 0, wall: start),
                                RaceSample.fix(seq: 2, metres: Double(10 * index), wall: start + 60_000),
                            ]
                            let batch = RaceSample.batch("rush-\(index)", seq: 1, readings: readings) {
                                $0.profile = .runner
                                $0.run = RunParticipation(code: "RUSH", showToSpectators: true)
                            }
                            return try await s.send(batch, token: token).status
                        }
                    }
                    for try await status in group { #expect(status == 200) }
                }
            }
            let view = try await s.client.send("GET", "/v1/public/runs/\(runID)")
            let runners = try #require(view.object["runners"] as? [[String: Any]])
            #expect(runners.count == 40)
            #expect(runners.first?["name"] as? String == "Rusher 39")
        }
    }
}

@Suite("Fleet: zones, queues in arrival order, silent taxis, the booking API")
struct FleetTests {
    static func square(_ lat: Double, _ lon: Double) -> [[Double]] {
        [[lat, lon], [lat, lon + 0.01], [lat + 0.01, lon + 0.01], [lat + 0.01, lon]]
    }

    @Test("queues per zone in arrival order; a ride takes a taxi out at once; two missed reports make it silent", arguments: Backend.enabled)
    func queues(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let admin = TestServer.adminToken
            let badZone = try await s.client.send("POST", "/v1/fleet/zones", token: admin, json: ["name": "bad", "polygon": [[1, 2]]])
            #expect(badZone.status == 400 && badZone.errorField == "polygon")
            let a = try #require(
                try await s.client.send("POST", "/v1/fleet/zones", token: admin, json: ["name": "Centre", "polygon": Self.square(45.0, 7.0)]).object[
                    "id"
                ] as? String
            )
            let b = try #require(
                try await s.client.send("POST", "/v1/fleet/zones", token: admin, json: ["name": "Station", "polygon": Self.square(45.01, 7.0)])
                    .object[
                        "id"
                    ] as? String
            )
            var tokens: [String: String] = [:]
            for id in ["taxi-1", "taxi-2", "taxi-3"] { tokens[id] = try await s.enrol(id, name: "Cab \(id)") }
            var seqs: [String: Int64] = [:]
            func report(_ id: String, _ state: TaxiAvailability, lat: Double, lon: Double) async throws {
                let seq = (seqs[id] ?? 0) + 1
                seqs[id] = seq
                let reading = WireReading(
                    sequence: seq,
                    timestamp: Sample.timestamp(wall: s.wall.now, mono: UInt64(seq) * 1_000_000_000),
                    payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: lat, longitude: lon))
                )
                let batch = RaceSample.batch(id, seq: seq, readings: [reading]) {
                    $0.profile = .taxi
                    $0.taxiState = state
                }
                let response = try await s.send(batch, token: try #require(tokens[id]))
                try #require(response.status == 200, "batch: \(response.text)")
            }
            func queue(_ zone: String) async throws -> [String] {
                let board = try await s.client.send("GET", "/v1/fleet", token: admin)
                let zones = try #require(board.object["zones"] as? [[String: Any]])
                let entry = try #require(zones.first { $0["id"] as? String == zone })
                return (entry["queue"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }
            }
            func next(_ zone: String, token: String = TestServer.adminToken) async throws -> HTTPTestClient.Response {
                try await s.client.send("GET", "/v1/fleet/zones/\(zone)/next", token: token)
            }
            try await report("taxi-2", .available, lat: 45.005, lon: 7.005)
            s.wall.advance(milliseconds: 10_000)
            try await report("taxi-1", .available, lat: 45.006, lon: 7.004)
            try await report("taxi-3", .unavailable, lat: 45.004, lon: 7.006)
            #expect(try await queue(a) == ["taxi-2", "taxi-1"], "arrival order, not the order of ids")
            #expect(try await next(a).object["device_id"] as? String == "taxi-2")
            // taxi-2 takes a ride: out of the queue at once.
            s.wall.advance(milliseconds: 5_000)
            try await report("taxi-2", .onRide, lat: 45.005, lon: 7.005)
            #expect(try await queue(a) == ["taxi-1"])
            // Back from the ride, available again: at the back of the queue.
            s.wall.advance(milliseconds: 5_000)
            try await report("taxi-2", .available, lat: 45.005, lon: 7.005)
            #expect(try await queue(a) == ["taxi-1", "taxi-2"])
            // A taxi reporting again in the same zone keeps its place.
            s.wall.advance(milliseconds: 5_000)
            try await report("taxi-1", .available, lat: 45.007, lon: 7.007)
            #expect(try await queue(a) == ["taxi-1", "taxi-2"])
            // taxi-1 drives to the station zone next door (556 m in 20 s, 100 km/h; in 10 s it
            // would be a GPS jump).
            s.wall.advance(milliseconds: 20_000)
            try await report("taxi-1", .available, lat: 45.012, lon: 7.007)
            #expect(try await queue(a) == ["taxi-2"])
            #expect(try await queue(b) == ["taxi-1"])
            // taxi-2 misses two reports (61 s): silent, out of the queue; no taxi for the booking system.
            s.wall.advance(milliseconds: 61_000)
            try await report("taxi-1", .available, lat: 45.012, lon: 7.007)
            #expect(try await queue(a) == [])
            let none = try await next(a)
            #expect(none.status == 404 && none.errorCode == "no_taxi")
            let board = try await s.client.send("GET", "/v1/fleet", token: admin)
            let zoneA = try #require((board.object["zones"] as? [[String: Any]])?.first { $0["id"] as? String == a })
            let taxi2 = try #require((zoneA["taxis"] as? [[String: Any]])?.first { $0["device_id"] as? String == "taxi-2" })
            #expect(taxi2["silent"] as? Bool == true)
            // The booking system's own token; devices and strangers are refused.
            let booking = try await s.client.send("POST", "/v1/fleet/tokens", token: admin, body: Data())
            let bookingToken = try #require(booking.object["token"] as? String)
            #expect(try await next(b, token: bookingToken).object["device_id"] as? String == "taxi-1")
            #expect(try await next(b, token: try #require(tokens["taxi-1"])).status == 403)
            #expect(try await s.client.send("GET", "/v1/fleet/zones/\(b)/next").status == 401)
            #expect(try await next("nosuchzone").status == 404)
            // An old agent's batch (no profile) changes nothing in the fleet.
            let old = Sample.batch("taxi-3", seq: 99, readings: [Sample.fix(seq: 99)])
            #expect(try await s.send(old, token: try #require(tokens["taxi-3"])).status == 200)
            // The page is served.
            #expect(try await s.client.send("GET", "/fleet").status == 200)
        }
    }
}

@Suite("Runs and fleet: pure parts")
struct RacePureTests {
    @Test("GPX: track points, else route points; a document without either is refused")
    func gpx() throws {
        let path = try RunPath.parseGPX(RaceSample.gpx)
        #expect(path.points.count == 12)
        let route = try RunPath.parseGPX("<gpx><rte><rtept lon='7.0' lat='45.0'/><rtept lat=\"45.001\" lon=\"7.0\"></rtept></rte></gpx>")
        #expect(route.points == [[45.0, 7.0], [45.001, 7.0]])
        #expect(throws: RunPathError.self) { try RunPath.parseGPX("<gpx><trkpt lat=\"x\" lon=\"7\"/></gpx>") }
        #expect(throws: RunPathError.self) { try RunPath.parseGPX("<gpx/>") }
    }

    @Test("a zone contains what lies inside its polygon")
    func zone() {
        let zone = FleetZone(id: "z", name: "z", polygon: FleetTests.square(45.0, 7.0), createdMilliseconds: 0)
        #expect(zone.contains(latitude: 45.005, longitude: 7.005))
        #expect(!zone.contains(latitude: 45.02, longitude: 7.005))
        #expect(!zone.contains(latitude: 45.005, longitude: 6.99))
    }

    @Test("CSV fields: quoted when needed, formulas defused")
    func csv() {
        #expect(Downloads.csvField("Ann") == "Ann")
        #expect(Downloads.csvField("A, B") == "\"A, B\"")
        #expect(Downloads.csvField("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"")
    }
}
