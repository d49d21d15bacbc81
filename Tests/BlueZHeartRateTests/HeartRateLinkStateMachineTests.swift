import BlueZHeartRate
import Testing
import TrackMeCore

@Suite struct HeartRateLinkStateMachineTests {
    @Test func connectLoseAndReconnect() throws {
        let address = try #require(BluetoothAddress("00:AA:01:00:00:00"))
        var machine = HeartRateLinkStateMachine(backoff: Backoff(initial: .seconds(1), maximum: .seconds(8), jitter: 0.5))
        #expect(machine.receive(.start, now: .zero, random: 0) == [.report(.searching(attempt: 1)), .connect])
        #expect(
            machine.receive(.connectFailed(reason: "not found", notFound: true), now: .seconds(10), random: 0)
                == [.report(.unreachable(reason: "not found", notFound: true, retryIn: .seconds(1))), .wait(.seconds(1))]
        )
        #expect(machine.receive(.retryDue, now: .seconds(11), random: 0) == [.report(.searching(attempt: 2)), .connect])
        #expect(
            machine.receive(.connectFailed(reason: "reset", notFound: false), now: .seconds(12), random: 1)
                == [.report(.unreachable(reason: "reset", notFound: false, retryIn: .seconds(1))), .wait(.seconds(1))]
        )
        #expect(machine.receive(.retryDue, now: .seconds(13), random: 0) == [.report(.searching(attempt: 3)), .connect])
        #expect(
            machine.receive(.connected(address: address), now: .seconds(14), random: 0)
                == [.report(.connected(address: address, gap: nil)), .forwardReadings]
        )
        #expect(
            machine.receive(.linkLost(reason: "peer closed"), now: .seconds(100), random: 0)
                == [.report(.lost(since: .seconds(100), reason: "peer closed")), .wait(.seconds(1))]
        )
        #expect(machine.receive(.retryDue, now: .seconds(101), random: 0) == [.report(.searching(attempt: 1)), .connect])
        #expect(
            machine.receive(.connected(address: address), now: .milliseconds(101_500), random: 0)
                == [.report(.connected(address: address, gap: .milliseconds(1500))), .forwardReadings]
        )
    }
}
