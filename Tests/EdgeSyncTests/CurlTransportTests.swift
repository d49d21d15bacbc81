import EdgeSync
import Foundation
import ServerTestSupport
import Testing
import TrackMeCore

/// The agent's one HTTP client keeps its connections alive (issue 15): batches in a row go over
/// one connection, a connection the far end closed between two batches is replaced without the
/// caller noticing, and the lanes posting at once get a connection each, of which two are kept.
/// Counted at the fault proxy in front of the real server, which accepts the connections.
@Suite("Curl transport connections")
struct CurlTransportTests {
    @Test("ten batches in a row go over one connection")
    func sequentialReuse() async throws {
        try await SyncFixture.with { (f: SyncFixture) async throws in
            let transport = CurlTransport(baseURL: f.proxy.baseURL, timeout: .seconds(5))
            for number in Int64(1)...10 {
                #expect(try await FaultProxyTests.post(number, through: transport, token: f.token).status == 200)
            }
            #expect(f.proxy.acceptedConnections == 1)
            #expect(transport.connectionsOpened == 1)
            #expect(f.proxy.requestCount == 10)
            #expect(try await f.stored().count == 50)
        }
    }

    @Test("a connection the far end closed between two batches is replaced; nothing lost, nothing sent twice")
    func closedBetweenRequests() async throws {
        try await SyncFixture.with { (f: SyncFixture) async throws in
            let transport = CurlTransport(baseURL: f.proxy.baseURL, timeout: .seconds(5))
            for number in Int64(1)...6 {
                // The 2nd and the 4th answer arrive, and then their connection is closed.
                if number == 2 || number == 4 { f.proxy.inject(.closeAfterAnswer, .next(1)) }
                #expect(try await FaultProxyTests.post(number, through: transport, token: f.token).status == 200)
            }
            #expect(f.proxy.acceptedConnections == 3)
            #expect(f.proxy.exchanges.map(\.status) == Array(repeating: 200, count: 6))
            #expect(try await f.stored().count == 30)
        }
    }

    @Test("a POST whose caller is cancelled ends as cancelled, not at its timeout; the next POST goes through")
    func cancelledWhileTheServerHoldsTheAnswer() async throws {
        try await SyncFixture.with { (f: SyncFixture) async throws in
            // Without the stop, the POST would end at this timeout, saying so.
            let transport = CurlTransport(baseURL: f.proxy.baseURL, timeout: .seconds(20))
            f.proxy.inject(.holdAnswerUntilClientCloses, .next(1))
            let token = f.token
            let post = Task { try await FaultProxyTests.post(1, through: transport, token: token) }
            while f.proxy.requestCount == 0 { await Task.yield() }
            post.cancel()
            do {
                let answer = try await post.value
                Issue.record("a held answer arrived: \(answer.status)")
            } catch let error as SyncError {
                #expect(error.message == "cancelled", "\(error)")
            }
            // The next POST goes through, on a connection of its own.
            #expect(try await FaultProxyTests.post(2, through: transport, token: token).status == 200)
        }
    }

    @Test("posts at the same time get a connection each; two are kept for the next ones")
    func concurrentPosts() async throws {
        try await SyncFixture.with { (f: SyncFixture) async throws in
            let clock = VirtualClock()
            let proxy = try FaultProxy(upstreamPort: f.server.port, clock: clock)
            let transport = CurlTransport(baseURL: proxy.baseURL, timeout: .seconds(30), keptConnections: 2)
            let token = f.token
            // Three posts held at the proxy until all three are in flight.
            func together(_ numbers: [Int64]) async throws -> [Int] {
                proxy.inject(.delayAnswer(.seconds(1)), .next(numbers.count))
                return try await withThrowingTaskGroup(of: Int.self) { group in
                    for number in numbers {
                        group.addTask { try await FaultProxyTests.post(number, through: transport, token: token).status }
                    }
                    await clock.waitForSleepers(numbers.count)
                    clock.advance(by: .seconds(1))
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            #expect(try await together([1, 2, 3]) == [200, 200, 200])
            #expect(proxy.acceptedConnections == 3)
            for number in Int64(4)...6 {
                #expect(try await FaultProxyTests.post(number, through: transport, token: token).status == 200)
            }
            #expect(proxy.acceptedConnections == 3, "a kept connection was not reused")
            // Two kept connections and one new one.
            #expect(try await together([7, 8, 9]) == [200, 200, 200])
            #expect(proxy.acceptedConnections == 4)
            #expect(try await f.stored().count == 45)
            await proxy.shutdown()
        }
    }
}
