import Testing
import TrackMeCore

@testable import GPSDPosition

@Suite("GPSD state machine and backoff")
struct GPSDStateMachineTests {
    static let error = GPSDError(code: .connectionLost, message: "test", host: "127.0.0.1", port: 1)
    static let fix3D = PositionFix(time: "2026-01-01T00:00:00.000Z", mode: .threeDimensional, latitude: 1, longitude: 2)

    @Test("backoff doubles up to the cap and resets after a productive connection")
    func backoff() {
        var machine = GPSDStateMachine(backoff: Backoff(initial: .seconds(1), maximum: .seconds(5)), reconnects: true)
        let delays = (0..<5).map { _ in machine.receive(.connectionEnded(Self.error), now: .zero).retryIn }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
        _ = machine.receive(.connected, now: .zero)
        let afterSilentConnection = machine.receive(.connectionEnded(Self.error), now: .zero).retryIn
        #expect(afterSilentConnection == .seconds(5), "a connection that delivered nothing does not reset")
        _ = machine.receive(.connected, now: .zero)
        _ = machine.receive(.report(.other), now: .zero)
        let afterProductiveConnection = machine.receive(.connectionEnded(Self.error), now: .zero).retryIn
        #expect(afterProductiveConnection == .seconds(1))
    }

    @Test("states change only on transitions; fixes pass through; no fix carries its start time")
    func transitions() {
        var machine = GPSDStateMachine(backoff: Backoff.gpsdReconnect, reconnects: true)
        var all: [GPSDEvent] = []
        func feed(_ input: GPSDStateMachine.Input, _ seconds: Int) {
            all += machine.receive(input, now: .seconds(seconds)).events
        }
        feed(.connected, 0)
        feed(.report(.devices(count: 1)), 0)
        feed(.report(.tpv(PositionFix(mode: .none))), 1)
        feed(.report(.tpv(Self.fix3D)), 2)
        feed(.report(.tpv(Self.fix3D)), 3)
        feed(.report(.device(activated: true)), 3)
        feed(.report(.tpv(PositionFix(mode: .none))), 4)
        feed(.report(.tpv(PositionFix(mode: .none))), 200)
        feed(.report(.device(activated: false)), 201)
        feed(.connectionEnded(Self.error), 202)
        #expect(
            all == [
                .state(.connected),
                .state(.noFix(since: .zero)),
                .state(.fix(.threeDimensional)), .fix(Self.fix3D), .fix(Self.fix3D),
                .state(.noFix(since: .seconds(4))),
                .state(.noDevice),
                .state(.disconnected(Self.error, retryIn: .milliseconds(500))),
            ]
        )
    }

    @Test("receiver unplugged and replugged: no device, then no fix since the replug, then fix")
    func replug() {
        var machine = GPSDStateMachine(backoff: Backoff.gpsdReconnect, reconnects: true)
        var all: [GPSDEvent] = []
        func feed(_ input: GPSDStateMachine.Input, _ seconds: Int) {
            all += machine.receive(input, now: .seconds(seconds)).events
        }
        feed(.connected, 0)
        feed(.report(.tpv(Self.fix3D)), 1)
        feed(.report(.device(activated: false)), 10)
        feed(.report(.devices(count: 0)), 11)
        feed(.report(.device(activated: true)), 70)
        feed(.report(.tpv(PositionFix(mode: .none))), 71)
        feed(.report(.tpv(Self.fix3D)), 95)
        #expect(
            all == [
                .state(.connected),
                .state(.fix(.threeDimensional)), .fix(Self.fix3D),
                .state(.noDevice),
                .state(.noFix(since: .seconds(70))),
                .state(.fix(.threeDimensional)), .fix(Self.fix3D),
            ]
        )
    }

    @Test("a one-shot machine does not ask to reconnect")
    func oneShot() {
        var machine = GPSDStateMachine(backoff: Backoff.gpsdReconnect, reconnects: false)
        let (events, retryIn) = machine.receive(.connectionEnded(Self.error), now: .zero)
        #expect(retryIn == nil)
        #expect(events == [.state(.disconnected(Self.error, retryIn: nil))])
    }

    @Test("dump lines: gpsd's time verbatim, null for absent fields")
    func dumpLine() {
        let fix = PositionFix(
            time: "2019-04-07T00:02:31.420Z",
            mode: .twoDimensional,
            latitude: 48.483341667,
            longitude: 0.366693333,
            speed: 0.082,
            track: 212.28
        )
        #expect(
            GPSDDump.line(for: fix)
                == #"{"time": "2019-04-07T00:02:31.420Z", "mode": 2, "lat": 48.483341667, "lon": 0.366693333, "alt_hae": null, "speed": 0.082, "track": 212.28, "eph": null}"#
        )
        #expect(GPSDDump.line(for: PositionFix(mode: .threeDimensional, latitude: 1, longitude: 2)).hasPrefix(#"{"time": null, "mode": 3,"#))
    }
}
