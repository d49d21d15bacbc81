import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Courses and runners as real tracks make them: a street used twice, laps, a GPS jump, a watch
/// that stops; each runner a real device over HTTP into a real server on each backend.
enum RealTrack {
    static let origin = (45.0, 7.0)
    static let metresPerDegreeLongitude = RunPath.metresPerDegree * cos(origin.0 * .pi / 180)

    /// The point `north` and `east` metres from the origin.
    static func at(north: Double, east: Double = 0) -> [Double] {
        [origin.0 + north / RunPath.metresPerDegree, origin.1 + east / metresPerDegreeLongitude]
    }

    static func gpx(_ points: [[Double]]) -> String {
        let trkpts = points.map { "<trkpt lat=\"\($0[0])\" lon=\"\($0[1])\"/>" }.joined(separator: "\n")
        return "<?xml version=\"1.0\"?><gpx version=\"1.1\" creator=\"test\"><trk><trkseg>\n\(trkpts)\n</trkseg></trk></gpx>"
    }

    /// Out 1 km north along a street, across it (10 m), and back on its other side: the
    /// return is nearer than the way out to a fix a few metres off the runner's side.
    static let outAndBack = [at(north: 0), at(north: 1000), at(north: 1000, east: 10), at(north: 0, east: 10)]

    /// A 1 km square loop, 250 m a side, anticlockwise from the south-west corner.
    static let loop = [at(north: 0), at(north: 250), at(north: 250, east: 250), at(north: 0, east: 250), at(north: 0)]

    /// The point `metres` along a loop of `loop`'s corners (flat over 250 m sides).
    static func alongLoop(_ metres: Double) -> [Double] {
        let side = metres.truncatingRemainder(dividingBy: 1000)
        switch side {
        case ..<250: return at(north: side)
        case ..<500: return at(north: 250, east: side - 250)
        case ..<750: return at(north: 750 - side, east: 250)
        default: return at(north: 0, east: 1000 - side)
        }
    }

    struct Fix {
        var wall: Int64
        var point: [Double]
    }
}

/// One runner's device: its fixes in batches, as the agent sends them, the server's clock
/// brought to each batch's newest fix (a fix is never from the server's future).
final class TrackedRunner {
    let id: String
    let token: String
    let code: String
    let checkedIn: Int64
    var seq: Int64 = 0
    var batchSeq: Int64 = 0

    init(_ server: TestServer, id: String, name: String, code: String, checkedIn: Int64) async throws {
        self.id = id
        self.code = code
        self.checkedIn = checkedIn
        token = try await server.enrol(id, name: name)
    }

    func send(_ fixes: [RealTrack.Fix], to server: TestServer, perBatch: Int = 10) async throws {
        for start in stride(from: 0, to: fixes.count, by: perBatch) {
            let chunk = fixes[start..<min(start + perBatch, fixes.count)]
            var readings: [WireReading] = []
            for fix in chunk {
                seq += 1
                readings.append(
                    WireReading(
                        sequence: seq,
                        timestamp: Sample.timestamp(wall: fix.wall, mono: UInt64(seq) * 1_000_000_000),
                        payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: fix.point[0], longitude: fix.point[1]))
                    )
                )
            }
            if let newest = chunk.map(\.wall).max(), newest > server.wall.now { server.wall.advance(milliseconds: newest - server.wall.now) }
            batchSeq += 1
            let batch = RaceSample.batch(id, seq: batchSeq, readings: readings) {
                $0.profile = .runner
                $0.run = RunParticipation(code: code, showToSpectators: true, checkedInMilliseconds: checkedIn)
            }
            let response = try await server.send(batch, token: token)
            try #require(response.status == 200, "batch: \(response.text)")
        }
    }
}

/// A JSON number as a Double, whether it was written as an integer or not.
func number(_ value: Any?) -> Double? { (value as? NSNumber)?.doubleValue }

@Suite("Races on real tracks: distance along the runner's own fixes, the finish, stale runners")
struct RaceProgressTests {
    static let start = TestServer.startWall + 60_000

    static func createRun(_ s: TestServer, code: String, course: [[Double]], distance: Double? = nil) async throws -> String {
        var body: [String: Any] = ["name": code, "start_ms": start, "code": code, "gpx": RealTrack.gpx(course)]
        if let distance { body["distance_m"] = distance }
        let created = try await s.client.send("POST", "/v1/runs", token: TestServer.adminToken, json: body)
        try #require(created.status == 201, "create: \(created.text)")
        let runID = try #require(created.object["id"] as? String)
        #expect(try await s.client.send("POST", "/v1/runs/\(runID)/enrolment", token: TestServer.adminToken, json: ["open": true]).status == 200)
        return runID
    }

    static func spectatorRunners(_ s: TestServer, _ runID: String) async throws -> [[String: Any]] {
        let view = try await s.client.send("GET", "/v1/public/runs/\(runID)")
        try #require(view.status == 200, "spectator: \(view.text)")
        return try #require(view.object["runners"] as? [[String: Any]])
    }

    static func organiserEntries(_ s: TestServer, _ runID: String) async throws -> [[String: Any]] {
        let view = try await s.client.send("GET", "/v1/runs/\(runID)", token: TestServer.adminToken)
        try #require(view.status == 200, "organiser: \(view.text)")
        return try #require(view.object["entries"] as? [[String: Any]])
    }

    /// Fixes every `every` ms from the gun, at `speed` m/s, placed by `place(metres)`.
    static func fixes(
        from: Double = 0,
        to: Double,
        speed: Double,
        every: Int64 = 1000,
        after: Int64 = 0,
        place: (Double) -> [Double]
    ) -> [RealTrack.Fix] {
        var fixes: [RealTrack.Fix] = []
        var elapsed: Int64 = 0
        while true {
            let metres = from + speed * Double(elapsed) / 1000
            if metres > to + 1e-9 { break }
            fixes.append(RealTrack.Fix(wall: start + after + elapsed, point: place(metres)))
            elapsed += every
        }
        return fixes
    }

    @Test("a course read back from its stored text is the course stored; text that is no course is nil, never a trap")
    func courseFromItsStoredText() throws {
        let points: [[Double]] = (0..<200).map { (index: Int) -> [Double] in
            let step = Double(index) * 0.0001
            let wiggle = Double(index % 7) * 0.0001
            return [45.0 + step, 7.0 + wiggle]
        }
        let text = String(decoding: try JSONEncoder().encode(points), as: UTF8.self)
        #expect(RunPath.stored(text) == (try RunPath(points: points)))
        #expect(RunPath.stored(text) == RunPath.stored(text))
        #expect(RunPath.stored("[[45.0, 7.0]]") == nil, "one point is no course")
        #expect(RunPath.stored("[[95.0, 7.0], [45.0, 7.0]]") == nil, "latitude out of range")
        #expect(RunPath.stored("not json") == nil)
        // Many more courses than are kept: each still comes back right.
        for offset in 0..<300 {
            let course = [[45.0, 7.0 + Double(offset) * 0.001], [45.001, 7.0 + Double(offset) * 0.001]]
            #expect(RunPath.stored(String(decoding: try JSONEncoder().encode(course), as: UTF8.self))?.points == course)
        }
    }

    @Test("a course that uses one street twice: a runner at 170 m out is not placed on the way back", arguments: Backend.enabled)
    func outAndBack(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "OUT-BACK", course: RealTrack.outAndBack)
            let runner = try await TrackedRunner(s, id: "r-out", name: "Out Runner", code: "OUT-BACK", checkedIn: Self.start - 60_000)
            // On the street's east side, 6 m off the way out and 4 m off the way back.
            try await runner.send(Self.fixes(to: 170, speed: 4.25) { RealTrack.at(north: $0, east: 6) }, to: s)
            let shown = try #require(try await Self.spectatorRunners(s, runID).first)
            let distance = try #require(number(shown["distance_m"]))
            #expect(abs(distance - 170) < 170 * 0.02, "counted \(distance) m for 170 m run")
            #expect(shown["finish_ms"] is NSNull)
            let entry = try #require(try await Self.organiserEntries(s, runID).first)
            #expect(abs((number(entry["distance_m"]) ?? 0) - 170) < 3.4)
        }
    }

    @Test("a loop run twice counts both laps within 2 %", arguments: Backend.enabled)
    func twoLaps(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "TWO-LAPS", course: RealTrack.loop, distance: 2500)
            let run = try await s.client.send("GET", "/v1/runs/\(runID)", token: TestServer.adminToken)
            #expect(number(run.object["distance_m"]) == 2500, "the organiser's race distance, not the loop's")
            #expect(abs((number(run.object["length_m"]) ?? 0) - 1000) < 5)
            let runner = try await TrackedRunner(s, id: "r-lap", name: "Lap Runner", code: "TWO-LAPS", checkedIn: Self.start - 60_000)
            try await runner.send(Self.fixes(to: 2000, speed: 4, every: 2000, place: RealTrack.alongLoop), to: s, perBatch: 30)
            let shown = try #require(try await Self.spectatorRunners(s, runID).first)
            let distance = try #require(number(shown["distance_m"]))
            #expect(abs(distance - 2000) < 2000 * 0.02, "counted \(distance) m for two 1 km laps")
            #expect(shown["finish_ms"] is NSNull, "2 km of a 2.5 km race is not a finish")
        }
    }

    @Test("a GPS jump (one fix 900 m off, then back) is neither counted nor shown", arguments: Backend.enabled)
    func jump(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "JUMPY", course: [RealTrack.at(north: 0), RealTrack.at(north: 1100)])
            let runner = try await TrackedRunner(s, id: "r-jump", name: "Jumpy", code: "JUMPY", checkedIn: Self.start - 60_000)
            var fixes = Self.fixes(to: 400, speed: 4) { RealTrack.at(north: $0) }
            // The 50th fix (at 196 m) lands 900 m up the course, and ends its batch.
            fixes[49].point = RealTrack.at(north: 196 + 900)
            try await runner.send(Array(fixes[..<50]), to: s)
            var shown = try #require(try await Self.spectatorRunners(s, runID).first)
            let during = try #require(number(shown["distance_m"]))
            #expect(abs(during - 192) < 4, "counted \(during) m at 192 m run")
            #expect(abs((number(shown["lat"]) ?? 0) - RealTrack.at(north: 192)[0]) < 1e-5, "the dot stays at the last good fix")
            try await runner.send(Array(fixes[50...]), to: s)
            shown = try #require(try await Self.spectatorRunners(s, runID).first)
            let distance = try #require(number(shown["distance_m"]))
            #expect(abs(distance - 400) < 400 * 0.02, "counted \(distance) m for 400 m run")
            // Positions alone raise no alert.
            let alerts = try await s.client.send("GET", "/v1/alerts", token: TestServer.adminToken)
            #expect((alerts.object["alerts"] as? [Any])?.isEmpty == true, "\(alerts.text)")
        }
    }

    @Test("a runner whose first fix was the jump is taken from the fixes that agree", arguments: Backend.enabled)
    func badFirstFix(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "BAD-FIRST", course: [RealTrack.at(north: 0), RealTrack.at(north: 1100)])
            let runner = try await TrackedRunner(s, id: "r-cold", name: "Cold Start", code: "BAD-FIRST", checkedIn: Self.start - 60_000)
            var fixes = Self.fixes(to: 200, speed: 4) { RealTrack.at(north: $0) }
            fixes[0].point = RealTrack.at(north: 0, east: 900)
            try await runner.send(fixes, to: s)
            let shown = try #require(try await Self.spectatorRunners(s, runID).first)
            let distance = try #require(number(shown["distance_m"]))
            #expect(abs(distance - 196) < 1, "counted \(distance) m from the second fix (4 m) to 200 m")
            #expect(abs((number(shown["lon"]) ?? 0) - RealTrack.origin.1) < 1e-6)
        }
    }

    @Test("the finish: a finished runner ranks ahead of two still out, with elapsed time, everywhere", arguments: Backend.enabled)
    func finishOrder(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "FINISH", course: [RealTrack.at(north: 0), RealTrack.at(north: 1100)])
            let along = { (metres: Double) in RealTrack.at(north: metres) }
            let ann = try await TrackedRunner(s, id: "r-ann", name: "Ann Finisher", code: "FINISH", checkedIn: Self.start - 60_000)
            let bob = try await TrackedRunner(s, id: "r-bob", name: "Bob Out", code: "FINISH", checkedIn: Self.start - 60_000)
            let cat = try await TrackedRunner(s, id: "r-cat", name: "Cat Out", code: "FINISH", checkedIn: Self.start - 60_000)
            // Ann runs the 1.1 km in 220 s, on to 1150 m, and walks back towards the start to
            // 950 m: her course position is now behind the two still out, her race is run.
            var annFixes = Self.fixes(to: 1150, speed: 5, every: 2000, place: along)
            annFixes += Self.fixes(to: 200, speed: 1.5, every: 2000, after: 232_000) { along(1150 - $0) }
            try await ann.send(annFixes, to: s, perBatch: 40)
            try await bob.send(Self.fixes(to: 1050, speed: 4, every: 2000, place: along), to: s, perBatch: 40)
            try await cat.send(Self.fixes(to: 1000, speed: 3.5, every: 2000, place: along), to: s, perBatch: 40)

            let runners = try await Self.spectatorRunners(s, runID)
            #expect(runners.compactMap { $0["name"] as? String } == ["Ann Finisher", "Bob Out", "Cat Out"])
            #expect(runners.compactMap { ($0["rank"] as? NSNumber)?.intValue } == [1, 2, 3])
            let elapsed = try #require(number(runners.first?["finish_elapsed_s"]))
            #expect(abs(elapsed - 220) <= 2, "finished after \(elapsed) s")
            #expect(runners[1]["finish_elapsed_s"] is NSNull && runners[2]["finish_ms"] is NSNull)

            let entries = try await Self.organiserEntries(s, runID)
            #expect(entries.compactMap { $0["device_id"] as? String } == ["r-ann", "r-bob", "r-cat"])
            #expect(abs((number(entries.first?["finish_elapsed_s"]) ?? 0) - 220) <= 2)
            #expect(
                (entries.first?["finish_ms"] as? NSNumber)?.int64Value
                    == number(entries.first?["finish_elapsed_s"]).map { Self.start + Int64($0 * 1000) }
            )

            let results = try await s.client.send("GET", "/v1/runs/\(runID)/results.csv", token: TestServer.adminToken)
            let lines = results.text.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            #expect(
                lines.first == ["rank", "name", "distance_m", "checked_in_ms", "last_fix_ms", "finish_ms", "elapsed_s", "time_s", "pace_s_per_km"]
            )
            #expect(lines.dropFirst().map { $0[1] } == ["Ann Finisher", "Bob Out", "Cat Out"])
            #expect(abs((Double(lines[1][6]) ?? 0) - 220) <= 2)
            #expect(lines[2][5] == "" && lines[2][6] == "")
            let alerts = try await s.client.send("GET", "/v1/alerts", token: TestServer.adminToken)
            #expect((alerts.object["alerts"] as? [Any])?.isEmpty == true, "\(alerts.text)")
        }
    }

    @Test("a frozen fix is shown stale with its age past 10 s, and counting resumes when fixes return", arguments: Backend.enabled)
    func stale(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let runID = try await Self.createRun(s, code: "FROZEN", course: [RealTrack.at(north: 0), RealTrack.at(north: 1100)])
            let runner = try await TrackedRunner(s, id: "r-ice", name: "Ice Runner", code: "FROZEN", checkedIn: Self.start - 60_000)
            try await runner.send(Self.fixes(to: 40, speed: 4) { RealTrack.at(north: $0) }, to: s)
            let lastFix = Self.start + 10_000
            s.wall.advance(milliseconds: lastFix + 3_000 - s.wall.now)
            var shown = try #require(try await Self.spectatorRunners(s, runID).first)
            #expect(shown["stale"] as? Bool == false)
            #expect(number(shown["fix_age_s"]) == 3)
            s.wall.advance(milliseconds: 9_000)
            shown = try #require(try await Self.spectatorRunners(s, runID).first)
            #expect(shown["stale"] as? Bool == true, "no fix for 12 s")
            #expect(number(shown["fix_age_s"]) == 12)
            let entry = try #require(try await Self.organiserEntries(s, runID).first)
            #expect(entry["stale"] as? Bool == true && number(entry["fix_age_s"]) == 12)
            // Fixes return 20 s later, 80 m on: counted across the gap, fresh again.
            try await runner.send(Self.fixes(from: 120, to: 140, speed: 4, after: 30_000) { RealTrack.at(north: $0) }, to: s)
            shown = try #require(try await Self.spectatorRunners(s, runID).first)
            #expect(shown["stale"] as? Bool == false)
            #expect(abs((number(shown["distance_m"]) ?? 0) - 140) < 2.8)
        }
    }
}
