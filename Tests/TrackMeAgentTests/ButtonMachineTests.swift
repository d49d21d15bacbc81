import Testing
import TrackMeCore

@testable import TrackMeAgent

/// The SOS button's press lengths (issue 19), on an injected clock: `now` is given with each event.
@Suite("button press lengths")
struct ButtonMachineTests {
    @Test("held 2 s with no alert: a manual SOS as soon as the hold reaches 2 s, once")
    func longPressRaises() {
        var b = ButtonMachine()
        #expect(b.receive(.down, now: .seconds(10), alert: nil) == nil)
        #expect(b.receive(.tick, now: .milliseconds(11_900), alert: nil) == nil)
        #expect(b.receive(.tick, now: .seconds(12), alert: nil) == .manualSOS)
        #expect(b.receive(.tick, now: .seconds(13), alert: .pending) == nil, "once per hold")
        #expect(b.receive(.up, now: .seconds(14), alert: .pending) == nil, "the release of a long press cancels nothing")
    }

    @Test("a long press released before any tick still raises")
    func longPressWithoutTick() {
        var b = ButtonMachine(longPress: .seconds(3))
        _ = b.receive(.down, now: .zero, alert: nil)
        #expect(b.receive(.up, now: .milliseconds(3100), alert: nil) == .manualSOS)
    }

    @Test("a short press during a countdown cancels it as accidental")
    func shortPressCancels() {
        var b = ButtonMachine()
        _ = b.receive(.down, now: .seconds(1), alert: .pending)
        #expect(b.receive(.up, now: .milliseconds(1300), alert: .pending) == .cancel(.accidental))
    }

    @Test("presses while an alert is open do nothing", arguments: [AlertState.raised, .delivered, .acknowledged])
    func openAlertIgnoresPresses(state: AlertState) {
        var b = ButtonMachine()
        _ = b.receive(.down, now: .zero, alert: state)
        #expect(b.receive(.up, now: .milliseconds(200), alert: state) == nil, "a short press never calls off help")
        _ = b.receive(.down, now: .seconds(1), alert: state)
        #expect(b.receive(.tick, now: .seconds(4), alert: state) == nil, "a long press raises nothing new")
        #expect(b.receive(.up, now: .seconds(5), alert: state) == nil)
    }

    @Test("a short press with nothing open, a release without a press, a repeated down: nothing")
    func strayEvents() {
        var b = ButtonMachine()
        #expect(b.receive(.up, now: .zero, alert: nil) == nil)
        _ = b.receive(.down, now: .seconds(1), alert: nil)
        #expect(b.receive(.up, now: .milliseconds(1500), alert: nil) == nil)
        _ = b.receive(.down, now: .seconds(10), alert: nil)
        _ = b.receive(.down, now: .seconds(11), alert: nil)
        #expect(b.receive(.tick, now: .seconds(12), alert: nil) == .manualSOS, "the hold counts from the first down")
    }

    @Test("a long press during a countdown neither cancels nor raises a second alert")
    func longPressDuringCountdown() {
        var b = ButtonMachine()
        _ = b.receive(.down, now: .zero, alert: .pending)
        #expect(b.receive(.tick, now: .seconds(2), alert: .pending) == nil)
        #expect(b.receive(.up, now: .seconds(3), alert: .pending) == nil)
    }

    static func shortPress(_ b: inout ButtonMachine, at ms: Int64, alert: AlertState? = nil) -> ButtonMachine.Action? {
        _ = b.receive(.down, now: .milliseconds(ms), alert: alert)
        return b.receive(.up, now: .milliseconds(ms + 150), alert: alert)
    }

    @Test("three short presses within 3 s with nothing open: a discreet SOS, once")
    func threePressesAreDiscreet() {
        var b = ButtonMachine()
        #expect(Self.shortPress(&b, at: 1_000) == nil)
        #expect(Self.shortPress(&b, at: 1_500) == nil)
        #expect(Self.shortPress(&b, at: 2_000) == .discreetSOS)
        #expect(Self.shortPress(&b, at: 2_500) == nil, "the pattern starts again")
    }

    @Test("presses spread over more than the window, or broken by a long hold, raise nothing")
    func slowPressesAreNothing() {
        var b = ButtonMachine()
        #expect(Self.shortPress(&b, at: 0) == nil)
        #expect(Self.shortPress(&b, at: 2_000) == nil)
        #expect(Self.shortPress(&b, at: 4_000) == nil, "the first is over 3 s before the third")
        var held = ButtonMachine(discreetPresses: 2)
        #expect(Self.shortPress(&held, at: 0) == nil)
        _ = held.receive(.down, now: .milliseconds(500), alert: nil)
        #expect(held.receive(.up, now: .milliseconds(2_600), alert: nil) == .manualSOS)
        #expect(Self.shortPress(&held, at: 2_800, alert: .pending) == .cancel(.accidental), "a short press in a countdown still cancels")
        #expect(Self.shortPress(&held, at: 3_000) == nil, "the press before the hold does not count")
    }

    @Test("with the pattern off, short presses stay nothing; with discreet_long_press the hold is discreet")
    func settings() {
        var off = ButtonMachine(discreetPresses: 0)
        for t in stride(from: Int64(0), to: 2_000, by: 300) { #expect(Self.shortPress(&off, at: t) == nil) }
        var hold = ButtonMachine(discreetLongPress: true)
        _ = hold.receive(.down, now: .zero, alert: nil)
        #expect(hold.receive(.tick, now: .seconds(2), alert: nil) == .discreetSOS)
    }
}
