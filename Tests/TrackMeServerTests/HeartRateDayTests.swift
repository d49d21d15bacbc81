import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A person's statistics come from kept day summaries: whole past days are summarised once from
/// their readings, later requests merge the summaries, and a day that receives a reading late is
/// read again. The wall clock is the test's.
@Suite("Heart-rate day summaries")
struct HeartRateDayTests {
    static let dayLength = GroupFigures.dayMilliseconds
    /// The UTC day the test server starts in (it starts mid-day).
    static let firstDay = HeartRateDays.day(TestServer.startWall)

    // MARK: - Pure rules

    @Test("a span is cut into the whole days that may be kept and the pieces read each time")
    func plan() {
        let day = Self.firstDay
        let start = day * Self.dayLength
        // From mid-day 0 to mid-day 3, asked an hour into day 4: days 1 and 2 are kept, the ends read.
        let now = (day + 4) * Self.dayLength + 3_600_000
        let plan = HeartRateDays.plan(from: start + 1000, to: start + 3 * Self.dayLength + 5000, now: now)
        #expect(plan.keptDays == (day + 1)...(day + 2))
        #expect(plan.readPieces == [(start + 1000)..<(start + Self.dayLength), (start + 3 * Self.dayLength)..<(start + 3 * Self.dayLength + 5000)])
        // Ten minutes after midnight yesterday is not kept yet: its last batches may still come.
        let early = HeartRateDays.plan(from: start, to: start + 2 * Self.dayLength, now: start + 2 * Self.dayLength + 600_000)
        #expect(early.keptDays == day...day)
        #expect(early.readPieces == [(start + Self.dayLength)..<(start + 2 * Self.dayLength)])
        // Less than a whole day: read.
        #expect(HeartRateDays.plan(from: start + 10, to: start + 20, now: now) == .init(keptDays: nil, readPieces: [(start + 10)..<(start + 20)]))
    }

    @Test("only readings of a day that ended more than the grace before their receipt are late")
    func lateDays() {
        let day = Self.firstDay
        let end = (day + 1) * Self.dayLength
        func reading(_ placed: Int64, _ kind: WireReading.Kind = .heartRate) -> ReadingRow {
            ReadingRow(sequence: 1, kind: kind, placedMilliseconds: placed, wallMilliseconds: placed, timeFlag: nil, body: "{}")
        }
        #expect(HeartRateDays.lateDays([reading(end - 1000)], receivedMilliseconds: end + 60_000).isEmpty)
        #expect(HeartRateDays.lateDays([reading(end - 1000)], receivedMilliseconds: end + HeartRateDays.grace + 1) == [day])
        #expect(HeartRateDays.lateDays([reading(end - 1000, .position)], receivedMilliseconds: end + 5 * Self.dayLength).isEmpty)
        #expect(HeartRateDays.lateDays([reading(end + 1000)], receivedMilliseconds: end + 5000).isEmpty)
    }

    @Test("a kept day stands only with today's limits and no late reading since its pass, settled")
    func stands() {
        let limits = HeartRateLimits(profile: PersonProfile(name: "Ada", age: 70))
        let row = HeartRateDayRow(
            day: 1,
            computedMilliseconds: 10_000_000,
            limitMinimum: limits.minimum,
            limitMaximum: limits.maximum,
            summary: "{}",
            lateMilliseconds: 0
        )
        #expect(HeartRateDays.stands(row, limits: limits))
        var late = row
        late.lateMilliseconds = 10_000_000 - HeartRateDays.settle
        #expect(!HeartRateDays.stands(late, limits: limits), "a late batch may still be in its transaction")
        var other = row
        other.limitMaximum = limits.maximum + 1
        #expect(!HeartRateDays.stands(other, limits: limits))
        var onlyMarked = row
        onlyMarked.summary = nil
        onlyMarked.computedMilliseconds = nil
        #expect(!HeartRateDays.stands(onlyMarked, limits: limits))
    }

    // MARK: - Through the server

    /// Heart-rate readings every 10 minutes over `days` whole UTC days from `firstDay + 1`,
    /// numbered from `firstSequence`, in one batch.
    static func sendDays(_ s: TestServer, token: String, days: Int, batch: Int64, firstSequence: Int64 = 1) async throws -> Int {
        let start = (firstDay + 1) * dayLength
        let readings = (0..<(days * 144)).map { n in
            Sample.heartRate(seq: firstSequence + Int64(n), bpm: 50 + n % 60, wall: start + Int64(n) * 600_000)
        }
        let sent = try await s.send(Sample.batch("pi-0001", seq: batch, readings: readings), token: token)
        try #require(sent.status == 200, "\(sent.text)")
        return readings.count
    }

    static func dayEntries(_ response: HTTPTestClient.Response) -> [Int64: [String: Any]] {
        var entries: [Int64: [String: Any]] = [:]
        for day in response.object["days"] as? [[String: Any]] ?? [] {
            if let start = (day["day_ms"] as? NSNumber)?.int64Value { entries[start / dayLength] = day }
        }
        return entries
    }

    @Test(
        "whole past days are summarised once and kept; a late reading, a damaged summary and erasure are handled",
        arguments: Backend.enabled
    )
    func keptDays(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, token) = try await s.wearer("ada", device: "pi-0001")
            let day1 = Self.firstDay + 1
            let day2 = Self.firstDay + 2
            // An hour into day 3: days 1 and 2 are over; the device was offline and sends them now.
            s.wall.advance(milliseconds: (Self.firstDay + 3) * Self.dayLength + 3_600_000 - s.wall.now)
            _ = try await Self.sendDays(s, token: token, days: 2, batch: 1)
            let session = try await s.signIn("ada")
            let span = "from=\(TestServer.startWall)&to=\(s.wall.now)"

            let first = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            try #require(first.status == 200, "\(first.text)")
            let truth = Self.dayEntries(first)
            #expect(truth[day1]?["readings"] as? Int == 144)
            #expect(truth[day2]?["readings"] as? Int == 144)
            let kept = try await s.server.store.heartRateDays(deviceID: "pi-0001", days: day1...day2)
            #expect(kept.map(\.day) == [day1, day2])
            #expect(kept.allSatisfy { $0.summary != nil })

            // The summaries answer: one changed in the store shows in the next answer, which
            // therefore did not read the day's readings.
            let limits = HeartRateLimits(profile: PersonProfile(name: "Ada", age: 70))
            var changed = try #require(kept.first?.summary.flatMap(HeartRateDays.decode))
            changed.readings = 7
            s.wall.advance(milliseconds: HeartRateDays.settle + 60_000)
            try await s.server.store.saveHeartRateDays(
                deviceID: "pi-0001",
                [day1: try HeartRateDays.encode(changed)],
                limits: limits,
                computedMilliseconds: s.wall.now
            )
            let fromKept = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            #expect(Self.dayEntries(fromKept)[day1]?["readings"] as? Int == 7)
            #expect(Self.dayEntries(fromKept)[day2]?["readings"] as? Int == 144)

            // A reading of day 1 arrives late: the day is read again, with it.
            let late = Sample.heartRate(seq: 10_000, bpm: 200, wall: day1 * Self.dayLength + 30_000)
            let sent = try await s.send(Sample.batch("pi-0001", seq: 2, readings: [late]), token: token)
            try #require(sent.status == 200, "\(sent.text)")
            let afterLate = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            #expect(Self.dayEntries(afterLate)[day1]?["readings"] as? Int == 145)
            #expect(Self.dayEntries(afterLate)[day1]?["max"] as? Int == 200)

            // A damaged summary is read again from the readings, not trusted and not fatal.
            s.wall.advance(milliseconds: HeartRateDays.settle + 60_000)
            try await s.server.store.saveHeartRateDays(deviceID: "pi-0001", [day2: "{not json"], limits: limits, computedMilliseconds: s.wall.now)
            let afterDamage = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            #expect(afterDamage.status == 200)
            #expect(Self.dayEntries(afterDamage)[day2]?["readings"] as? Int == 144)

            // Retention deletes a day's summary with its readings, the cut-off's day included.
            _ = try await s.server.store.deleteReadings(placedBefore: day1 * Self.dayLength + 1)
            #expect(try await s.server.store.heartRateDays(deviceID: "pi-0001", days: day1...day2).map(\.day) == [day2])

            // Erasure leaves none.
            let erased = try await s.client.send("POST", "/v1/devices/pi-0001/erase", token: TestServer.adminToken)
            #expect(erased.status == 200, "\(erased.text)")
            #expect(try await s.server.store.heartRateDays(deviceID: "pi-0001", days: day1...day2).isEmpty)
        }
    }
}
