import EdgeDispatch
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore

/// `DispatchLane.step()`: the lane's work due now, performed and awaited by an owner whose event
/// loop is the scheduler (the simulation), with the same policy as `run()`.
@Suite struct DispatchLaneStepTests {
    final class Seen: Sendable {
        let events = Mutex<[DispatchLaneEvent]>([])
    }

    static func record(_ state: AlertState) -> AlertRecord {
        let stamp = ReadingTimestamp(monotonicNanoseconds: 1_000_000_000, bootID: "step", wallClockMilliseconds: nil, wallClockTrusted: false)
        return AlertRecord(id: "s-1", deviceID: "pi", kind: .manual, state: state, firstCritical: stamp, raised: stamp)
    }

    @Test func aStepSendsWhatIsDueAndRetriesOnlyWhenTheClockSaysSo() async throws {
        let clock = VirtualClock()
        let transport = ScriptedTransport(failures: 1)
        let seen = Seen()
        let lane = DispatchLane(
            transport: transport,
            fallback: nil,
            clock: clock,
            timestamp: { ReadingTimestamp(monotonicNanoseconds: 0, bootID: "step", wallClockMilliseconds: nil, wallClockTrusted: false) },
            observe: { event in seen.events.withLock { $0.append(event) } },
            logger: Logger(label: "test.dispatch")
        )
        await lane.submit(.raise(Self.record(.raised)))
        #expect(await transport.attempts.isEmpty, "submit only queues; the step performs")
        await lane.step()
        #expect(await transport.attempts.count == 1)
        #expect(await lane.queuedUpdates.count == 1, "the failed raise waits for its retry")
        // Not yet a second later: the retry waits on the lane's clock.
        clock.advance(by: .milliseconds(500))
        await lane.step()
        #expect(await transport.attempts.count == 1)
        clock.advance(by: .milliseconds(500))
        await lane.step()
        #expect(await transport.attempts.count == 2)
        #expect(await lane.queuedUpdates.isEmpty)
        #expect(seen.events.withLock { $0 }.contains(.delivered(alertID: "s-1")))
        // The cancellation goes out in the same step as it is due.
        await lane.submit(.cancelled(Self.record(.cancelled)))
        await lane.step()
        let types = await transport.attempts.map(\.type)
        #expect(types == [.raised, .raised, .cancelled])
    }
}
