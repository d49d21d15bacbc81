import Foundation
import Testing
import TrackMeCore

@Suite struct DispatchPolicyTests {
    static let stamp = SOSHarness.ts(0)

    static func record(_ id: String = "a-1", state: AlertState = .raised) -> AlertRecord {
        AlertRecord(id: id, deviceID: "pi-0042", kind: .noPulse, state: state, firstCritical: stamp, raised: stamp)
    }

    struct Driver {
        var policy = DispatchPolicy()
        var log: [(Duration, DispatchPolicy.Action)] = []

        init(settings: DispatchSettings = DispatchSettings()) { policy = DispatchPolicy(settings: settings) }

        @discardableResult
        mutating func at(_ seconds: Double, _ event: DispatchPolicy.Event) -> [DispatchPolicy.Action] {
            let now = Duration.milliseconds(Int64(seconds * 1000))
            let actions = policy.receive(event, now: now, timestamp: SOSHarness.ts(Int64(seconds * 1000)))
            log += actions.map { (now, $0) }
            return actions
        }

        var sends: [AlertUpdate] { log.compactMap { if case .send(let u) = $0.1 { u } else { nil } } }
        var fallbacks: [(Duration, FallbackReason, Int?)] {
            log.compactMap { if case .runFallback(_, let reason, let index) = $0.1 { ($0.0, reason, index) } else { nil } }
        }
    }

    @Test func raisedAlertIsSentAtOnceAndDeliveredOnAcceptance() {
        var d = Driver()
        let actions = d.at(0, .engine(.raise(Self.record())))
        #expect(actions.contains(.showAcknowledgement(alertID: "a-1", acknowledged: false)))
        #expect(d.sends.count == 1)
        #expect(d.sends.first?.type == .raised)
        #expect(d.sends.first?.updateSequence == 0)
        #expect(d.at(0.2, .sendSucceeded(alertID: "a-1", updateSequence: 0)) == [.delivered(alertID: "a-1")])
        #expect(d.fallbacks.isEmpty)
    }

    @Test func unreachableServerRunsTheFallbackOnceAndRetriesEverySecond() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        #expect(d.fallbacks.count == 1)
        #expect(d.fallbacks.first?.1 == .serverUnreachable)
        #expect(d.at(0.5, .tick).isEmpty, "not before a second has passed")
        d.at(1.1, .tick)
        #expect(d.sends.count == 2)
        d.at(1.2, .sendFailed(alertID: "a-1", updateSequence: 0))
        d.at(2.2, .tick)
        #expect(d.sends.count == 3)
        #expect(d.fallbacks.count == 1, "the fallback does not run on every failure")
        #expect(d.at(2.3, .sendSucceeded(alertID: "a-1", updateSequence: 0)).contains(.delivered(alertID: "a-1")))
        #expect(d.sends.allSatisfy { $0.updateSequence == 0 })
    }

    @Test func positionGoesOutAtMostEverySecondWhileOpen() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        for step in 1...20 {  // gpsd at 4 Hz
            let t = 0.1 + Double(step) * 0.25
            d.at(t, .engine(.positionUpdate(Self.record())))
            if let last = d.sends.last, last.type == .position {
                d.at(t + 0.01, .sendSucceeded(alertID: "a-1", updateSequence: last.updateSequence))
            }
        }
        let positions = d.sends.filter { $0.type == .position }
        #expect(positions.count == 5)
        #expect(positions.map(\.updateSequence) == [1, 2, 3, 4, 5])
    }

    @Test func anAlertOpenBeforeARestartKeepsGettingPositionsNumberedAboveTheServers() {
        var d = Driver()
        d.policy.adopt(Self.record(state: .delivered), nextUpdateSequence: 42, now: .seconds(5))
        #expect(d.at(5, .tick).isEmpty, "the raise is not sent again: it is in the journal if undelivered")
        d.at(6, .engine(.positionUpdate(Self.record(state: .delivered))))
        #expect(d.sends.map(\.type) == [.position])
        #expect(d.sends.map(\.updateSequence) == [42])
        d.at(6.1, .sendSucceeded(alertID: "a-1", updateSequence: 42))
        d.at(7, .engine(.positionUpdate(Self.record(state: .delivered))))
        #expect(d.sends.map(\.updateSequence) == [42, 43])
        // Escalation starts over from the restart.
        d.at(7.1, .sendSucceeded(alertID: "a-1", updateSequence: 43))
        for second in 8...130 { d.at(Double(second), .tick) }
        #expect(d.fallbacks.map(\.0) == [.seconds(125)])
    }

    @Test func onlyOpenRaisedAlertsAreAdopted() {
        var d = Driver()
        d.policy.adopt(Self.record("pending", state: .pending), nextUpdateSequence: 1, now: .zero)
        d.policy.adopt(Self.record("cancelled", state: .cancelled), nextUpdateSequence: 1, now: .zero)
        d.policy.adopt(Self.record("acked", state: .acknowledged), nextUpdateSequence: 3, now: .zero)
        for id in ["pending", "cancelled", "acked"] { d.at(1, .engine(.positionUpdate(Self.record(id)))) }
        #expect(d.sends.map(\.alert.id) == ["acked"])
        for second in 2...1000 { d.at(Double(second), .tick) }
        #expect(d.fallbacks.isEmpty, "an acknowledged alert does not escalate")
    }

    @Test func offlinePositionsCoalesceIntoOneWaitingUpdate() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        for second in 1...30 {
            d.at(Double(second), .engine(.positionUpdate(Self.record())))
            if d.log.last.map({ if case .send = $0.1 { true } else { false } }) == true {
                d.at(Double(second) + 0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
            }
        }
        #expect(d.policy.queuedUpdates.count == 2)
        #expect(d.policy.queuedUpdates.map(\.type) == [.raised, .position])
    }

    @Test func escalationRunsItsStepsUntilAcknowledged() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        for second in 1...400 {
            d.at(Double(second), .tick)
            if case .send(let update)? = d.log.last?.1 {
                d.at(Double(second) + 0.1, .sendSucceeded(alertID: "a-1", updateSequence: update.updateSequence))
            }
        }
        let resends = d.sends.filter { $0.type == .raised && $0.updateSequence > 0 }
        #expect(resends.count == 1)
        // The server has the alert: its contact escalation tells the contacts, the device none.
        #expect(d.fallbacks.map(\.0) == [.seconds(120)])
        #expect(d.fallbacks.map(\.1) == [.escalation])
        let reminders = d.log.filter { $0.1 == .showAcknowledgement(alertID: "a-1", acknowledged: false) }.map(\.0)
        #expect(reminders == [.zero, .seconds(60), .seconds(120), .seconds(180), .seconds(300)])
        d.at(401, .engine(.update(Self.record(state: .acknowledged))))
        let before = d.log.count
        for second in 402...1000 { d.at(Double(second), .tick) }
        #expect(d.log.count == before, "nothing escalates once acknowledged")
    }

    @Test func contactsAreTheDevicesToTellOnlyWhileTheServerLacksTheAlert() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        for second in 1...200 {
            d.at(Double(second), .tick)
            if case .send(let update)? = d.log.last?.1 {
                d.at(Double(second) + 0.1, .sendFailed(alertID: "a-1", updateSequence: update.updateSequence))
            }
        }
        #expect(d.fallbacks.filter { $0.1 == .notifyContact }.map(\.2) == [0], "offline at 180 s: the device tells the first contact")
        // The network is back: every send from now on succeeds.
        for second in 201...700 {
            d.at(Double(second), .tick)
            if case .send(let update)? = d.log.last?.1 {
                d.at(Double(second) + 0.1, .sendSucceeded(alertID: "a-1", updateSequence: update.updateSequence))
            }
        }
        #expect(d.log.contains { $0.1 == .delivered(alertID: "a-1") })
        #expect(d.fallbacks.filter { $0.1 == .notifyContact }.map(\.2) == [0], "delivered: the next contacts are the server's")
        let reminders = d.log.filter { $0.1 == .showAcknowledgement(alertID: "a-1", acknowledged: false) }.map(\.0)
        #expect(reminders.contains(.seconds(300)), "the wearer is still shown the alert is unacknowledged")
    }

    @Test func acknowledgementFromTheEngineStopsEscalation() {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        let actions = d.at(0.2, .engine(.update(Self.record(state: .acknowledged))))
        #expect(actions.contains(.showAcknowledgement(alertID: "a-1", acknowledged: true)))
        for second in 1...400 { d.at(Double(second), .tick) }
        #expect(d.fallbacks.isEmpty)
    }

    @Test(arguments: [AlertUpdate.UpdateType.cancelled, .resolved])
    func closingSendsTheFinalUpdateAndStops(type: AlertUpdate.UpdateType) {
        var d = Driver()
        d.at(0, .engine(.raise(Self.record())))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        var closed = Self.record(state: type == .cancelled ? .cancelled : .resolved)
        if type == .cancelled { closed.cancelReason = .iAmSafe }
        d.at(5, .engine(type == .cancelled ? .cancelled(closed) : .update(closed)))
        let last = d.sends.last
        #expect(last?.type == type)
        #expect(last?.updateSequence == 1)
        #expect(last?.alert.cancelReason == (type == .cancelled ? .iAmSafe : nil))
        d.at(5.1, .sendSucceeded(alertID: "a-1", updateSequence: 1))
        d.at(6, .engine(.positionUpdate(Self.record())))
        for second in 7...400 { d.at(Double(second), .tick) }
        #expect(d.sends.count == 2)
        #expect(d.fallbacks.isEmpty)
    }

    @Test func cancelledCountdownIsNotDispatched() {
        var d = Driver()
        var pending = Self.record(state: .cancelled)
        pending.raised = nil
        pending.cancelReason = .accidental
        #expect(d.at(0, .engine(.cancelled(pending))).isEmpty)
        #expect(d.at(0, .engine(.startCountdown(Self.record(state: .pending), deadline: Self.stamp))).isEmpty)
    }

    /// The policy scans escalation only once a step can be due, keeping the earliest step time
    /// as a lower bound. An alert acknowledged before its step must not hide the step of another
    /// alert raised later, and steps still fire at their own times after the bound moved on.
    @Test func escalationOfOneAlertIsNotHiddenByAnotherAcknowledgedFirst() {
        var settings = DispatchSettings()
        settings.escalation = [EscalationStep(after: .seconds(10), action: .runFallback)]
        settings.escalationRepeat = .zero
        var d = Driver(settings: settings)
        d.at(0, .engine(.raise(Self.record("a-1"))))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        d.at(0.2, .engine(.update(Self.record("a-1", state: .acknowledged))))
        d.at(5, .engine(.raise(Self.record("a-2"))))
        d.at(5.1, .sendSucceeded(alertID: "a-2", updateSequence: 0))
        d.at(10.5, .tick)
        #expect(d.fallbacks.isEmpty, "a-1 was acknowledged; a-2's step is at 15 s")
        d.at(14.9, .tick)
        #expect(d.fallbacks.isEmpty)
        d.at(15.0, .tick)
        #expect(d.fallbacks.map(\.1) == [.escalation])
        d.at(40, .tick)
        #expect(d.fallbacks.count == 1, "no repeat configured")
    }

    /// Thousands of acknowledged, still-open alerts (a year of a device's alerts with nobody
    /// closing them) leave a tick with nothing to do: no sends, no fallbacks, no positions.
    @Test func manyAcknowledgedAlertsLeaveATickWithNothingToDo() {
        var d = Driver()
        for index in 0..<2_000 {
            let id = "a-\(index)"
            d.at(Double(index), .engine(.raise(Self.record(id))))
            d.at(Double(index) + 0.1, .sendSucceeded(alertID: id, updateSequence: 0))
            d.at(Double(index) + 0.2, .engine(.update(Self.record(id, state: .acknowledged))))
        }
        #expect(d.at(5_000, .tick).isEmpty)
        #expect(d.fallbacks.isEmpty)
    }

    /// A year of alerts that went out and closed (cancelled or resolved, each delivered) leaves
    /// the policy holding nothing: what an event costs cannot grow with them.
    @Test func aYearOfClosedAlertsLeavesNothingHeld() {
        var d = Driver()
        for index in 0..<5_000 {
            let id = "a-\(index)"
            let t = Double(index) * 10
            d.at(t, .engine(.raise(Self.record(id))))
            d.at(t + 0.1, .sendSucceeded(alertID: id, updateSequence: 0))
            let closing: SOSAction = index % 2 == 0 ? .update(Self.record(id, state: .resolved)) : .cancelled(Self.record(id, state: .cancelled))
            d.at(t + 1, .engine(closing))
            d.at(t + 1.1, .sendSucceeded(alertID: id, updateSequence: 1))
        }
        #expect(d.policy.heldAlerts == 0)
        #expect(d.policy.queuedUpdates.isEmpty)
    }
}

/// `fallback.after_seconds`: the local fallback waits until the raise has gone undelivered this long.
@Suite struct DispatchFallbackDelayTests {
    static func settings(after seconds: Int64) -> DispatchSettings {
        var settings = DispatchSettings()
        settings.fallbackAfter = .seconds(seconds)
        return settings
    }

    @Test func theFallbackWaitsForItsDelayAfterTheRaise() {
        var d = DispatchPolicyTests.Driver(settings: Self.settings(after: 30))
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(3, .sendFailed(alertID: "a-1", updateSequence: 0))
        #expect(d.fallbacks.isEmpty, "a failed send alone does not run it before 30 s")
        for second in 4..<30 {
            d.at(Double(second), .tick)
            if let last = d.sends.last, d.log.last.map({ if case .send = $0.1 { true } else { false } }) == true {
                d.at(Double(second) + 0.5, .sendFailed(alertID: "a-1", updateSequence: last.updateSequence))
            }
        }
        #expect(d.fallbacks.isEmpty)
        d.at(30, .tick)
        #expect(d.fallbacks.count == 1)
        #expect(d.fallbacks.first?.0 == .seconds(30))
        #expect(d.fallbacks.first?.1 == .serverUnreachable)
        d.at(31, .tick)
        #expect(d.fallbacks.count == 1, "once")
    }

    @Test func aDeliveredAlertNeverRunsTheDelayedFallback() {
        var d = DispatchPolicyTests.Driver(settings: Self.settings(after: 30))
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(3, .sendFailed(alertID: "a-1", updateSequence: 0))
        d.at(4, .tick)
        d.at(4.5, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        d.at(40, .tick)
        #expect(d.fallbacks.isEmpty)
    }

    @Test func deliveredThroughTheEngineCountsToo() {
        // A raise delivered by the sync lane (after a restart) reaches the policy as the engine's update.
        var d = DispatchPolicyTests.Driver(settings: Self.settings(after: 10))
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(1, .sendFailed(alertID: "a-1", updateSequence: 0))
        d.at(2, .engine(.update(DispatchPolicyTests.record(state: .delivered))))
        d.at(20, .tick)
        #expect(d.fallbacks.isEmpty)
    }

    @Test func zeroDelayRunsItAtTheFirstFailedSendAsBefore() {
        var d = DispatchPolicyTests.Driver(settings: Self.settings(after: 0))
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        #expect(d.fallbacks.isEmpty, "not before a send failed")
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        #expect(d.fallbacks.count == 1)
    }
}

@Suite struct DispatchPolicyKindChangeTests {
    @Test func kindChangeGoesOutAtOnceWithTheNextSequence() {
        var d = DispatchPolicyTests.Driver()
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.2, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        var graver = DispatchPolicyTests.record(state: .delivered)
        graver.kind = .noPulse
        d.at(5, .engine(.kindChanged(graver)))
        let update = d.sends.last
        #expect(update?.type == .kindChanged)
        #expect(update?.updateSequence == 1)
        #expect(update?.alert.kind == .noPulse)
        #expect(d.sends.count == 2)
    }

    @Test func aClosedAlertSendsNoKindChange() {
        var d = DispatchPolicyTests.Driver()
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.2, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        d.at(1, .engine(.cancelled(DispatchPolicyTests.record(state: .cancelled))))
        let before = d.sends.count
        d.at(2, .engine(.kindChanged(DispatchPolicyTests.record(state: .raised))))
        #expect(d.sends.count == before)
    }
}

@Suite struct DispatchPolicyContactsToldTests {
    typealias Driver = DispatchPolicyTests.Driver

    /// Offline from the raise: every send fails until `until`, then every send succeeds.
    static func offline(_ d: inout Driver, from: Int, to: Int, delivering: Bool) {
        for second in from...to {
            d.at(Double(second), .tick)
            if case .send(let update)? = d.log.last?.1 {
                let answer: DispatchPolicy.Event =
                    delivering
                    ? .sendSucceeded(alertID: "a-1", updateSequence: update.updateSequence)
                    : .sendFailed(alertID: "a-1", updateSequence: update.updateSequence)
                d.at(Double(second) + 0.1, answer)
            }
        }
    }

    @Test func theContactTheFallbackToldIsInEveryUpdateSentAfter() throws {
        var d = Driver()
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        Self.offline(&d, from: 1, to: 180, delivering: false)
        #expect(d.fallbacks.filter { $0.1 == .notifyContact }.map(\.2) == [0])
        #expect(d.sends.allSatisfy { $0.contactsTold.isEmpty }, "nobody told yet")
        let sentBefore = d.sends.count
        d.at(180.5, .fallbackSucceeded(alertID: "a-1", reason: .notifyContact, contactIndex: 0))
        d.at(181.5, .fallbackSucceeded(alertID: "a-1", reason: .escalation, contactIndex: nil))
        Self.offline(&d, from: 182, to: 240, delivering: true)
        let after = d.sends.dropFirst(sentBefore)
        #expect(after.first?.updateSequence == 0, "the raise itself, at last delivered, says whom the device told")
        #expect(!after.isEmpty)
        for update in after {
            #expect(update.contactsTold == [ContactTold(contactIndex: 0, at: SOSHarness.ts(180_500), path: .localFallback)])
        }
        let first = try #require(after.first)
        let json = String(decoding: try WireCodec.encode(first), as: UTF8.self)
        #expect(json.contains(#""contacts_told":[{"at":"#))
        #expect(json.contains(#""contact_index":0,"path":"local_fallback""#))
    }

    @Test func aContactToldAfterTheServerHadTheAlertStillReachesIt() {
        var d = Driver()
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.1, .sendSucceeded(alertID: "a-1", updateSequence: 0))
        let sentBefore = d.sends.count
        // A fallback started while offline that finished once the raise had gone.
        d.at(5, .fallbackSucceeded(alertID: "a-1", reason: .notifyContact, contactIndex: 1))
        let sent = d.sends.dropFirst(sentBefore)
        #expect(sent.map(\.type) == [.position])
        #expect(sent.first?.updateSequence == 1)
        #expect(sent.first?.contactsTold.map(\.contactIndex) == [1])
        d.at(5.1, .sendSucceeded(alertID: "a-1", updateSequence: 1))
        d.at(6, .fallbackSucceeded(alertID: "a-1", reason: .notifyContact, contactIndex: 1))
        #expect(d.sends.count == sentBefore + 1, "told once: no second update for the same contact")
    }

    @Test func anUpdateWithoutContactsToldHasNoSuchKey() throws {
        let update = AlertUpdate(alert: DispatchPolicyTests.record(), updateSequence: 0, type: .raised, sent: DispatchPolicyTests.stamp)
        let json = String(decoding: try WireCodec.encode(update), as: UTF8.self)
        #expect(!json.contains("contacts_told"))
        #expect(try WireCodec.decode(AlertUpdate.self, from: Data(json.utf8)) == update)
    }
}

/// AutomatedSOS off (the person is not enrolled): the rules' alerts still go to the server, but
/// nothing on the device calls for help for them; the SOS button escalates as ever.
@Suite struct DispatchPolicyAutomatedSOSTests {
    typealias Driver = DispatchPolicyTests.Driver

    static func offline(_ d: inout Driver, from: Int, to: Int, id: String) {
        for second in from...to {
            // Only a send this tick made is answered.
            for case .send(let update) in d.at(Double(second), .tick) {
                d.at(Double(second) + 0.1, .sendFailed(alertID: id, updateSequence: update.updateSequence))
            }
        }
    }

    static func off() -> DispatchSettings {
        var settings = DispatchSettings()
        settings.automatedSOS = false
        return settings
    }

    @Test func aRulesAlertCallsNobodyFromTheDeviceButStillGoesToTheServer() {
        var d = Driver(settings: Self.off())
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        Self.offline(&d, from: 1, to: 400, id: "a-1")
        #expect(d.fallbacks.isEmpty, "no server_unreachable fallback, no escalation fallback, no contact told")
        #expect(d.sends.allSatisfy { $0.updateSequence == 0 && $0.type == .raised }, "the raise retried; no resend of it")
        #expect(d.sends.count > 150, "the raise retried all along, every other second on this tick")
        let reminders = d.log.filter { $0.1 == .showAcknowledgement(alertID: "a-1", acknowledged: false) }
        #expect(reminders.map(\.0) == [.zero], "shown once at the raise; no reminders of an acknowledgement nobody will give")
    }

    @Test func theSOSButtonIsNotAutomatedSOS() {
        var d = Driver(settings: Self.off())
        let press = AlertRecord(id: "m-1", deviceID: "pi-0042", kind: .manual, state: .raised, firstCritical: DispatchPolicyTests.stamp)
        d.at(0, .engine(.raise(press)))
        d.at(0.1, .sendFailed(alertID: "m-1", updateSequence: 0))
        Self.offline(&d, from: 1, to: 200, id: "m-1")
        #expect(d.fallbacks.map(\.1) == [.serverUnreachable, .escalation, .notifyContact])
    }

    @Test func switchedOnDuringAnAlertItTakesUpTheNextStepNotEveryMissedOne() {
        var d = Driver(settings: Self.off())
        d.at(0, .engine(.raise(DispatchPolicyTests.record())))
        d.at(0.1, .sendFailed(alertID: "a-1", updateSequence: 0))
        Self.offline(&d, from: 1, to: 150, id: "a-1")
        #expect(d.fallbacks.isEmpty)
        d.at(150.5, .automatedSOS(active: true))
        #expect(d.fallbacks.isEmpty, "the steps at 60 and 120 s passed while off: not run late")
        Self.offline(&d, from: 151, to: 185, id: "a-1")
        #expect(d.fallbacks.map(\.1) == [.notifyContact], "the 180 s step, on time")
        d.at(186, .automatedSOS(active: false))
        Self.offline(&d, from: 187, to: 600, id: "a-1")
        #expect(d.fallbacks.map(\.1) == [.notifyContact], "off again: nothing more")
    }
}
