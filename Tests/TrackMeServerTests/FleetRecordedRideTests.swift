import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// What the fleet board must get right on recorded rides: GPS jumps kept off the map, the last
/// drop-off and its time between rides, back-to-back rides kept apart, and the reply asking a
/// taxi to batch every second only while a ride may be offered to it.
@Suite("Fleet on recorded rides: jumps, drop-off between rides, back-to-back rides, offer polling")
struct FleetRecordedRideTests {
    /// A taxi reporting over HTTP: each batch its state and the fixes given, at the test's wall.
    struct Cab {
        let s: TestServer
        let id: String
        let token: String
        var seq: Int64 = 0

        static func make(_ s: TestServer, _ id: String) async throws -> Cab {
            Cab(s: s, id: id, token: try await s.enrol(id, name: "Cab \(id)"))
        }

        /// Fixes `(seconds before now, metres north of (45, 7), metres east)`.
        @discardableResult
        mutating func report(_ state: TaxiAvailability, fixes: [(ago: Int64, north: Double, east: Double)] = []) async throws -> [String: Any] {
            var readings: [WireReading] = []
            for fix in fixes {
                seq += 1
                let lat = 45.0 + fix.north / RunPath.metresPerDegree
                let lon = 7.0 + fix.east / (RunPath.metresPerDegree * cos(45.0 * .pi / 180))
                readings.append(
                    WireReading(
                        sequence: seq,
                        timestamp: Sample.timestamp(wall: s.wall.now - fix.ago * 1000, mono: UInt64(seq) * 1_000_000_000),
                        payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: lat, longitude: lon))
                    )
                )
            }
            seq += 1
            let batch = RaceSample.batch(id, seq: seq, readings: readings) {
                $0.profile = .taxi
                $0.taxiState = state
            }
            let response = try await s.send(batch, token: token)
            try #require(response.status == 200, "batch: \(response.text)")
            return response.object
        }

        /// The taxi as the fleet page reads it.
        func shown() async throws -> [String: Any] {
            let board = try await s.client.send("GET", "/v1/fleet", token: TestServer.adminToken)
            var all = (board.object["zones"] as? [[String: Any]] ?? []).flatMap { $0["taxis"] as? [[String: Any]] ?? [] }
            all += board.object["outside"] as? [[String: Any]] ?? []
            return try #require(all.first { $0["device_id"] as? String == id })
        }

        /// Metres north of (45, 7) of the shown position.
        func shownNorth() async throws -> Double {
            let lat = try #require(try await shown()["lat"] as? Double)
            return ((lat - 45.0) * RunPath.metresPerDegree).rounded()
        }
    }

    @Test("a GPS jump is neither shown on the map nor kept: the newest plausible fix is", arguments: Backend.enabled)
    func jumps(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var cab = try await Cab.make(s, "taxi-j")
            try await cab.report(.onRide, fixes: [(0, 0, 0)])
            #expect(try await cab.shownNorth() == 0)
            // 30 s later, 13.5 km away (450 m/s): a jump.
            s.wall.advance(milliseconds: 30_000)
            try await cab.report(.onRide, fixes: [(0, 13_500, 0)])
            #expect(try await cab.shownNorth() == 0, "the jump is not shown")
            // In one batch: the jump between two plausible fixes; the newest plausible one shows.
            s.wall.advance(milliseconds: 60_000)
            try await cab.report(.onRide, fixes: [(45, 300, 0), (30, 9_000, 4_000), (0, 600, 0)])
            #expect(try await cab.shownNorth() == 600)
            // The jump newest in its batch: the fix before it shows.
            s.wall.advance(milliseconds: 60_000)
            try await cab.report(.onRide, fixes: [(30, 900, 0), (0, -12_000, 0)])
            #expect(try await cab.shownNorth() == 900)
            // A long gap allows a long way: 5 km in 10 minutes is driving, not a jump.
            s.wall.advance(milliseconds: 600_000)
            try await cab.report(.onRide, fixes: [(0, 5_900, 0)])
            #expect(try await cab.shownNorth() == 5_900)
        }
    }

    @Test("back-to-back rides a minute apart are kept apart: free between them, the next pickup shown even far away", arguments: Backend.enabled)
    func backToBack(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var cab = try await Cab.make(s, "taxi-b")
            try await cab.report(.onRide, fixes: [(0, 0, 0)])
            s.wall.advance(milliseconds: 30_000)
            try await cab.report(.onRide, fixes: [(0, 300, 0)])
            // Drop-off: free, at the drop-off.
            s.wall.advance(milliseconds: 15_000)
            try await cab.report(.available, fixes: [(0, 450, 0)])
            var shown = try await cab.shown()
            #expect(shown["state"] as? String == "available")
            #expect(try await cab.shownNorth() == 450)
            // A minute later the next fare, picked up 6 km away (100 m/s from the drop-off): a
            // new ride, shown where it starts.
            s.wall.advance(milliseconds: 60_000)
            try await cab.report(.onRide, fixes: [(0, 6_450, 0)])
            shown = try await cab.shown()
            #expect(shown["state"] as? String == "on_ride")
            #expect(try await cab.shownNorth() == 6_450, "the pickup of the next ride, not the last drop-off")
            // Within that ride a jump is still a jump.
            s.wall.advance(milliseconds: 30_000)
            try await cab.report(.onRide, fixes: [(0, 20_000, 0)])
            #expect(try await cab.shownNorth() == 6_450)
        }
    }

    @Test("between rides the board shows the last drop-off with its time, and nothing else", arguments: Backend.enabled)
    func dropOffBetweenRides(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var cab = try await Cab.make(s, "taxi-d")
            try await cab.report(.onRide, fixes: [(0, 0, 0)])
            s.wall.advance(milliseconds: 30_000)
            let dropOff = s.wall.now
            try await cab.report(.available, fixes: [(0, 400, 0)])
            // Ten minutes of reports without a position (no GPS between rides in the recording).
            for _ in 0..<20 {
                s.wall.advance(milliseconds: 30_000)
                try await cab.report(.available)
            }
            let shown = try await cab.shown()
            #expect(shown["state"] as? String == "available")
            #expect(shown["silent"] as? Bool == false)
            #expect(try await cab.shownNorth() == 400)
            #expect((shown["fix_ms"] as? NSNumber)?.int64Value == dropOff, "the drop-off's own time, so the page can say its age")
            #expect((shown["last_report_ms"] as? NSNumber)?.int64Value == s.wall.now)
            // The page says the position's age.
            let script = try await s.client.send("GET", "/assets/fleet.js")
            #expect(script.text.contains("fix_ms"))
        }
    }

    @Test("a taxi batches every second only while a ride may be offered to it: queued in a zone or with a ride open", arguments: Backend.enabled)
    func offerPolling(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let zone = try #require(
                try await s.client.send(
                    "POST",
                    "/v1/fleet/zones",
                    token: TestServer.adminToken,
                    json: ["name": "Centre", "polygon": FleetTests.square(45.0, 7.0)]
                )
                .object["id"] as? String
            )
            var cab = try await Cab.make(s, "taxi-p")
            func poll(_ reply: [String: Any]) -> Int64? { ((reply["orders"] as? [String: Any])?["poll_ms"] as? NSNumber)?.int64Value }
            // Available outside every zone: nobody can offer it a ride; its 30 s reports hold.
            #expect(poll(try await cab.report(.available, fixes: [(0, -300, 0)])) == nil)
            // Available in the zone: queued, the next ride's offer may come in any reply.
            s.wall.advance(milliseconds: 60_000)
            #expect(poll(try await cab.report(.available, fixes: [(0, 500, 500)])) == 1000)
            // Offered a ride, it keeps polling until it is answered.
            let booked = try await s.client.send("POST", "/v1/fleet/rides", token: TestServer.adminToken, json: ["zone_id": zone])
            try #require(booked.status == 201, "book: \(booked.text)")
            s.wall.advance(milliseconds: 1_000)
            let offered = try await cab.report(.available)
            #expect(poll(offered) == 1000)
            #expect((offered["orders"] as? [String: Any])?["ride"] != nil)
            // Unavailable (off duty), not queued and no ride: back to its 30 s reports.
            var idle = try await Cab.make(s, "taxi-q")
            #expect(poll(try await idle.report(.unavailable, fixes: [(0, 500, 500)])) == nil)
            #expect(poll(try await idle.report(.onRide, fixes: [(0, 520, 500)])) == nil)
        }
    }
}
