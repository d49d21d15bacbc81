import NIOCore
import Testing

@testable import TrackMeServer

/// The pure parts of the limits: deadlines, buckets, floods, identifiers.
@Suite("Security rules")
struct SecurityUnitTests {
    static func at(_ ms: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(ms) * 1_000_000) }

    @Test("deadlines: idle from open, body from head, none while answering, idle again after the response")
    func deadlines() {
        var machine = ConnectionDeadlines(idleTimeout: .milliseconds(300), bodyTimeout: .milliseconds(500))
        #expect(machine.receive(.opened, now: Self.at(1000)) == Self.at(1300))
        #expect(!machine.isExpired(now: Self.at(1299)))
        #expect(machine.isExpired(now: Self.at(1300)))
        #expect(machine.receive(.requestHead, now: Self.at(1200)) == Self.at(1700))
        #expect(machine.receive(.requestEnd, now: Self.at(1600)) == nil)
        #expect(!machine.isExpired(now: Self.at(99_000)))
        #expect(machine.receive(.responseEnd, now: Self.at(2000)) == Self.at(2300))
    }

    @Test("deadlines: a pipelined second request keeps the connection answering until both responses end")
    func pipelined() {
        var machine = ConnectionDeadlines(idleTimeout: .milliseconds(300), bodyTimeout: .milliseconds(500))
        _ = machine.receive(.opened, now: Self.at(0))
        _ = machine.receive(.requestHead, now: Self.at(10))
        _ = machine.receive(.requestEnd, now: Self.at(10))
        #expect(machine.receive(.requestHead, now: Self.at(20)) == Self.at(520))
        #expect(machine.receive(.requestEnd, now: Self.at(20)) == nil)
        #expect(machine.receive(.responseEnd, now: Self.at(30)) == nil)
        #expect(machine.receive(.responseEnd, now: Self.at(40)) == Self.at(340))
    }

    @Test("a token bucket gives its burst, then one per 1/rate, with Retry-After rounded up; a clock step back refills nothing")
    func bucket() {
        let limit = RateLimit(burst: 3, perSecond: 0.5)
        var state = RateLimiterState(limit: limit)
        #expect((0..<3).map { _ in state.take("k", now: 0) } == [.allowed, .allowed, .allowed])
        #expect(state.take("k", now: 0) == .refused(retryAfterSeconds: 2))
        #expect(state.take("k", now: 1000) == .refused(retryAfterSeconds: 1))
        #expect(state.take("k", now: 2000) == .allowed)
        #expect(state.take("k", now: -50_000) == .refused(retryAfterSeconds: 2))
        #expect(state.take("other", now: 0) == .allowed)
    }

    @Test("a bucket map past its key cap forgets only keys back at their burst")
    func prune() {
        var state = RateLimiterState(limit: RateLimit(burst: 1, perSecond: 1), maxKeys: 2)
        #expect(state.take("a", now: 0) == .allowed)
        #expect(state.take("b", now: 900) == .allowed)
        #expect(state.take("c", now: 1000) == .allowed)
        #expect(state.buckets.keys.sorted() == ["b", "c"])
        #expect(state.take("b", now: 1000) == .refused(retryAfterSeconds: 1))
    }

    @Test("an alert flood is reported once, and again only after the device was quiet long enough")
    func flood() {
        var state = AlertFloodState(limit: RateLimit(burst: 2, perSecond: 0.1))
        #expect(state.raise(deviceID: "d", now: 0) == .allowed)
        #expect(state.raise(deviceID: "d", now: 0) == .allowed)
        #expect(state.raise(deviceID: "d", now: 0) == .refused(retryAfterSeconds: 10, floodStarted: true))
        #expect(state.raise(deviceID: "d", now: 1) == .refused(retryAfterSeconds: 10, floodStarted: false))
        #expect(state.raise(deviceID: "e", now: 1) == .allowed)
        #expect(state.raise(deviceID: "d", now: 10_500) == .allowed)
        #expect(state.raise(deviceID: "d", now: 10_500) == .refused(retryAfterSeconds: 10, floodStarted: false))
        // Quiet for 30 s: the bucket is full, the flood is over; the next one is a new flood.
        #expect(state.raise(deviceID: "d", now: 40_000) == .allowed)
        #expect(state.raise(deviceID: "d", now: 40_000) == .allowed)
        #expect(state.raise(deviceID: "d", now: 40_000) == .refused(retryAfterSeconds: 10, floodStarted: true))
    }

    @Test(
        "identifiers",
        arguments: [
            ("alert-1", nil), ("a b/c", nil), ("é", nil), ("", "must not be empty"), ("al\u{0}ert", "must not contain control characters (U+0)"),
            ("\u{1B}[31m", "must not contain control characters (U+1B)"), ("x\u{9F}", "must not contain control characters (U+9F)"),
            (String(repeating: "é", count: 65), "must be at most 128 bytes"),
        ] as [(String, String?)]
    )
    func identifiers(text: String, problem: String?) {
        #expect(Identifier.problem(text) == problem)
    }

    @Test("path parameters are percent-decoded strictly")
    func pathParameters() throws {
        #expect(try Identifier.pathParameter("a%20b%2Fc", field: "id") == "a b/c")
        #expect(try Identifier.pathParameter("%C3%A9", field: "id") == "é")
        for bad in ["%", "%2", "%zz", "%FF", "a%00b", "%0A"] {
            #expect(throws: APIError.self) { try Identifier.pathParameter(bad, field: "id") }
        }
    }

    @Test(
        "loopback peers",
        arguments: [("127.0.0.1", true), ("127.9.8.7", true), ("::1", true), ("192.0.2.2", false), ("::ffff:127.0.0.1", true), ("fd00::2", false)]
    )
    func loopback(address: String, expected: Bool) throws {
        let socketAddress = try SocketAddress(ipAddress: address, port: 1)
        #expect(ServerRequestContext.isLoopback(socketAddress) == expected)
    }
}
