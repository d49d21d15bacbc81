import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeSimulation

/// Recorded runners (`crowd.race.tracks`): GPX and NMEA tracks read as the watch kept them (a gap
/// stays a gap), aligned at a mass start or at their own times, replayed through the agents into
/// a real server, and the report's figures against the recordings.
@Suite struct RecordedRaceTests {
    static let latitude = 45.0
    static let longitude = 9.0
    static let metresPerDegree = 6_371_008.8 * Double.pi / 180
    /// 2026-05-10T09:00:00Z.
    static let gun: Int64 = 1_778_403_600_000

    static func latLon(east: Double, north: Double = 0) -> (Double, Double) {
        (latitude + north / metresPerDegree, longitude + east / (metresPerDegree * cos(latitude * .pi / 180)))
    }

    static func iso(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// A GPX 1.1 track of `(seconds from the gun, east, north)` points.
    static func gpx(_ points: [(Int, Double, Double)], start: Int64 = gun) -> String {
        var text = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<gpx version=\"1.1\" creator=\"test\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n"
        text += "<trk><name>t</name><trkseg>\n"
        for (t, east, north) in points {
            let (lat, lon) = latLon(east: east, north: north)
            text += "<trkpt lat=\"\(String(format: "%.7f", lat))\" lon=\"\(String(format: "%.7f", lon))\">"
            text += "<time>\(iso(start + Int64(t) * 1000))</time></trkpt>\n"
        }
        return text + "</trkseg></trk></gpx>\n"
    }

    /// Out and back along a 500 m street at `speed`: the street is run twice a lap.
    static func outAndBack(_ metres: Double) -> Double {
        let lap = metres.truncatingRemainder(dividingBy: 1000)
        return lap <= 500 ? lap : 1000 - lap
    }

    static func sentence(_ body: String) -> String {
        var sum: UInt8 = 0
        for byte in body.utf8 { sum ^= byte }
        return "$" + body + "*" + String(format: "%02X", sum)
    }

    static func nmeaPosition(_ lat: Double, _ lon: Double) -> (String, String) {
        func dm(_ value: Double, _ digits: Int) -> String {
            let whole = Int(abs(value))
            return String(format: "%0\(digits)d%07.4f", whole, (abs(value) - Double(whole)) * 60)
        }
        return (dm(lat, 2) + ",N", dm(lon, 3) + ",E")
    }

    // MARK: Reading tracks

    @Test func aGPXTrackKeepsItsWatchGapWithoutInventingFixes() throws {
        var points: [(Int, Double, Double)] = []
        for t in 0...120 where !(40..<73).contains(t) { points.append((t, Double(t) * 3, 0)) }
        let track = try RecordedTrack.parse(Self.gpx(points), file: "runner.gpx", name: "runner")
        #expect(track.points.count == 121 - 33)
        let steps = zip(track.points, track.points.dropFirst()).map { $1.milliseconds - $0.milliseconds }
        #expect(steps.filter { $0 != 1000 } == [34_000])
        #expect(track.points[0].milliseconds == Self.gun)
        // Along the recording: the gap crossed in a straight line, nothing counted twice.
        #expect(abs(TrackTruth(track.points).distance - 360) < 0.5)
    }

    @Test func anNMEATrackKeepsItsGapsAndItsDate() throws {
        var lines = ["# Name: test", Self.sentence("GPGSV,1,1,00")]
        for t in 0..<60 {
            let seconds = 9 * 3600 + 59 * 60 + 40 + t
            let time = String(format: "%02d%02d%02d.00", seconds / 3600 % 24, seconds / 60 % 60, seconds % 60)
            if (20..<45).contains(t) {
                lines.append(Self.sentence("GPGGA,\(time),,,,,0,00,99.99,,,,,,"))
                lines.append(Self.sentence("GPRMC,\(time),V,,,,,,,100526,,,N"))
                continue
            }
            let (lat, lon) = Self.latLon(east: Double(t) * 3)
            let (ns, ew) = Self.nmeaPosition(lat, lon)
            lines.append(Self.sentence("GPGGA,\(time),\(ns),\(ew),1,09,0.9,45.0,M,50.0,M,,"))
            lines.append(Self.sentence("GPRMC,\(time),A,\(ns),\(ew),5.83,90.0,100526,,,A"))
        }
        let track = try RecordedTrack.parse(lines.joined(separator: "\n") + "\n", file: "runner.nmea", name: "runner")
        #expect(track.points.count == 35)
        // 2026-05-10 09:59:40 UTC, from RMC's date and the epoch's time.
        #expect(track.points[0].milliseconds == Self.gun + 3_580_000)
        let steps = zip(track.points, track.points.dropFirst()).map { $1.milliseconds - $0.milliseconds }
        #expect(steps.filter { $0 != 1000 } == [26_000])
        #expect(abs((track.points[0].speed ?? 0) - 5.83 * 0.514444) < 0.01)
        let (lat, lon) = Self.latLon(east: 177)
        #expect(abs(track.points[34].latitude - lat) < 1e-6 && abs(track.points[34].longitude - lon) < 1e-6)
    }

    @Test func aMalformedGPXPointIsAnErrorNamingTheFileAndLineNotAPointLost() throws {
        var text = Self.gpx((0...5).map { ($0, Double($0) * 3, 0) })
        // The third point (line 6) loses its time.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines[5] = lines[5].replacingOccurrences(of: #"<time>[^<]*</time>"#, with: "", options: .regularExpression)
        text = lines.joined(separator: "\n")
        #expect(throws: TrackError(file: "r.gpx", line: 6, message: "<trkpt> has no <time> (a track point needs one to be replayed)")) {
            try RecordedTrack.parse(text, file: "r.gpx", name: "r")
        }
        lines[5] = lines[5].replacingOccurrences(of: "lat=", with: "lat=\"x\" la=")
        #expect(throws: TrackError.self) { try RecordedTrack.parse(lines.joined(separator: "\n"), file: "r.gpx", name: "r") }
        do {
            _ = try RecordedTrack.parse(lines.joined(separator: "\n"), file: "r.gpx", name: "r")
        } catch {
            #expect(error.description.hasPrefix("r.gpx:6: "), "\(error)")
        }
    }

    @Test func aMalformedNMEALineIsAnErrorNamingTheFileAndLine() throws {
        let (ns, ew) = Self.nmeaPosition(Self.latitude, Self.longitude)
        let good = Self.sentence("GPRMC,090000.00,A,\(ns),\(ew),5.83,90.0,100526,,,A")
        let next = Self.sentence("GPRMC,090001.00,A,\(ns),\(ew),5.83,90.0,100526,,,A")
        // A corrupted checksum: gpsd would drop the sentence; a track must not lose the fix unsaid.
        let corrupt = String(next.dropLast(2)) + "00"
        #expect(throws: TrackError(file: "r.nmea", line: 3, message: "bad NMEA checksum: \(corrupt.prefix(40))")) {
            try RecordedTrack.parse("# header\n\(good)\n\(corrupt)\n", file: "r.nmea", name: "r")
        }
        #expect(throws: TrackError(file: "r.nmea", line: 2, message: "not an NMEA sentence ($...*hh): garbage line")) {
            try RecordedTrack.parse("\(good)\ngarbage line\n\(next)\n", file: "r.nmea", name: "r")
        }
        #expect(try RecordedTrack.parse("\(good)\n\n\(next)\n", file: "r.nmea", name: "r").points.count == 2)
    }

    @Test func tracksAreNamedByTheirStemsAndABadOneStopsTheLoadNamingIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tracks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("race"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let points = (0...5).map { ($0, Double($0) * 3, 0.0) }
        try Self.gpx(points).write(to: folder.appendingPathComponent("race/anna.gpx"), atomically: true, encoding: .utf8)
        try Self.gpx(points).write(to: folder.appendingPathComponent("race/bruno.gpx"), atomically: true, encoding: .utf8)
        let tracks = try RecordedTracks.load(["race/*.gpx"], relativeTo: folder)
        #expect(tracks.map(\.name) == ["anna", "bruno"])
        #expect(throws: ScenarioError.self) { try RecordedTracks.load(["race/*.nmea"], relativeTo: folder) }
        try "$GPRMC,bad\n".write(to: folder.appendingPathComponent("race/carla.nmea"), atomically: true, encoding: .utf8)
        do {
            _ = try RecordedTracks.load(["race/*"], relativeTo: folder)
            Issue.record("a bad track was loaded")
        } catch {
            #expect("\(error)".contains("race/carla.nmea:1: "), "\(error)")
        }
    }

    @Test func theTruthDropsAJumpAsAPersonWould() {
        var points: [RecordedTrack.Point] = []
        for t in 0...100 {
            let jump = (50..<53).contains(t) ? 400.0 : 0
            let (lat, lon) = Self.latLon(east: Double(t) * 3, north: jump)
            points.append(RecordedTrack.Point(milliseconds: Int64(t) * 1000, latitude: lat, longitude: lon))
        }
        let truth = TrackTruth(points)
        #expect(truth.jumps == 3)
        #expect(abs(truth.distance - 300) < 0.5)
        #expect(truth.moment(reaching: 150) == 50_000)
    }

    // MARK: Through the agents and the server

    /// Writes the tracks and course into a folder and runs a recorded race of them.
    static func race(
        _ tracks: [String: String],
        align: String,
        distance: Double,
        inProcess: Bool = false,
        expect: String =
            #"{"distance_within_pct": 2, "finish_within_s": 5, "finish_order_matches_recordings": true, "no_identity_swaps": true, "gaps_shown_stale_within_s": 15, "no_alerts": true, "every_runner_shown": true}"#
    ) async throws -> CrowdRunner.Outcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("recorded-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("tracks"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for (name, text) in tracks { try text.write(to: folder.appendingPathComponent("tracks/\(name)"), atomically: true, encoding: .utf8) }
        try gpx([(0, 0, 0), (1, 250, 0), (2, 500, 0), (3, 250, 0), (4, 0, 0)]).write(
            to: folder.appendingPathComponent("course.gpx"),
            atomically: true,
            encoding: .utf8
        )
        let json = """
            {"name": "recorded", "seed": 1, "crowd": {"race": {"tracks": ["tracks/*"], "align": "\(align)", "course": "course.gpx", "distance_m": \(distance)}},
             "expect": {"race": \(expect)}}
            """
        let scenario = try JSONDecoder().decode(CrowdScenario.self, from: Data(json.utf8))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = CrowdRunner.Options(simulationsDirectory: folder, logger: logger)
        options.scenarioDirectory = folder
        options.inProcess = inProcess
        return try await CrowdRunner(options: options).run(scenario)
    }

    @Test func fastModeGivesTheSameRaceThroughTheRouterInProcess() async throws {
        // The same two runners over loopback and in fast mode (no socket): the devices, handlers
        // and store are the same code, so the server's distances, finishes and ranks are the same.
        let tracks = [
            "anna.gpx": Self.gpx((0...100).map { ($0, Double($0) * 4, 0) }),
            "bruno.gpx": Self.gpx((0...100).map { ($0, Double($0) * 3.5, 2) }),
        ]
        let sockets = try await Self.race(tracks, align: "start", distance: 300)
        let fast = try await Self.race(tracks, align: "start", distance: 300, inProcess: true)
        #expect(sockets.passed && fast.passed, "\(sockets.lines) \(fast.lines)")
        #expect(sockets.mode == "sockets" && fast.mode == "fast")
        let overSockets = try #require(sockets.race?.runners)
        let inProcess = try #require(fast.race?.runners)
        #expect(overSockets.map(\.name) == inProcess.map(\.name))
        #expect(overSockets.map(\.rank) == inProcess.map(\.rank))
        #expect(overSockets.map(\.distanceMetres) == inProcess.map(\.distanceMetres))
        #expect(overSockets.map(\.finishElapsedSeconds) == inProcess.map(\.finishElapsedSeconds))
    }

    @Test func aLapCourseIsCountedAlongTheRunnersFixesWithItsFinishGapAndJump() async throws {
        // Two laps of a 500 m out-and-back street at 4 m/s; a 30 s watch gap on the way back and
        // a jump of 400 m for three fixes. The race is 1.5 laps: the finish is on the street's
        // second pass out, where a runner placed on the course would be taken for their first.
        var points: [(Int, Double, Double)] = []
        for t in 0...500 where !(160..<190).contains(t) {
            points.append((t, Self.outAndBack(Double(t) * 4), (300..<303).contains(t) ? 400 : 0))
        }
        let outcome = try await Self.race(["lapper.gpx": Self.gpx(points)], align: "start", distance: 1500)
        #expect(outcome.passed, "\(outcome.lines)")
        let runner = try #require(outcome.race?.runners.first)
        #expect(runner.jumpsDropped == 3)
        #expect(abs(runner.trueDistanceMetres - 2000) < 10, "\(runner)")
        #expect(abs((runner.distanceMetres ?? 0) - runner.trueDistanceMetres) / runner.trueDistanceMetres < 0.02, "\(runner)")
        #expect(abs((runner.trueFinishElapsedSeconds ?? 0) - 375) < 2, "\(runner)")
        #expect(abs((runner.finishElapsedSeconds ?? 0) - 375) < 5, "\(runner)")
        #expect(runner.rank == 1)
        let gap = try #require(runner.gaps.first)
        #expect(gap.fromSeconds == 159 && gap.toSeconds == 190)
        #expect((gap.shownStaleAfterSeconds ?? 99) <= 15, "\(gap)")
        #expect((outcome.race?.staleShownSeconds ?? 0) >= 10)
        #expect(outcome.race?.identitySwaps == 0)
    }

    @Test func aMassStartShiftsEveryTrackToTheGunAndRecordedKeepsTheirTimes() async throws {
        // Two runners at 4 m/s along the street; the second's watch started 60 s later.
        let anna = Self.gpx((0...100).map { ($0, Double($0) * 4, 0) })
        let bruno = Self.gpx((0...100).map { ($0, Double($0) * 4, 2) }, start: Self.gun + 60_000)
        let tracks = ["anna.gpx": anna, "bruno.gpx": bruno]
        let start = try await Self.race(tracks, align: "start", distance: 300)
        #expect(start.passed, "\(start.lines)")
        let together = try #require(start.race?.runners)
        #expect(together.map { $0.trueFinishElapsedSeconds.map { $0.rounded() } } == [75, 75])
        #expect(together.allSatisfy { abs(($0.finishElapsedSeconds ?? 0) - 75) < 2 }, "\(together)")
        let recorded = try await Self.race(tracks, align: "recorded", distance: 300)
        #expect(recorded.passed, "\(recorded.lines)")
        let own = try #require(recorded.race?.runners)
        #expect(own.map { $0.trueFinishElapsedSeconds.map { $0.rounded() } } == [75, 135])
        #expect(abs((own[1].finishElapsedSeconds ?? 0) - 135) < 2, "\(own)")
        #expect(own.map(\.rank) == [1, 2])
    }
}
