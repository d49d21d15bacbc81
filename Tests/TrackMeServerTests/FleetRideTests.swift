import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Rides over HTTP on both backends: booked by the fleet operator, offered to taxis in their
/// batch replies, answered by the terminals.
@Suite("Fleet rides: offers in batch replies, answers, lapses, reservations")
struct FleetRideTests {
    /// A zone with taxis reporting available in it, in this order.
    struct Fleet {
        let s: TestServer
        let zone: String
        var tokens: [String: String] = [:]
        var seqs: [String: Int64] = [:]

        static func make(_ s: TestServer, taxis: [String]) async throws -> Fleet {
            let zone = try #require(
                try await s.client.send(
                    "POST",
                    "/v1/fleet/zones",
                    token: TestServer.adminToken,
                    json: ["name": "Centre", "polygon": FleetTests.square(45.0, 7.0)]
                )
                .object["id"] as? String
            )
            var fleet = Fleet(s: s, zone: zone)
            for id in taxis {
                fleet.tokens[id] = try await s.enrol(id, name: "Cab \(id)")
                _ = try await fleet.report(id)
                s.wall.advance(milliseconds: 1)
            }
            return fleet
        }

        /// One batch of the taxi; returns the ride notice of its reply.
        mutating func report(_ id: String, _ state: TaxiAvailability = .available) async throws -> [String: Any]? {
            let seq = (seqs[id] ?? 0) + 1
            seqs[id] = seq
            let reading = WireReading(
                sequence: seq,
                timestamp: Sample.timestamp(wall: s.wall.now, mono: UInt64(seq) * 1_000_000_000),
                payload: .position(PositionFix(time: nil, mode: .threeDimensional, latitude: 45.005, longitude: 7.005))
            )
            let batch = RaceSample.batch(id, seq: seq, readings: [reading]) {
                $0.profile = .taxi
                $0.taxiState = state
            }
            let response = try await s.send(batch, token: tokens[id] ?? "")
            try #require(response.status == 200, "batch: \(response.text)")
            return (response.object["orders"] as? [String: Any])?["ride"] as? [String: Any]
        }

        func answer(_ id: String, _ offerID: String, _ event: String) async throws -> HTTPTestClient.Response {
            try await s.client.send("POST", "/v1/fleet/ride-answers", token: tokens[id] ?? "", json: ["offer_id": offerID, "event": event])
        }

        func book(reserved: Int64? = nil) async throws -> [String: Any] {
            var body: [String: Any] = ["zone_id": zone, "pickup": "Piazza Castello 1"]
            if let reserved { body["reserved_ms"] = reserved }
            let response = try await s.client.send("POST", "/v1/fleet/rides", token: TestServer.adminToken, json: body)
            try #require(response.status == 201, "book: \(response.text)")
            return response.object
        }

        func ride(_ id: String) async throws -> [String: Any] {
            let list = try await s.client.send("GET", "/v1/fleet/rides", token: TestServer.adminToken)
            return try #require((list.object["rides"] as? [[String: Any]])?.first { $0["id"] as? String == id })
        }

        /// What an answer may change: the state, the taxi, each offer's outcome.
        static func summary(_ ride: [String: Any]) -> String {
            let outcomes = (ride["offers"] as? [[String: Any]] ?? []).map { "\($0["device_id"] ?? "-"):\($0["outcome"] ?? "open")" }
            return "\(ride["state"] ?? "-") \(ride["device_id"] ?? "-") \(outcomes)"
        }

        func queue() async throws -> [String] {
            let board = try await s.client.send("GET", "/v1/fleet", token: TestServer.adminToken)
            let zones = try #require(board.object["zones"] as? [[String: Any]])
            return (zones.first?["queue"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }
        }
    }

    @Test("the first taxi hears of the offer in its next batch reply; accepting puts it on the ride; the ride completes", arguments: Backend.enabled)
    func acceptAndComplete(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var fleet = try await Fleet.make(s, taxis: ["taxi-1", "taxi-2"])
            let ride = try await fleet.book()
            let rideID = try #require(ride["id"] as? String)
            #expect(ride["state"] as? String == "offered")
            #expect(try await fleet.report("taxi-2") == nil, "the second taxi is not offered it")
            let offer = try #require(try await fleet.report("taxi-1"))
            #expect(
                offer["stage"] as? String == "offered" && offer["zone"] as? String == "Centre" && offer["pickup"] as? String == "Piazza Castello 1"
            )
            #expect(offer["answer_within_ms"] as? Int == 12_000)
            let offerID = try #require(offer["offer_id"] as? String)
            s.wall.advance(milliseconds: 4000)
            let accepted = try await fleet.answer("taxi-1", offerID, "accept")
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try await fleet.ride(rideID)["state"] as? String == "accepted")
            #expect(try await fleet.queue() == ["taxi-2"], "on the ride, out of the queue at once")
            #expect(try await fleet.report("taxi-1", .onRide)?["stage"] as? String == "accepted")
            #expect(try await fleet.answer("taxi-1", offerID, "pickup").status == 200)
            #expect(try await fleet.ride(rideID)["state"] as? String == "on_ride")
            #expect(try await fleet.answer("taxi-1", offerID, "complete").status == 200)
            let done = try await fleet.ride(rideID)
            #expect(done["state"] as? String == "completed" && done["device_id"] as? String == "taxi-1")
            #expect(try await fleet.report("taxi-1", .available) == nil)
        }
    }

    @Test("silence for the window is a refusal: the next taxi is offered the ride, the silent one goes to the back", arguments: Backend.enabled)
    func silenceAndRefusal(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var fleet = try await Fleet.make(s, taxis: ["taxi-1", "taxi-2", "taxi-3"])
            let rideID = try #require(try await fleet.book()["id"] as? String)
            let first = try #require(try await fleet.report("taxi-1")?["offer_id"] as? String)
            s.wall.advance(milliseconds: 11_999)
            #expect(try await fleet.report("taxi-2") == nil)
            s.wall.advance(milliseconds: 1)
            let second = try #require(try await fleet.report("taxi-2")?["offer_id"] as? String)
            #expect(second != first)
            #expect(try await fleet.queue() == ["taxi-2", "taxi-3", "taxi-1"])
            // The silent taxi's late answer is refused and changes nothing.
            let late = try await fleet.answer("taxi-1", first, "accept")
            #expect(late.status == 409 && late.errorCode == "offer_closed", "\(late.text)")
            // taxi-2 refuses: taxi-3 is asked at once, taxi-2 goes behind taxi-1.
            #expect(try await fleet.answer("taxi-2", second, "refuse").status == 200)
            #expect(try await fleet.queue() == ["taxi-3", "taxi-1", "taxi-2"])
            let third = try #require(try await fleet.report("taxi-3")?["offer_id"] as? String)
            #expect(try await fleet.answer("taxi-3", third, "accept").status == 200)
            s.wall.advance(milliseconds: 300_000)
            #expect(try await fleet.answer("taxi-3", third, "missing_client").status == 200)
            let ride = try await fleet.ride(rideID)
            #expect(ride["state"] as? String == "missing_client")
            #expect((ride["offers"] as? [[String: Any]])?.compactMap { $0["outcome"] as? String } == ["silent", "refused", "accepted"])
        }
    }

    @Test("a wrong, foreign, lapsed or malformed answer gets a clear 4xx and changes nothing", arguments: Backend.enabled)
    func refusedAnswers(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var fleet = try await Fleet.make(s, taxis: ["taxi-1", "taxi-2"])
            let rideID = try #require(try await fleet.book()["id"] as? String)
            let offerID = try #require(try await fleet.report("taxi-1")?["offer_id"] as? String)
            let before = try await fleet.ride(rideID)
            let cases: [(String, [String: Any], Int, String?)] = [
                ("taxi-1", ["offer_id": "\(rideID).7", "event": "accept"], 404, "no_offer"),
                ("taxi-1", ["offer_id": "no-such-ride.1", "event": "accept"], 404, "no_offer"),
                ("taxi-2", ["offer_id": offerID, "event": "accept"], 403, "not_your_offer"),
                ("taxi-1", ["offer_id": offerID, "event": "complete"], 409, "ride_state"),
                ("taxi-1", ["offer_id": offerID, "event": "hurry"], 400, nil),
                ("taxi-1", ["offer_id": "", "event": "accept"], 400, nil),
                ("taxi-1", ["event": "accept"], 400, nil),
            ]
            for (taxi, body, status, code) in cases {
                let answer = try await s.client.send("POST", "/v1/fleet/ride-answers", token: fleet.tokens[taxi] ?? "", json: body)
                #expect(answer.status == status, "\(body): \(answer.text)")
                if let code { #expect(answer.errorCode == code, "\(body): \(answer.text)") }
            }
            #expect(
                try await s.client.send(
                    "POST",
                    "/v1/fleet/ride-answers",
                    token: TestServer.adminToken,
                    json: ["offer_id": offerID, "event": "accept"]
                ).status == 403
            )
            #expect(Fleet.summary(try await fleet.ride(rideID)) == Fleet.summary(before))
            // Lapsed: the window passed before the answer came (the ride moves on meanwhile).
            s.wall.advance(milliseconds: 12_000)
            let lapsed = try await fleet.answer("taxi-1", offerID, "accept")
            #expect(lapsed.status == 409 && ["offer_expired", "offer_closed"].contains(lapsed.errorCode ?? ""), "\(lapsed.text)")
            #expect(try await fleet.ride(rideID)["device_id"] == nil)
        }
    }

    @Test("a reserved ride is offered to the taxi 10 minutes before its time, not before", arguments: Backend.enabled)
    func reservation(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var fleet = try await Fleet.make(s, taxis: ["taxi-1"])
            let reserved = s.wall.now + 3_600_000
            let ride = try await fleet.book(reserved: reserved)
            #expect(ride["state"] as? String == "waiting" && (ride["offer_from_ms"] as? NSNumber)?.int64Value == reserved - 600_000)
            s.wall.advance(milliseconds: 3_000_000 - 1)
            #expect(try await fleet.report("taxi-1") == nil)
            s.wall.advance(milliseconds: 1)
            let offer = try #require(try await fleet.report("taxi-1"))
            #expect((offer["reserved_ms"] as? NSNumber)?.int64Value == reserved)
            let pastReservation = try await s.client.send(
                "POST",
                "/v1/fleet/rides",
                token: TestServer.adminToken,
                json: ["zone_id": fleet.zone, "reserved_ms": s.wall.now - 1]
            )
            #expect(pastReservation.status == 400 && pastReservation.errorField == "reserved_ms")
            let noZone = try await s.client.send("POST", "/v1/fleet/rides", token: TestServer.adminToken, json: ["zone_id": "nowhere"])
            #expect(noZone.status == 400 && noZone.errorField == "zone_id")
        }
    }

    @Test("erasing a taxi's driver erases the rides they were offered; retention ages ended rides", arguments: Backend.enabled)
    func erasureAndRetention(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            var fleet = try await Fleet.make(s, taxis: ["taxi-1", "taxi-2"])
            let first = try #require(try await fleet.book()["id"] as? String)
            let offer = try #require(try await fleet.report("taxi-1")?["offer_id"] as? String)
            #expect(try await fleet.answer("taxi-1", offer, "accept").status == 200)
            #expect(try await fleet.answer("taxi-1", offer, "missing_client").status == 200)
            let second = try #require(try await fleet.book()["id"] as? String)
            #expect(try await fleet.ride(second)["offers"] as? [[String: Any]] != nil)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM fleet_rides") == 2)
            let erased = try await s.client.send("POST", "/v1/devices/taxi-1/erase", token: TestServer.adminToken, body: Data())
            #expect(erased.status == 200, "\(erased.text)")
            // The first ride was taxi-1's; the second is offered to taxi-2 only (taxi-1 was on a ride).
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM fleet_rides WHERE id = '\(first)'") == 0)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM fleet_rides WHERE id = '\(second)'") == 1)
            // A retention period after it was booked, the ride never served is gone too.
            s.wall.advance(milliseconds: 61 * 86_400_000)
            await s.runJobs(advancingBy: .seconds(61 * 86_400))
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM fleet_rides") == 0)
        }
    }
}
