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
}
