import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The runs' and the fleet's lists page like every other list: walked by `next`, each item once,
/// in the list's order, and a limit or cursor that is not the list's is a 400.
@Suite("Runs and rides page: limit, after, next")
struct RacePagingTests {
    /// Runs created by `session`, as (id, start): `starts` in the order given.
    static func runs(_ s: TestServer, _ session: BrowserSession, prefix: String, starts: [Int64]) async throws -> [(id: String, start: Int64)] {
        var created: [(id: String, start: Int64)] = []
        for (n, start) in starts.enumerated() {
            let id = try await RunsRoomTests.createRun(
                s,
                session,
                name: "\(prefix) run \(n)",
                place: n % 2 == 0 ? "Turin" : "Aosta",
                code: "\(prefix.uppercased())-\(n)",
                start: start
            )
            created.append((id, start))
        }
        return created
    }

    /// Newest start first, the id breaking ties downwards: the lists' order.
    static func listOrder(_ runs: [(id: String, start: Int64)]) -> [String] {
        runs.sorted { ($0.start, $0.id) > ($1.start, $1.id) }.map(\.id)
    }

    @Test(
        "an organiser's runs, the admin's and the public search are read whole by following next, each run once, newest start first",
        arguments: Backend.enabled
    )
    func runs(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            try await s.createAccount("omar", role: "organiser")
            let olga = try await s.signIn("olga")
            let omar = try await s.signIn("omar")
            let now = s.wall.now
            // Pairs share their start, so that the id orders them; some runs are over, some to come.
            let starts = (0..<13).map { now + Int64($0 / 2 - 3) * 3_600_000 + 1 }
            let olgas = try await Self.runs(s, olga, prefix: "olga", starts: starts)
            let omars = try await Self.runs(s, omar, prefix: "omar", starts: [now + 1, now + 7_200_000])

            let own = try await s.allPages("/v1/runs", key: "runs", limit: 4) { try await s.page("GET", $0, olga) }
            #expect(own.items.compactMap { $0["id"] as? String } == Self.listOrder(olgas))
            #expect(own.pages == 4)
            let every = try await s.allPages("/v1/runs", key: "runs", limit: 5) { try await s.client.send("GET", $0, token: TestServer.adminToken) }
            #expect(every.items.compactMap { $0["id"] as? String } == Self.listOrder(olgas + omars))
            #expect(every.pages == 3)

            let all = try await s.allPages("/v1/public/runs", key: "runs", limit: 4) { try await s.client.send("GET", $0) }
            #expect(all.items.compactMap { $0["id"] as? String } == Self.listOrder(olgas + omars))
            // The filters are the store's: every page but the last is full.
            let turin = try await s.allPages("/v1/public/runs?q=turin", key: "runs", limit: 3) { try await s.client.send("GET", $0) }
            let inTurin = olgas.enumerated().filter { $0.offset % 2 == 0 }.map(\.element) + [omars[0]]
            #expect(turin.items.compactMap { $0["id"] as? String } == Self.listOrder(inTurin))
            #expect(turin.pages == 3)
            let upcoming = try await s.allPages("/v1/public/runs?status=upcoming", key: "runs", limit: 2) { try await s.client.send("GET", $0) }
            let later = (olgas + omars).filter { $0.start > now }
            #expect(upcoming.items.compactMap { $0["id"] as? String } == Self.listOrder(later))
            #expect(upcoming.items.allSatisfy { $0["status"] as? String == "upcoming" })
            #expect(upcoming.pages == (later.count + 1) / 2)
        }
    }

    @Test(
        "a run's runners as the organiser sees them are read whole by following next: each once, in the standings' order, ranked across pages",
        arguments: Backend.enabled
    )
    func runners(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let olga = try await s.signIn("olga")
            let start = s.wall.now + 60_000
            let runID = try await RunsRoomTests.createRun(s, olga, name: "City 1K", place: "Turin", code: "CITY-1K", start: start)
            s.wall.advance(milliseconds: 200_000)
            // Two finish together, pairs cover the same distance at the same time, two never move:
            // every tie of the standings is broken, down to the device id.
            let metres: [Double] = [300, 1100, 500, 300, 0, 800, 500, 1100, 0, 150, 800]
            for (n, distance) in metres.enumerated() {
                var runner = try await RunsRoomTests.Runner(s, String(format: "r-%02d", n), name: "Runner \(n)", code: "CITY-1K")
                runner.checkedIn = start - 5_000
                try await runner.report(metres: 0, at: start)
                if distance > 0 { try await runner.report(metres: distance, at: start + 120_000) }
            }
            let (items, pages) = try await s.allPages("/v1/runs/\(runID)", key: "entries", limit: 3) { try await s.page("GET", $0, olga) }
            #expect(pages == 4)
            #expect(items.compactMap { $0["rank"] as? Int } == Array(1...11))
            // The whole run's standings, as the results download ranks them.
            let csv = try await s.page("GET", "/v1/runs/\(runID)/results.csv", olga)
            let ranked = csv.text.split(separator: "\n").dropFirst().map { String($0.split(separator: ",")[1]) }
            #expect(items.compactMap { $0["name"] as? String } == ranked)
            #expect(Set(ranked).count == 11)
            let first = try await s.page("GET", "/v1/runs/\(runID)?limit=3", olga)
            #expect(first.object["runners"] as? Int == 11)
        }
    }

    @Test("the rides are read whole by following next, each once, newest first", arguments: Backend.enabled)
    func rides(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let fleet = try await FleetRideTests.Fleet.make(s, taxis: [])
            var booked: [(id: String, created: Int64)] = []
            for n in 0..<12 {
                let ride = try await fleet.book()
                booked.append((try #require(ride["id"] as? String), try #require((ride["created_ms"] as? NSNumber)?.int64Value)))
                // Pairs are booked in the same millisecond: the id orders them.
                if n % 2 == 1 { s.wall.advance(milliseconds: 1000) }
            }
            let (items, pages) = try await s.allPages("/v1/fleet/rides", key: "rides", limit: 5) {
                try await s.client.send("GET", $0, token: TestServer.adminToken)
            }
            #expect(items.compactMap { $0["id"] as? String } == booked.sorted { ($0.created, $0.id) > ($1.created, $1.id) }.map(\.id))
            #expect(pages == 3)
        }
    }

    @Test("a limit outside 1-1000 or not a number, and a cursor that is not the list's, are 400 naming the parameter", arguments: Backend.enabled)
    func badPages(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            try await s.createAccount("olga", role: "organiser")
            let runID = try await RunsRoomTests.createRun(
                s,
                try await s.signIn("olga"),
                name: "City 1K",
                place: "Turin",
                code: "CITY-1K",
                start: s.wall.now
            )
            _ = try await FleetRideTests.Fleet.make(s, taxis: [])
            let lists = ["/v1/runs", "/v1/public/runs", "/v1/public/runs?q=city&status=live", "/v1/runs/\(runID)", "/v1/fleet/rides"]
            // A device id where a time and an id (or a standing) belong.
            let otherCursor = PageCursor("pi-0001").text
            for list in lists {
                let separator = list.contains("?") ? "&" : "?"
                for query in ["limit=0", "limit=1001", "limit=ten", "after=%21%21%21", "after=not*base64", "after=\(otherCursor)"] {
                    let response = try await s.client.send("GET", "\(list)\(separator)\(query)", token: TestServer.adminToken)
                    #expect(response.status == 400, "\(list) \(query): \(response.text)")
                    #expect(response.errorField == (query.hasPrefix("limit") ? "limit" : "after"), "\(list) \(query): \(response.text)")
                }
            }
            // The runners' cursor is a standing, not a run's start and id.
            let runCursor = PageCursor("1795000000000", "run").text
            let response = try await s.client.send("GET", "/v1/runs/\(runID)?after=\(runCursor)", token: TestServer.adminToken)
            #expect(response.status == 400 && response.errorField == "after", "\(response.text)")
        }
    }
}
