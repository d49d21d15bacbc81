import Dispatch
import Foundation
import MetricsTestKit
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

/// A person's statistics and downloads stop when their client hangs up: the request's work
/// waiting for the heavy threads is dropped unrun, its page loop reads no further, and the
/// abandonment is counted.
///
/// The one heavy thread is held by the test, so the request's first page waits for it. The
/// client then closes its side of the connection. Only the hang-up can end the request while the
/// thread is still held: the answer (or, for a download, the end of the connection) that the
/// client reads then proves the cancellation path, not a race. The socket's timeout only keeps a
/// server that never hears the hang-up from holding the test forever.
@Suite("A client that hangs up stops its heavy read")
struct HangUpTests {
    static let t0 = TestServer.startWall
    static let readings = 400
    static let pageSize = 40

    enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case statistics
        case csv
        case gpx

        var path: String {
            let span = "from=\(HangUpTests.t0)&to=\(HangUpTests.t0 + 86_400_000)"
            switch self {
            case .statistics: return "/v1/people/me/statistics?\(span)"
            case .csv: return "/v1/people/me/export?format=csv&\(span)"
            case .gpx: return "/v1/people/me/track.gpx?\(span)"
            }
        }

        var label: String {
            switch self {
            case .statistics: "/v1/people/{id}/statistics"
            case .csv: "/v1/people/{id}/export"
            case .gpx: "/v1/people/{id}/track.gpx"
            }
        }

        var testDescription: String { rawValue }
    }

    @Test(
        "the client closes while the request's first page waits for the heavy thread: the request ends without it, its queued page is dropped unread, and it is counted",
        arguments: Backend.enabled,
        Route.allCases
    )
    func hangUpStopsTheRead(backend: Backend, route: Route) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.heavyRequests = 1
        let metrics = TestMetrics()
        let configure: (inout ServerConfiguration) -> Void = {
            $0.metricsFactory = metrics
            $0.maxPageSize = Self.pageSize
        }
        try await TestServer.with(backend, limits: limits, configure: configure) { s in
            let (_, token) = try await s.wearer("ada", device: "pi-0001", age: 70)
            s.at(Int64(Self.readings + 10) * 1000)
            let heartRates = (1...Self.readings).map { n in Sample.heartRate(seq: Int64(n), bpm: 60 + n % 40, wall: Self.t0 + Int64(n) * 1000) }
            let fixes = (1...Self.readings).map { n in Sample.fix(seq: Int64(Self.readings + n), wall: Self.t0 + Int64(n) * 1000) }
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: heartRates), token: token).status == 200)
            #expect(try await s.send(Sample.batch("pi-0001", seq: 2, readings: fixes), token: token).status == 200)
            let session = try await s.signIn("ada")

            let request = "GET \(route.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(session.cookie)\r\n\r\n"
            let hangUp = try await Self.hangUpWhileQueued(s, request: request)
            #expect(hangUp.closed, "the server heard the hang-up with the heavy thread still held")
            #expect(hangUp.inFlightAtClose == 2, "the heavy thread was still held when the request ended")
            switch route {
            case .statistics:
                // Answered for the response counter; the client that went does not read it.
                #expect(hangUp.received.hasPrefix("HTTP/1.1 499"), "\(hangUp.received)")
            case .csv, .gpx:
                // The head went before the first page; the body never ends.
                #expect(hangUp.received.hasPrefix("HTTP/1.1 200"), "\(hangUp.received)")
                #expect(!hangUp.received.contains("\r\n0\r\n\r\n"), "the download was not finished")
            }
            let abandoned = try metrics.expectCounter("trackme_server_requests_abandoned_total", [("route", route.label)])
            #expect(abandoned.totalValue == 1)
            #expect(hangUp.dropped == 1, "the request's queued page was dropped")
            #expect(hangUp.completed == 2, "no page of the request was read or decoded: only the holder and the fence ran")

            // The whole read, for comparison: every page of it on the heavy thread.
            let pool = s.server.hall.people.heavyWork
            let ranBefore = pool.completed
            let whole = try await s.page("GET", route.path, session)
            #expect(whole.status == 200)
            #expect(whole.headers["connection"]?.lowercased() == "close")
            #expect(pool.completed - ranBefore >= Self.readings / Self.pageSize)
            #expect(abandoned.totalValue == 1, "a request that was answered is not counted")
        }
    }

    @Test(
        "a group query whose client closes while its first scan waits for the heavy thread ends without it: the scan is dropped unrun, nothing is recorded as answered, and it is counted"
    )
    func hangUpStopsAGroupQuery() async throws {
        // SQLite only: there the group query's scans run on the heavy threads, which the test
        // can hold; on PostgreSQL they are the store's own reads.
        var limits = ServerLimits.withoutRateLimits
        limits.heavyRequests = 1
        let metrics = TestMetrics()
        let configure: (inout ServerConfiguration) -> Void = { $0.metricsFactory = metrics }
        try await TestServer.with(.sqlite, limits: limits, configure: configure) { s in
            s.at(40 * GroupFigures.dayMilliseconds)
            let org = try await s.organisation("acme", name: "Acme")
            try await s.population("p", count: 1001, days: 1...10)

            let to = (s.wall.now / GroupFigures.dayMilliseconds) * GroupFigures.dayMilliseconds
            let query = try JSONSerialization.data(withJSONObject: [
                "age_from": 70, "age_to": 79, "south": 45.0, "west": 9.0, "north": 45.1, "east": 9.1,
                "from_ms": to - 10 * GroupFigures.dayMilliseconds, "to_ms": to,
            ])
            let hangUp = try await Self.hangUpWhileQueued(
                s,
                request: "POST /v1/group-figures HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(org.cookie)\r\nX-CSRF-Token: \(org.csrf)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(query.count)\r\n\r\n" + String(decoding: query, as: UTF8.self)
            )
            #expect(hangUp.closed, "the server heard the hang-up with the heavy thread still held")
            #expect(hangUp.received.hasPrefix("HTTP/1.1 499"), "\(hangUp.received)")
            let abandoned = try metrics.expectCounter("trackme_server_requests_abandoned_total", [("route", "/v1/group-figures")])
            #expect(abandoned.totalValue == 1)
            #expect(hangUp.dropped == 1, "the query's queued scan was dropped")
            #expect(hangUp.completed == 2, "no scan of the query ran: only the holder and the fence")
            #expect(try await s.server.store.answeredGroups().isEmpty, "an abandoned query is not an answer")

            // The same query with its client staying: answered, its scans on the heavy thread.
            let pool = s.server.hall.people.heavyWork
            let ranBefore = pool.completed
            let answered = try await s.groupQuery(org)
            #expect(answered.status == 200, "\(answered.text)")
            #expect(answered.object["people"] as? Int == 1001)
            #expect(answered.headers["connection"]?.lowercased() == "close")
            #expect(pool.completed - ranBefore >= 1)
            #expect(abandoned.totalValue == 1, "a query that was answered is not counted")
        }
    }

    /// Holds the one heavy thread with work that waits for the test, sends `request` on a
    /// socket of its own, waits until the request's first work is queued behind the holder, and
    /// hangs up. Only the hang-up can end the request while the thread is held, so what the
    /// client then reads proves the cancellation path, not a race. Then it lets the thread go
    /// and runs a fence behind it (one thread takes work in order: once the fence ran, the
    /// request's work had its turn), and counts the pool's work since before the request.
    static func hangUpWhileQueued(
        _ s: TestServer,
        request: String
    ) async throws -> (received: String, closed: Bool, inFlightAtClose: Int, dropped: Int, completed: Int) {
        let pool = s.server.hall.people.heavyWork
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.run(busy: PersonData.heavyWorkBusy) { release.wait() } }
        try await eventually("the heavy thread is held", within: .seconds(60)) { pool.inFlight == 1 }
        let before = (completed: pool.completed, dropped: pool.dropped)
        let socket = try RawSocket(port: s.port)
        socket.send(request)
        try await eventually("the request's first work waits for the heavy thread", within: .seconds(60)) { pool.inFlight == 2 }
        socket.finishSending()
        // The socket's timeout only keeps a server that never hears the hang-up from holding
        // the test forever.
        let closed = await BlockingThreads.shared.run { socket.waitForClose(timeout: .seconds(30)) }
        let inFlightAtClose = pool.inFlight
        release.signal()
        try await holder.value
        try await pool.run(busy: PersonData.heavyWorkBusy) {}
        return (
            String(decoding: socket.received, as: UTF8.self), closed, inFlightAtClose,
            pool.dropped - before.dropped, pool.completed - before.completed
        )
    }
}
