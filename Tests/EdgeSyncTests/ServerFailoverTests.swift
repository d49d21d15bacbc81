import EdgeSync
import Testing

/// The failover policy over `server.url` + `server.urls` (issue 22), as a pure struct.
@Suite("Server failover policy")
struct ServerFailoverTests {
    @Test("a failure moves to the next URL round the list; answers (2xx, 4xx) stay")
    func movesOnFailureOnly() {
        var policy = ServerFailoverPolicy(count: 3, returnAfter: .seconds(300))
        #expect(policy.target(now: .zero) == 0)
        policy.receive(ServerFailoverPolicy.outcome(status: 200), from: 0, now: .seconds(1))
        policy.receive(ServerFailoverPolicy.outcome(status: 409), from: 0, now: .seconds(1))
        #expect(policy.target(now: .seconds(1)) == 0)
        policy.receive(ServerFailoverPolicy.outcome(status: 503), from: 0, now: .seconds(2))
        #expect(policy.target(now: .seconds(2)) == 1)
        policy.receive(.failed, from: 1, now: .seconds(3))
        #expect(policy.target(now: .seconds(3)) == 2)
        policy.receive(.failed, from: 2, now: .seconds(4))
        #expect(policy.target(now: .seconds(4)) == 0)
        #expect(policy.returnAt == nil)
    }

    @Test("away from the first URL, it goes back to it after returnAfter, counted from the first failover")
    func returnsToTheFirst() {
        var policy = ServerFailoverPolicy(count: 2, returnAfter: .seconds(300))
        policy.receive(.failed, from: 0, now: .seconds(10))
        #expect(policy.target(now: .seconds(10)) == 1)
        #expect(policy.target(now: .seconds(309)) == 1)
        #expect(policy.target(now: .seconds(310)) == 0)
        // Still down: over to the second again, and back after another 300 s.
        policy.receive(.failed, from: 0, now: .seconds(311))
        #expect(policy.target(now: .seconds(312)) == 1)
        #expect(policy.target(now: .seconds(610)) == 1)
        #expect(policy.target(now: .seconds(611)) == 0)
    }

    @Test("a late failure from a URL no longer current does not move the list again")
    func staleFailureIgnored() {
        var policy = ServerFailoverPolicy(count: 3)
        policy.receive(.failed, from: 0, now: .zero)
        policy.receive(.failed, from: 0, now: .zero)
        #expect(policy.target(now: .zero) == 1)
    }

    @Test("one URL: nothing to fail over to")
    func single() {
        var policy = ServerFailoverPolicy(count: 1)
        policy.receive(.failed, from: 0, now: .zero)
        #expect(policy.target(now: .zero) == 0)
        #expect(policy.returnAt == nil)
    }
}
