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

/// The care setting `discreet_sos`: a wearer whose carer set it is shown nothing of any alert.
@Suite("feedback: discreet SOS as a care setting")
struct FeedbackDiscreetSettingTests {
    static let t0 = FeedbackTests.t0

    /// An alert the rules made under the setting (`SOSSettings.discreet`).
    static func discreet(_ record: AlertRecord) -> AlertRecord {
        var record = record
        record.discreet = true
        return record
    }

    @Test("set: a rule's countdown and alert, and a press, show nothing from start to end; the battery warning stays as it was")
    func nothingShown() {
        var m = FeedbackMachine(resolvedShownFor: .seconds(30))
        #expect(m.receive(.batteryLow(true), now: .zero) == .batteryLow)
        var rule = Self.discreet(FeedbackCareTests.rule(.pending))
        #expect(m.receive(.engine(.startCountdown(rule, deadline: Self.t0)), now: .seconds(2)) == nil)
        rule.state = .raised
        #expect(m.receive(.engine(.raise(rule)), now: .seconds(7)) == nil)
        #expect(m.receive(.sent(AlertUpdate(alert: rule, updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(8)) == nil)
        #expect(m.receive(.acknowledgement(alertID: rule.id, acknowledged: false), now: .seconds(60)) == nil, "no reminder")
        #expect(m.receive(.acknowledgement(alertID: rule.id, acknowledged: true), now: .seconds(70)) == nil)
        rule.state = .resolved
        #expect(m.receive(.engine(.update(rule)), now: .seconds(80)) == nil)
        let press = Self.discreet(FeedbackTests.record(.raised, id: "m-1"))
        #expect(m.receive(.engine(.raise(press)), now: .seconds(90)) == nil)
        #expect(m.receive(.sent(AlertUpdate(alert: press, updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(91)) == nil)
        var cancelled = press
        cancelled.state = .cancelled
        cancelled.cancelReason = .iAmSafe
        #expect(m.receive(.engine(.cancelled(cancelled)), now: .seconds(92)) == nil)
        #expect(m.shown == .batteryLow, "what was shown before, all along")
    }

    @Test("an alert restored at start under the setting is not shown either; cleared, the next alert shows")
    func restoredAndCleared() {
        var m = FeedbackMachine()
        #expect(m.receive(.engine(.update(Self.discreet(FeedbackCareTests.rule(.delivered)))), now: .seconds(1)) == nil)
        #expect(m.receive(.engine(.update(Self.discreet(FeedbackCareTests.rule(.resolved)))), now: .seconds(2)) == nil)
        #expect(m.receive(.engine(.raise(FeedbackTests.record(.raised, id: "m-2"))), now: .seconds(4)) == .raised)
    }

    @Test("the care setting reaches the rules: every alert they raise is discreet, a rule's and a plain press")
    func settingReachesTheRules() {
        var server = CareSettings(version: 4)
        server.discreetSOS = true
        let resolution = CareSettingsResolution(
            configured: PersonProfile(name: "Ada", age: 80),
            overrides: SOSRuleOverrides(),
            server: server
        )
        #expect(resolution.settings.discreet && resolution.discreetSOS)
        var engine = SOSEngine(
            deviceID: "pi-0042",
            profile: resolution.profile,
            settings: resolution.settings,
            ids: SequentialAlertIDs(prefix: "d"),
            now: Self.t0
        )
        let actions = engine.receive(.manualSOS, now: Self.t0)
        let countdown = actions.compactMap { action -> AlertRecord? in
            if case .startCountdown(let record, _) = action { record } else { nil }
        }
        #expect(countdown.count == 1 && countdown.allSatisfy(\.isDiscreet), "a plain press under the setting")
        #expect(countdown.first?.reason == nil, "not a discreet press: the reason stays the rule's")
        let off = CareSettingsResolution(
            configured: PersonProfile(name: "Ada", age: 80),
            overrides: SOSRuleOverrides(),
            server: CareSettings(version: 5)
        )
        #expect(!off.settings.discreet)
    }

    @Test("status says discreet SOS is on, from the server's care settings")
    func inStatus() {
        var status = AgentStatus(deviceID: "pi-0001", uptimeSeconds: 1)
        let person = PersonProfile(name: "Ada", age: 80)
        status.care = CareSettingsResolution(configured: person, overrides: SOSRuleOverrides(), server: CareSettings(version: 2)).status
        #expect(!StatusReport.render(status).contains("discreet sos"))
        var discreet = CareSettings(version: 3)
        discreet.discreetSOS = true
        status.care =
            CareSettingsResolution(configured: person, overrides: SOSRuleOverrides(), server: discreet).status
        #expect(StatusReport.render(status).contains("discreet sos"), "\(StatusReport.render(status))")
        #expect(status.care?.discreetSOS == true)
    }
}
