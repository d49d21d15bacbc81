import Testing
import TrackMeCore

@testable import TrackMeAgent

/// What the wearer is shown as the server's care settings change it: AutomatedSOS off.
@Suite("feedback under the care settings")
struct FeedbackCareTests {
    static let t0 = FeedbackTests.t0

    static func rule(_ state: AlertState, id: String = "r-1") -> AlertRecord {
        AlertRecord(id: id, deviceID: "pi-0042", kind: .heartRateLow, state: state, firstCritical: t0, raised: t0)
    }

    @Test("AutomatedSOS off: a rule's alert shows not_dispatched, the server's answer does not make it 'sent'; the SOS button shows as ever")
    func automatedSOSOff() {
        var m = FeedbackMachine(resolvedShownFor: .seconds(30))
        #expect(m.receive(.automatedSOS(active: false), now: .zero) == nil, "nothing to show by itself")
        #expect(m.receive(.engine(.raise(Self.rule(.raised))), now: .seconds(1)) == .notDispatched)
        #expect(m.receive(.sent(AlertUpdate(alert: Self.rule(.raised), updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(2)) == nil)
        #expect(m.receive(.engine(.update(Self.rule(.delivered))), now: .seconds(2)) == nil, "no dispatcher has it: not 'sent'")
        #expect(m.receive(.engine(.update(Self.rule(.resolved))), now: .seconds(10)) == .resolved)
        #expect(m.receive(.tick, now: .seconds(40)) == .idle)
        let press = FeedbackTests.record(.raised, id: "m-1")
        #expect(m.receive(.engine(.raise(press)), now: .seconds(50)) == .raised)
        #expect(m.receive(.sent(AlertUpdate(alert: press, updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(51)) == .sent)
        #expect(LEDPattern.defaults[.notDispatched] != nil)
        #expect(FeedbackState(rawValue: "not_dispatched") == .notDispatched)
    }

    @Test("AutomatedSOS on again: the next rule's alert shows raised, then sent")
    func automatedSOSOnAgain() {
        var m = FeedbackMachine()
        _ = m.receive(.automatedSOS(active: false), now: .zero)
        _ = m.receive(.automatedSOS(active: true), now: .seconds(1))
        #expect(m.receive(.engine(.raise(Self.rule(.raised))), now: .seconds(2)) == .raised)
        #expect(m.receive(.sent(AlertUpdate(alert: Self.rule(.raised), updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(3)) == .sent)
    }
}
