import Foundation
import Testing
import TrackMeCore

/// The server's poll request in a reply (`SyncOrders.pollMilliseconds`): a taxi's heartbeat
/// shortened while a ride may be offered to it, and its own 30 s again without it.
@Suite struct ServerPollTests {
    @Test func aReplysPollShortensTheHeartbeatUntilAReplyWithoutIt() {
        var policy = ReadingsLanePolicy(settings: ReadingsLanePolicyTests.settings, seed: 1)
        _ = policy.receive(.sent, now: .seconds(10))
        #expect(!policy.heartbeatDue(now: .seconds(11)))
        policy.serverAsksPoll(.seconds(1))
        #expect(policy.heartbeatInterval == .seconds(1))
        #expect(policy.heartbeatDue(now: .seconds(11)))
        policy.serverAsksPoll(nil)
        #expect(policy.heartbeatInterval == .seconds(30))
        #expect(!policy.heartbeatDue(now: .seconds(11)))
        // Never longer than the device's own heartbeat, and never zero.
        policy.serverAsksPoll(.seconds(300))
        #expect(policy.heartbeatInterval == .seconds(30))
        policy.serverAsksPoll(.zero)
        #expect(policy.heartbeatInterval == .seconds(30))
    }

    @Test func theTaxiReportsEvery30SecondsOnItsOwn() {
        #expect(DeviceProfile.taxi.heartbeatInterval == .seconds(30))
        #expect(DeviceProfile.taxi.sampling.movingInterval == .seconds(30))
        #expect(DeviceProfile.taxi.sampling.stationaryInterval == .seconds(30))
    }

    @Test func pollMillisecondsRoundTripsInTheReply() throws {
        let body = Array(#"{"orders":{"poll_ms":1000}}"#.utf8)
        let orders = try #require(SyncOrders.inReply(body))
        #expect(orders.pollMilliseconds == 1000)
        #expect(!orders.isEmpty)
        #expect(SyncOrders.inReply(Array(#"{"orders":{}}"#.utf8)) == nil)
    }
}
