import EdgeBenchmarks
import EdgeSync
import Foundation
import ServerTestSupport
import Synchronization
import Testing
import TrackMeCore

/// The fault-injecting proxy itself (issue 15), in front of the real server: each fault does what
/// it says to the request and to what the server stored, and time windows and delays follow the
/// proxy's clock, not the wall.
@Suite("Fault proxy")
struct FaultProxyTests {
    static func batch(_ number: Int64) throws -> (key: String, body: [UInt8]) {
        let readings = (0..<5).map { i in
            let (t, p) = SyntheticReadings.reading(Int(number) * 5 + i)
            return WireReading(sequence: number * 5 + Int64(i) + 1, timestamp: t, payload: p)
        }
        let batch = SyncBatch(deviceID: deviceID, batchSequence: number, readings: readings)
        return (batch.idempotencyKey, Array(try WireCodec.encode(batch)))
    }

    /// Batch `number` through a fresh transport (a connection of its own).
    static func post(_ number: Int64, to proxy: FaultProxy, token: String) async throws -> HTTPResponse {
        try await post(number, through: CurlTransport(baseURL: proxy.baseURL, timeout: .seconds(5)), token: token)
    }

    static func post(_ number: Int64, through transport: any HTTPTransport, token: String) async throws -> HTTPResponse {
        let (key, body) = try batch(number)
        return try await transport.post(
            path: "v1/batches",
            headers: ["Authorization": "Bearer \(token)", "Idempotency-Key": key, "Content-Type": "application/json"],
            body: body
        )
    }

    @Test("status: answered by the proxy, never seen by the server; then the server again")
    func injectedStatus() async throws {
        try await SyncFixture.with { f in
            f.proxy.inject(.status(503, retryAfterSeconds: 9), .next(1))
            let refused = try await Self.post(1, to: f.proxy, token: f.token)
            #expect(refused.status == 503 && refused.retryAfter == .seconds(9))
            #expect(try await f.stored().isEmpty)
            #expect(try await Self.post(1, to: f.proxy, token: f.token).status == 200)
            #expect(try await f.stored().count == 5)
            #expect(f.proxy.exchanges.map(\.status) == [503, 200])
        }
    }

    @Test("dropRequest: the client gets no answer and the server stored nothing; dropAnswer: no answer, but the server stored it")
    func dropped() async throws {
        try await SyncFixture.with { f in
            f.proxy.inject(.dropRequest, .next(1))
            await #expect(throws: SyncError.self) { try await Self.post(1, to: f.proxy, token: f.token) }
            let afterDroppedRequest = try await f.stored().count
            #expect(afterDroppedRequest == 0)
            f.proxy.inject(.dropAnswer, .next(1))
            await #expect(throws: SyncError.self) { try await Self.post(1, to: f.proxy, token: f.token) }
            let afterDroppedAnswer = try await f.stored().count
            #expect(afterDroppedAnswer == 5)
            #expect(f.proxy.exchanges.map(\.status) == [nil, nil])
        }
    }

    @Test("refuseConnections counts connections; goAway refuses everything until comeBack, on the same port")
    func refusedAndAway() async throws {
        try await SyncFixture.with { f in
            f.proxy.inject(.refuseConnections, .next(1))
            await #expect(throws: SyncError.self) { try await Self.post(1, to: f.proxy, token: f.token) }
            #expect(f.proxy.refusedConnections == 1 && f.proxy.requestCount == 0)
            #expect(try await Self.post(1, to: f.proxy, token: f.token).status == 200)
            let port = f.proxy.port
            await f.proxy.goAway()
            await #expect(throws: SyncError.self) { try await Self.post(2, to: f.proxy, token: f.token) }
            try f.proxy.comeBack()
            #expect(f.proxy.port == port)
            #expect(try await Self.post(2, to: f.proxy, token: f.token).status == 200)
            #expect(try await f.stored().count == 10)
        }
    }

    @Test("delayAnswer waits on the proxy's clock: the server has stored the batch, the client has no answer until the clock moves")
    func delayOnTheClock() async throws {
        try await SyncFixture.with { f in
            let clock = VirtualClock()
            let proxy = try FaultProxy(upstreamPort: f.server.port, clock: clock)
            proxy.inject(.delayAnswer(.seconds(30)), .next(1))
            let answered = Atomic<Bool>(false)
            let token = f.token
            let sending = Task {
                let response = try await Self.post(1, to: proxy, token: token)
                answered.store(true, ordering: .sequentiallyConsistent)
                return response.status
            }
            await clock.waitForSleepers(1)
            // The proxy sleeps only once it holds the server's answer.
            #expect(try await f.stored().count == 5)
            let answeredBeforeTheClockMoved = answered.load(ordering: .sequentiallyConsistent)
            #expect(!answeredBeforeTheClockMoved)
            clock.advance(by: .seconds(30))
            #expect(try await sending.value == 200)
            await proxy.shutdown()
        }
    }

    @Test("a time window on the proxy's clock: the fault holds inside it only")
    func window() async throws {
        try await SyncFixture.with { f in
            let clock = VirtualClock()
            let proxy = try FaultProxy(upstreamPort: f.server.port, clock: clock)
            proxy.inject(.status(500), .window(from: .seconds(10), until: .seconds(20)))
            #expect(try await Self.post(1, to: proxy, token: f.token).status == 200)
            clock.advance(by: .seconds(10))
            #expect(try await Self.post(2, to: proxy, token: f.token).status == 500)
            clock.advance(by: .seconds(9))
            #expect(try await Self.post(2, to: proxy, token: f.token).status == 500)
            clock.advance(by: .seconds(1))
            #expect(try await Self.post(2, to: proxy, token: f.token).status == 200)
            #expect(try await f.stored().count == 10)
            await proxy.shutdown()
        }
    }
}
