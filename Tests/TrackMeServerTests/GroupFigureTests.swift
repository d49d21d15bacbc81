import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

extension TestServer {
    /// `count` people (keys `prefix-N`), aged in their seventies, each with one person-day on each
    /// of `days` days ending yesterday, in the 0.1-degree cell whose south-west corner is (lat, lon).
    func population(_ prefix: String, count: Int, days: ClosedRange<Int>, lat: Double = 45.0, lon: Double = 9.0, bpm: Int64 = 70) async throws {
        let today = GroupFigures.day(wall.now)
        var rows: [PersonDay] = []
        for index in 0..<count {
            for back in days {
                var bins = Array(repeating: Int64(0), count: PeopleSchema.binCount)
                bins[GroupFigures.bin(of: Int(bpm))] = 100
                rows.append(
                    PersonDay(
                        personKey: "\(prefix)-\(index)",
                        day: today - back,
                        ageBand: 7,
                        cellLatitude: GroupFigures.cellIndex(lat + 0.05),
                        cellLongitude: GroupFigures.cellIndex(lon + 0.05),
                        heartRateCount: 100,
                        heartRateSum: 100 * bpm,
                        bins: bins,
                        alerts: [0, 0, index == 0 ? 1 : 0, 0, 0, 0]
                    )
                )
            }
        }
        try await server.store.upsertPersonDays(rows)
        try await server.store.setRollupThroughDay(today - 1)
    }

    func groupQuery(
        _ organisation: BrowserSession,
        south: Double = 45.0,
        west: Double = 9.0,
        north: Double = 45.1,
        east: Double = 9.1,
        days: Int64 = 10
    )
        async throws -> HTTPTestClient.Response
    {
        let to = (wall.now / GroupFigures.dayMilliseconds) * GroupFigures.dayMilliseconds
        return try await page(
            "POST",
            "/v1/group-figures",
            organisation,
            json: [
                "age_from": 70, "age_to": 79, "south": south, "west": west, "north": north, "east": east,
                "from_ms": to - days * GroupFigures.dayMilliseconds, "to_ms": to,
            ]
        )
    }
}

@Suite("Group figures: only over more than 1,000 people, and not by difference (issue 20)")
struct GroupFigureTests {
    @Test("1,000 people: refused with the reason; 1,001: answered with group-level values only", arguments: Backend.enabled)
    func threshold(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            s.at(40 * GroupFigures.dayMilliseconds)
            let org = try await s.organisation("acme", name: "Acme")
            try await s.population("p", count: 1000, days: 1...10)
            let refused = try await s.groupQuery(org)
            #expect(refused.status == 422)
            #expect(refused.errorCode == "too_few_people")
            #expect((refused.object["error"] as? [String: Any])?["message"] as? String != nil)
            try await s.population("q", count: 1, days: 1...10)
            let answered = try await s.groupQuery(org)
            #expect(answered.status == 200, "\(answered.text)")
            #expect(answered.object["people"] as? Int == 1001)
            #expect(answered.object["mean_heart_rate"] as? Int == 70)
            #expect((answered.object["percentiles"] as? [String: Int])?["p50"] == 75, "from the 70-79 bin, interpolated")
            #expect((answered.object["alerts_by_kind"] as? [String: Int])?["no_pulse"] == 20, "p-0 and q-0, ten days each")
            #expect(Set(answered.object.keys) == ["group", "people", "readings", "mean_heart_rate", "percentiles", "alerts_by_kind"])
            // Nobody but an organisation (or the admin) asks.
            _ = try await s.createAccount("dana")
            let dispatcher = try await s.signIn("dana")
            #expect(try await s.groupQuery(dispatcher).status == 403)
            // Nonsense is refused as such.
            #expect(try await s.groupQuery(org, south: 46, north: 45).status == 400)
        }
    }

    @Test("the differencing attack: two groups one person apart, by area or by day, are never both answered", arguments: Backend.enabled)
    func differencing(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            s.at(40 * GroupFigures.dayMilliseconds)
            let attacker = try await s.organisation("mallory", name: "Mallory")
            let other = try await s.organisation("trent", name: "Trent")
            try await s.population("many", count: 1500, days: 1...10)
            // The target: in the next cell north on days 1-10, and in the crowd's cell on day 11 only.
            try await s.population("target", count: 1, days: 1...10, lat: 45.1, bpm: 140)
            try await s.population("target", count: 1, days: 11...11, lat: 45.0, bpm: 140)

            let base = try await s.groupQuery(attacker)
            #expect(base.status == 200)
            #expect(base.object["people"] as? Int == 1500)
            // A box nudged within the same cells snaps to the same group: the same answer, nothing new.
            let nudged = try await s.groupQuery(attacker, south: 45.01, west: 9.02, north: 45.09, east: 9.08)
            #expect(nudged.status == 200)
            #expect(nudged.object["people"] as? Int == 1500)
            #expect(nudged.object["readings"] as? Int == base.object["readings"] as? Int)
            // Taking in the target's cell: 1,501 people, more than 1,000, but one apart from an answer.
            let wider = try await s.groupQuery(attacker, north: 45.2)
            #expect(wider.status == 422)
            #expect(wider.errorCode == "differencing")
            // Taking in the target's day in the crowd's cell: refused the same way, also for another organisation.
            let longer = try await s.groupQuery(other, days: 11)
            #expect(longer.status == 422)
            #expect(longer.errorCode == "differencing")
            // A group well apart (its difference over 1,000 people) is answered.
            try await s.population("far", count: 1200, days: 1...10, lat: 45.1)
            let far = try await s.groupQuery(other, north: 45.2)
            #expect(far.status == 200, "1,201 people more than the first answer: \(far.text)")
            #expect(far.object["people"] as? Int == 2701)
        }
    }

    @Test("the same group asked again after one person came or went is refused; after more than 1,000 it is answered", arguments: Backend.enabled)
    func sameGroupAskedAgain(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            s.at(40 * GroupFigures.dayMilliseconds)
            let org = try await s.organisation("mallory", name: "Mallory")
            try await s.population("many", count: 1500, days: 1...10)
            let first = try await s.groupQuery(org)
            #expect(first.status == 200)
            #expect(first.object["people"] as? Int == 1500)
            // Late readings of one more person summarised into the same cells and days.
            try await s.population("late", count: 1, days: 3...3, bpm: 150)
            let again = try await s.groupQuery(org)
            #expect(again.status == 422, "the difference between the two answers is one person: \(again.text)")
            #expect(again.errorCode == "differencing")
            try await s.population("crowd", count: 1001, days: 1...10)
            let grown = try await s.groupQuery(org)
            #expect(grown.status == 200, "1,002 people more than the first answer: \(grown.text)")
            #expect(grown.object["people"] as? Int == 2502)
        }
    }

    @Test("a group query reads the summaries as they are; the hourly job rolls the readings up", arguments: Backend.enabled)
    func rollUpIsTheJobs(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001", age: 72)
            s.at(60_000)
            let wall = TestServer.startWall
            let batch = Sample.batch(
                "pi-0001",
                seq: 1,
                readings: [Sample.heartRate(seq: 1, bpm: 60, wall: wall + 1_000), Sample.fix(seq: 2, wall: wall + 2_000)]
            )
            #expect(try await s.send(batch, token: token).status == 200)
            s.at(2 * GroupFigures.dayMilliseconds)
            let org = try await s.organisation("acme", name: "Acme")
            let asked = try await s.groupQuery(org)
            #expect(asked.status == 422)
            #expect(try await s.server.store.rollupThroughDay() == nil, "the query rolled the readings up itself")
            await s.runJobs(advancingBy: .seconds(3600))
            let today = GroupFigures.day(s.wall.now)
            #expect(try await s.server.store.rollupThroughDay() == today - 1)
            let day = GroupFigures.day(wall)
            let everyone = GroupFigures.Cell.atSampleFix(ageBands: 0...13, day: day)
            #expect(try await s.server.store.groupTotals(everyone).people == 1)
        }
    }

    @Test(
        "intake keeps each stored batch's day counters once (a replay or a batch with readings held already adds nothing); the roll-up reads no reading",
        arguments: Backend.enabled
    )
    func dayCountersAtIntake(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001", age: 72)
            s.at(60_000)
            let wall = TestServer.startWall
            let batch = Sample.batch(
                "pi-0001",
                seq: 1,
                readings: [Sample.heartRate(seq: 1, bpm: 60, wall: wall + 1_000), Sample.fix(seq: 2, wall: wall + 2_000)]
            )
            #expect(try await s.send(batch, token: token).status == 200)
            #expect(try await s.send(batch, token: token).status == 200, "the same batch again: a replay")
            let overlapping = Sample.batch(
                "pi-0001",
                seq: 2,
                readings: [Sample.heartRate(seq: 1, bpm: 60, wall: wall + 1_000), Sample.heartRate(seq: 3, bpm: 90, wall: wall + 3_000)]
            )
            #expect(try await s.send(overlapping, token: token).status == 200)
            let day = GroupFigures.day(wall)
            let counters = try await s.server.store.deviceDays(day: day)
            #expect(counters.count == 1)
            #expect(counters.first?.day.heartRateCount == 1)
            #expect(counters.first?.day.heartRateSum == 60)
            #expect(counters.first?.day.fixCount == 1)
            // The readings gone, the roll-up still has the day: it sums the counters.
            _ = try await s.server.store.deleteReadings(placedBefore: wall + GroupFigures.dayMilliseconds)
            #expect(try await s.readings("pi-0001").isEmpty)
            s.at(2 * GroupFigures.dayMilliseconds)
            try await GroupFigureDesk(store: s.server.store, wallClock: { s.wall.now }).rollUp()
            let totals = try await s.server.store.groupTotals(GroupFigures.Cell.atSampleFix(ageBands: 0...13, day: day))
            #expect(totals.people == 1)
            #expect(totals.readings == 1)
            #expect(totals.heartRateSum == 60)
        }
    }

    @Test("the roll-up summarises each person's day from the counters intake kept, a wearer's devices together")
    func rollUp() async throws {
        try await TestServer.with(.sqlite) { s in
            let (_, first) = try await s.wearer("ada", device: "pi-0001", age: 72)
            let second = try await s.enrol("pi-0002", age: 72)
            let link = try await s.client.send(
                "POST",
                "/v1/people/\(try #require(try await s.server.store.account(username: "ada")?.id))/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0002"]
            )
            #expect(link.status == 201)
            let third = try await s.enrol("pi-0003", age: 35)
            s.at(60_000)
            let wall = TestServer.startWall
            #expect(
                try await s.send(
                    Sample.batch(
                        "pi-0001",
                        seq: 1,
                        readings: [Sample.heartRate(seq: 1, bpm: 60, wall: wall + 1_000), Sample.fix(seq: 2, wall: wall + 2_000)]
                    ),
                    token: first
                ).status == 200
            )
            #expect(
                try await s.send(Sample.batch("pi-0002", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 80, wall: wall + 1_500)]), token: second)
                    .status == 200
            )
            #expect(
                try await s.send(
                    Sample.batch(
                        "pi-0003",
                        seq: 1,
                        readings: [Sample.heartRate(seq: 1, bpm: 100, wall: wall + 1_500), Sample.fix(seq: 2, wall: wall + 2_000)]
                    ),
                    token: third
                ).status == 200
            )
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "a1"), token: first).status == 200)
            s.at(2 * GroupFigures.dayMilliseconds)
            let desk = GroupFigureDesk(store: s.server.store, wallClock: { s.wall.now })
            try await desk.rollUp()
            let day = GroupFigures.day(wall)
            let cell = GroupFigures.Cell.atSampleFix(ageBands: 7...7, day: day)
            let totals = try await s.server.store.groupTotals(cell)
            #expect(totals.people == 1, "two devices, one person")
            #expect(totals.readings == 2)
            #expect(totals.heartRateSum == 140)
            #expect(totals.alerts[2] == 1)
            var everyone = cell
            everyone.ageBandFrom = 0
            everyone.ageBandTo = 13
            #expect(try await s.server.store.groupTotals(everyone).people == 2)
        }
    }
}

extension GroupFigures.Cell {
    /// The one cell of `Sample.fix`'s position, on one day, over the age bands `ageBands`.
    static func atSampleFix(ageBands: ClosedRange<Int>, day: Int) -> GroupFigures.Cell {
        let (latitude, longitude) = (GroupFigures.cellIndex(44.07), GroupFigures.cellIndex(-121.31))
        return GroupFigures.Cell(
            ageBandFrom: ageBands.lowerBound,
            ageBandTo: ageBands.upperBound,
            south: latitude,
            west: longitude,
            north: latitude,
            east: longitude,
            dayFrom: day,
            dayTo: day
        )
    }
}
