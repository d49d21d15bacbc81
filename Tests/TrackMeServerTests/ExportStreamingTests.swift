import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

@Suite("A person's downloads are written as they are read")
struct ExportStreamingTests {
    static let t0 = TestServer.startWall

    @Test(
        "an export of more readings than a store page comes in chunks, with every reading once, in order, and the day figures over all",
        arguments: Backend.enabled
    )
    func exportIsStreamed(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device) = try await s.wearer("ada", device: "pi-0001", age: 70, displayName: "Ada L.")
            let count = 2_500
            s.at(Int64(count + 10) * 1000)
            for first in stride(from: 1, through: count, by: 500) {
                let readings = (first..<first + 500).map { n in
                    Sample.heartRate(seq: Int64(n), bpm: 60 + n % 40, wall: Self.t0 + Int64(n) * 1000)
                }
                let sent = try await s.send(Sample.batch("pi-0001", seq: Int64(first / 500 + 1), readings: readings), token: device)
                #expect(sent.status == 200)
            }
            let session = try await s.signIn("ada")
            let span = "from=\(Self.t0)&to=\(Self.t0 + 86_400_000)"

            #expect(s.server.hall.people.heavyWork.threadsStarted == 0)
            let csv = try await s.page("GET", "/v1/people/me/export?format=csv&\(span)", session)
            #expect(csv.status == 200)
            // Decoded on the heavy requests' own threads, not the pool that takes alerts in.
            #expect(s.server.hall.people.heavyWork.threadsStarted >= 1)
            // Written while read: no length known up front.
            #expect(csv.headers["content-length"] == nil)
            let rows = csv.text.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            let times = rows.filter { $0.first == "heart_rate" }.compactMap { Int64($0[1]) }
            #expect(times == (1...count).map { Self.t0 + Int64($0) * 1000 })
            let day = try #require(rows.first { $0.first == "day" })
            #expect(day[11] == "60" && day[13] == "99")

            let json = try await s.page("GET", "/v1/people/me/export?format=json&\(span)", session)
            #expect(json.headers["content-length"] == nil)
            #expect((json.object["heart_rate"] as? [Any])?.count == count)
            #expect(((json.object["statistics"] as? [[String: Any]])?.first?["readings"] as? Int) == count)
            #expect(json.object["truncated"] as? Bool == false)

            let stats = try await s.page("GET", "/v1/people/me/statistics?\(span)", session)
            #expect(((stats.object["days"] as? [[String: Any]])?.first?["readings"] as? Int) == count)
        }
    }

    @Test("the grants' windows are merged where they overlap, so no reading is read twice")
    func windowsMerge() {
        func grant(_ from: Int64?, _ until: Int64?, kinds: Set<PersonDataKind>? = nil) -> AccessPolicy.Grant {
            AccessPolicy.Grant(reason: .consent, fromMilliseconds: from, untilMilliseconds: until, kinds: kinds)
        }
        let merged = PersonData.windows(.heartRate, from: 0, to: 1_000, grants: [grant(500, 700), grant(100, 300), grant(250, 400), grant(900, nil)])
        #expect(merged.map(\.lower) == [100, 500, 900])
        #expect(merged.map(\.upper) == [400, 700, 1_000])
        // An unbounded grant covers everything in the span; one for another kind counts for nothing.
        let open = PersonData.windows(.heartRate, from: nil, to: nil, grants: [grant(10, 20), grant(nil, nil), grant(5, 6, kinds: [.position])])
        #expect(open.count == 1 && open[0].lower == nil && open[0].upper == nil)
    }

    @Test("day figures from counters: out of range until the same strap's next reading, per day")
    func dayFigures() {
        let limits = HeartRateLimits(minimum: 40, minimumSource: .profile, maximum: 150, maximumSource: .profile)
        var days = DailyStatistics.Accumulator(limits: limits)
        let day = GroupFigures.dayMilliseconds
        // Two straps interleaved: strap a is high for 10 s, strap b's readings in between do not shorten it.
        for (at, bpm, device) in [(0, 160, "a"), (2_000, 70, "b"), (10_000, 80, "a"), (12_000, 30, "b"), (14_000, 60, "b")] as [(Int64, Int, String)]
        {
            days.add(HeartRateSample(atMilliseconds: day + at, bpm: bpm, deviceID: device, contact: true))
        }
        days.add(HeartRateSample(atMilliseconds: 2 * day + 5, bpm: 55, deviceID: "a", contact: true))
        let figures = days.days
        #expect(figures.map(\.dayMilliseconds) == [day, 2 * day])
        #expect(figures[0].readings == 5 && figures[0].minimum == 30 && figures[0].maximum == 160 && figures[0].mean == 80)
        #expect(figures[0].secondsOutOfRange == 12)
        #expect(figures[1].readings == 1 && figures[1].secondsOutOfRange == 0)
    }

    @Test("a heavy request keeps its place until its body is written or dropped, and gives it back once")
    func ticketHoldsThePlace() {
        let gate = HeavyRequestGate(limit: 1)
        #expect(gate.enter("a") == .admitted)
        var ticket: HeavyRequestGate.Ticket? = HeavyRequestGate.Ticket(gate: gate, principal: "a")
        #expect(gate.enter("b") == .serverBusy)
        ticket?.release()
        #expect(gate.running == 0)
        #expect(gate.enter("b") == .admitted)
        ticket = nil
        #expect(gate.running == 1, "a second release, on deinit, must not free b's place")
        do {
            _ = HeavyRequestGate.Ticket(gate: gate, principal: "b")
        }
        #expect(gate.running == 0)
    }
}
