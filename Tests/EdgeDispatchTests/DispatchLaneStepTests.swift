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

/// The contact the device's fallback told while offline is named in the update that reaches the
/// server, so that the server does not tell them again.
@Suite(.timeLimit(.minutes(10))) struct DispatchLaneContactsToldTests {
    /// Refuses every send until switched online.
    actor SwitchedTransport: AlertTransport {
        struct Offline: Error {}
        var online = false
        private(set) var accepted: [AlertUpdate] = []

        func goOnline() { online = true }

        func send(_ update: AlertUpdate) async throws {
            guard online else { throw Offline() }
            accepted.append(update)
        }
    }

    @Test func theRaiseThatFinallyGoesSaysWhomTheRealFallbackTold() async throws {
        let script = try FallbackScript()
        defer { script.remove() }
        let clock = VirtualClock()
        let transport = SwitchedTransport()
        let seen = DispatchLaneStepTests.Seen()
        let lane = DispatchLane(
            transport: transport,
            fallback: script.fallback,
            clock: clock,
            timestamp: {
                ReadingTimestamp(
                    monotonicNanoseconds: UInt64(clock.now.offset.components.seconds) * 1_000_000_000,
                    bootID: "step",
                    wallClockMilliseconds: nil,
                    wallClockTrusted: false
                )
            },
            observe: { event in seen.events.withLock { $0.append(event) } },
            logger: Logger(label: "test.dispatch")
        )
        await lane.submit(.raise(DispatchLaneTests.alert))
        await lane.step()
        for _ in 1...181 {
            clock.advance(by: .seconds(1))
            await lane.step()
        }
        #expect(try String(contentsOf: script.reason, encoding: .utf8) == "notify_contact 0", "offline at 180 s: the fallback told contact 0")
        #expect(seen.events.withLock { $0 }.contains(.fallbackSucceeded(alertID: DispatchLaneTests.alert.id, reason: .notifyContact)))
        await transport.goOnline()
        clock.advance(by: .seconds(1))
        await lane.step()
        let accepted = await transport.accepted
        let raise = try #require(accepted.first)
        #expect(raise.updateSequence == 0)
        #expect(raise.contactsTold.map(\.contactIndex) == [0])
        #expect(raise.contactsTold.first?.path == .localFallback)
        #expect(raise.contactsTold.first?.at.monotonicNanoseconds == 180_000_000_000, "when the fallback finished, on the lane's clock")
        #expect(accepted.allSatisfy { $0.contactsTold.map(\.contactIndex) == [0] }, "every update after it says so too")
    }
}
