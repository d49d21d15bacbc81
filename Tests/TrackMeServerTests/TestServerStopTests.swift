import Dispatch
import Foundation
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

/// The guard on a test server's shutdown: a server that does not end fails its own test, saying
/// what it logged last, instead of holding the whole test target until its timeout.
@Suite("A test server that does not shut down")
struct TestServerStopTests {
    @Test("a graceful shutdown held up past its limit is a failure with the server's own log; cancelled, the server ends")
    func boundedStop() async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.heavyRequests = 1
        let s = try await TestServer.start(.sqlite, limits: limits)
        _ = try await s.wearer("ada", device: "pi-0001", age: 70)
        let session = try await s.signIn("ada")

        // The one heavy thread held by the test, and a statistic whose first count waits for it:
        // a request in flight, which a graceful shutdown waits for.
        let pool = s.server.hall.people.heavyWork
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await pool.run(busy: PersonData.heavyWorkBusy) { release.wait() } }
        try await eventually("the heavy thread is held", within: .seconds(60)) { pool.inFlight == 1 }
        let socket = try RawSocket(port: s.port)
        let span = "from=\(TestServer.startWall)&to=\(TestServer.startWall + 86_400_000)"
        socket.send("GET /v1/people/me/statistics?\(span) HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(session.cookie)\r\n\r\n")
        try await eventually("the statistic waits for the heavy thread", within: .seconds(60)) { pool.inFlight == 2 }

        // The request cannot end while the thread is held, so neither can the shutdown.
        let stopped = await s.running.stop(limit: .seconds(1))
        release.signal()
        try await holder.value
        guard case .failure(let error) = stopped else {
            Issue.record("the shutdown ended although a request it waits for could not")
            return
        }
        let report = "\(error)"
        #expect(report.contains("did not end within 1.0 seconds of a graceful shutdown"), "\(report)")
        // The log kept at every level: the service group's debug lines are not printed, but kept.
        #expect(report.contains("debug"), "\(report)")
        #expect(report.contains("once cancelled it ended"), "\(report)")
    }

    @Test("a stopped server's work pools keep no thread: batches, sign-ins and downloads each started one")
    func stoppedServerKeepsNoThread() async throws {
        let s = try await TestServer.start(.sqlite)
        let (_, token) = try await s.wearer("ada", device: "pi-0001", age: 70)
        let batch = Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 70, wall: TestServer.startWall)])
        #expect(try await s.send(batch, token: token).status == 200)
        let session = try await s.signIn("ada")
        let span = "from=\(TestServer.startWall)&to=\(TestServer.startWall + 86_400_000)"
        #expect(try await s.page("GET", "/v1/people/me/statistics?\(span)", session).status == 200)
        let hall = s.server.hall
        let pools = [hall.ingest.batchWork, hall.access.passwords.pool, hall.people.heavyWork]
        #expect(pools.allSatisfy { $0.threadsStarted > 0 }, "each pool ran work")
        await s.stop()
        for pool in pools {
            // A bound on a thread that never ends, not a speed.
            #expect(await BlockingThreads.shared.run { pool.waitUntilNoThreadIsAlive(within: .seconds(30)) })
        }
    }
}
