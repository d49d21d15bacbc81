import Testing
import TrackMeCore

/// Every transition of the alert lifecycle, every cancel reason, the countdown and the position.
@Suite struct AlertLifecycleTests {
    static let fix = PositionFix(
        time: "2026-11-21T09:00:00.000Z",
        mode: .threeDimensional,
        latitude: 45.4642,
        longitude: 9.19,
        horizontalError: 6.5
    )

    /// A harness with a raised no-pulse alert (`a-1`, raised at 13 s).
    static func raisedAlert() -> SOSHarness {
        var h = SOSHarness()
        h.readings(from: 0, through: 9_000, bpm: 70)
        h.readings(from: 10_000, through: 13_000, bpm: 0)
        return h
    }

    @Test func raisedDeliveredAcknowledgedResolved() throws {
        var h = Self.raisedAlert()
        #expect(h.engine.openAlert?.state == .raised)
        let delivered = try #require(h.send(.delivered(alertID: "a-1"), at: 13_400).first?.updated)
        #expect(delivered.state == .delivered)
        let acknowledged = try #require(h.send(.acknowledged(alertID: "a-1"), at: 20_000).first?.updated)
        #expect(acknowledged.state == .acknowledged)
        h.readings(from: 21_000, through: 29_000, bpm: 70)
        let resolved = try #require(h.send(.resolved(alertID: "a-1"), at: 29_500).first?.updated)
        #expect(resolved.state == .resolved)
        #expect(resolved.raised == SOSHarness.ts(13_000))
        #expect(h.engine.openAlert == nil)
    }

    @Test func acknowledgementMayOvertakeTheReceipt() {
        var h = Self.raisedAlert()
        #expect(h.send(.acknowledged(alertID: "a-1"), at: 14_000).first?.updated?.state == .acknowledged)
        #expect(h.send(.delivered(alertID: "a-1"), at: 14_100).isEmpty, "never moves backwards")
        #expect(h.engine.openAlert?.state == .acknowledged)
    }

    @Test func messagesForOtherAlertsOrRepeatedOnesChangeNothing() {
        var h = Self.raisedAlert()
        #expect(h.send(.delivered(alertID: "other"), at: 14_000).isEmpty)
        #expect(h.send(.acknowledged(alertID: "other"), at: 14_000).isEmpty)
        #expect(h.send(.resolved(alertID: "other"), at: 14_000).isEmpty)
        #expect(h.send(.delivered(alertID: "a-1"), at: 14_100).count == 1)
        #expect(h.send(.delivered(alertID: "a-1"), at: 14_200).isEmpty)
        #expect(h.engine.openAlert?.state == .delivered)
    }

    @Test func nothingToDeliverOrCancelWhenNormal() {
        var h = SOSHarness()
        #expect(h.send(.delivered(alertID: "a-1"), at: 1_000).isEmpty)
        #expect(h.send(.cancel(.falseAlarm), at: 1_000).isEmpty)
        #expect(h.send(.resolved(alertID: "a-1"), at: 1_000).isEmpty)
    }

    @Test func pendingCannotBeDeliveredBeforeItIsRaised() {
        var h = SOSHarness()
        h.send(.manualSOS, at: 1_000)
        #expect(h.send(.delivered(alertID: "a-1"), at: 1_500).isEmpty)
        #expect(h.engine.openAlert?.state == .pending)
    }

    enum OpenState: String, CaseIterable { case pending, raised, delivered, acknowledged }

    @Test(arguments: CancelReason.allCases, OpenState.allCases)
    func everyReasonCancelsFromEveryOpenState(reason: CancelReason, from state: OpenState) throws {
        var h = SOSHarness()
        h.readings(from: 0, through: 2_000, bpm: 70)
        h.send(.manualSOS, at: 2_000)
        switch state {
        case .pending: break
        case .raised: h.ticks(from: 7_000, through: 7_000)
        case .delivered:
            h.ticks(from: 7_000, through: 7_000)
            h.send(.delivered(alertID: "a-1"), at: 7_500)
        case .acknowledged:
            h.ticks(from: 7_000, through: 7_000)
            h.send(.acknowledged(alertID: "a-1"), at: 7_500)
        }
        #expect(h.engine.openAlert?.state.rawValue == state.rawValue)
        let actions = h.send(.cancel(reason), at: 8_000)
        let cancelled = try #require(actions.first?.cancelledRecord)
        #expect(actions.count == 1)
        #expect(cancelled.state == .cancelled)
        #expect(cancelled.cancelReason == reason)
        #expect(cancelled.id == "a-1")
        // A pending alert was never dispatched; the shell only tells the lane about raised ones.
        #expect((cancelled.raised == nil) == (state == .pending))
        #expect(h.engine.openAlert == nil)
        // A cancelled countdown never raises afterwards.
        h.ticks(from: 8_250, through: 20_000)
        #expect(h.all(\.raised).count == (state == .pending ? 0 : 1))
    }

    @Test func countdownRaisesExactlyAtItsDeadlineAndNotBefore() throws {
        var h = SOSHarness()
        let start = try #require(h.send(.manualSOS, at: 1_000).first)
        guard case .startCountdown(let record, let deadline) = start else {
            Issue.record("expected a countdown, got \(start)")
            return
        }
        #expect(record.state == .pending)
        #expect(deadline == SOSHarness.ts(6_000))
        #expect(h.send(.tick, at: 5_999).isEmpty)
        #expect(h.engine.openAlert?.state == .pending)
        let raised = try #require(h.send(.tick, at: 6_000).first?.raised)
        #expect(raised.raised == SOSHarness.ts(6_000))
        #expect(raised.firstCritical == SOSHarness.ts(1_000))
    }

    @Test func zeroCountdownRaisesWithoutPending() {
        var settings = SOSSettings()
        settings.manual.countdown = .zero
        var h = SOSHarness(settings: settings)
        let actions = h.send(.manualSOS, at: 1_000)
        #expect(actions.count == 1)
        #expect(actions.first?.raised?.state == .raised)
    }

    @Test func alertWithoutAnyFixHasUnknownPosition() {
        var h = SOSHarness()
        h.send(.position(PositionFix(mode: .none)), at: 500)  // gpsd talks but has no fix
        h.send(.manualSOS, at: 1_000)
        h.ticks(from: 6_000, through: 6_000)
        #expect(h.first(\.raised)?.record.position == nil)
    }

    @Test func alertCarriesTheLastKnownPositionWithItsAge() throws {
        var h = SOSHarness()
        h.send(.position(Self.fix), at: 2_000)
        h.send(.position(PositionFix(mode: .none)), at: 3_000)  // lost the fix: keep the last one
        h.send(.manualSOS, at: 4_000)
        h.ticks(from: 9_000, through: 9_000)
        let position = try #require(h.first(\.raised)?.record.position)
        #expect(position.fix == Self.fix)
        #expect(position.ageMilliseconds == 7_000)
    }

    @Test func positionUpdatesFollowTheOpenAlertOnly() throws {
        var h = Self.raisedAlert()
        var moved = Self.fix
        moved.latitude = 45.4650
        let update = try #require(h.send(.position(moved), at: 14_000).first?.positionUpdated)
        #expect(update.id == "a-1")
        #expect(update.position?.fix == moved)
        #expect(update.position?.ageMilliseconds == 0)
        h.send(.resolved(alertID: "a-1"), at: 15_000)
        #expect(h.send(.position(moved), at: 16_000).isEmpty)
    }

    @Test func alertIdentifiersComeFromTheInjectedGenerator() {
        struct Fixed: AlertIDGenerator {
            mutating func next() -> String { "6b0f7a43-1f2e-4c55-9a61-0d3e8f2b7c10" }
        }
        var engine = SOSEngine(
            deviceID: "pi-0042",
            profile: PersonProfile(name: "p", age: 60),
            ids: Fixed(),
            now: SOSHarness.ts(0)
        )
        let actions = engine.receive(.manualSOS, now: SOSHarness.ts(1))
        #expect(actions.first?.countdown?.id == "6b0f7a43-1f2e-4c55-9a61-0d3e8f2b7c10")
        #expect(actions.first?.countdown?.deviceID == "pi-0042")
    }

    @Test func newAlertAfterTheFirstIsResolved() {
        var h = Self.raisedAlert()
        h.send(.resolved(alertID: "a-1"), at: 20_000)
        h.send(.manualSOS, at: 21_000)
        #expect(h.engine.openAlert?.id == "a-2")
        #expect(h.engine.openAlert?.kind == .manual)
    }

    @Test func alertRecordOfTheLifecycleRoundTripsThroughTheWire() throws {
        var h = Self.raisedAlert()
        h.send(.position(Self.fix), at: 13_500)
        let record = try #require(h.engine.openAlert)
        let update = AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: SOSHarness.ts(13_500))
        let decoded = try WireCodec.decode(AlertUpdate.self, from: try WireCodec.encode(update))
        #expect(decoded == update)
    }

    @Test func openAlertFromTheJournalIsRestoredAfterARestart() throws {
        var before = Self.raisedAlert()
        before.send(.delivered(alertID: "a-1"), at: 14_000)
        let journaled = try #require(before.engine.openAlert)
        var engine = SOSEngine(
            deviceID: "pi-0042",
            profile: PersonProfile(name: "Ada", age: 60),
            ids: SequentialAlertIDs(prefix: "b"),
            openAlert: journaled,
            now: SOSHarness.ts(20_000)
        )
        #expect(engine.openAlert == journaled)
        // The flat line goes on after the restart: no second alert.
        var actions: [SOSAction] = []
        for second in 21...40 {
            actions += engine.receive(.heartRate(HeartRateReading(bpm: 0, contact: .detected)), now: SOSHarness.ts(Int64(second) * 1000))
        }
        #expect(actions.isEmpty)
        #expect(engine.receive(.acknowledged(alertID: "a-1"), now: SOSHarness.ts(41_000)).first?.updated?.state == .acknowledged)

        var pending = journaled
        pending.state = .pending
        #expect(AlertStateMachine(restoring: pending).isNormal)
    }
}

/// A graver rule while an alert is open updates that alert instead of being dropped.
@Suite struct AlertKindEscalationTests {
    /// An acknowledged `heart_rate_high` alert (`a-1`): 180 bpm from 0 s, raised after its
    /// 30 s persistence and 10 s countdown.
    static func acknowledgedHighAlert() throws -> SOSHarness {
        var h = SOSHarness()
        h.readings(from: 0, through: 45_000, bpm: 180)
        let raised = try #require(h.first { $0.raised })
        #expect(raised.record.kind == .heartRateHigh)
        #expect(h.send(.acknowledged(alertID: "a-1"), at: 46_000).first?.updated?.state == .acknowledged)
        return h
    }

    @Test func noPulseDuringAnOpenHighHeartRateAlertRaisesItsKind() throws {
        var h = try Self.acknowledgedHighAlert()
        let actions = h.readings(from: 47_000, through: 52_000, bpm: 0)
        let changed = actions.compactMap { if case .kindChanged(let r) = $0 { r } else { nil } }
        #expect(changed.count == 1, "one kind change, not one per reading")
        #expect(changed.first?.id == "a-1")
        #expect(changed.first?.kind == .noPulse)
        #expect(changed.first?.state == .acknowledged, "the state stays as it was")
        #expect(h.engine.openAlert?.kind == .noPulse)
        #expect(!actions.contains { $0.raised != nil }, "no second alert")
    }

    @Test func aRuleNoGraverChangesNothing() throws {
        var h = try Self.acknowledgedHighAlert()
        // The strap goes quiet: strap_silent (severity 1) fires during the open alert.
        let actions = h.ticks(from: 46_250, through: 120_000)
        #expect(!actions.contains { if case .kindChanged = $0 { true } else { false } })
        #expect(h.engine.openAlert?.kind == .heartRateHigh)
    }

    @Test func severityOrdersEveryKind() {
        #expect(AlertKind.noPulse.severity > AlertKind.manual.severity)
        #expect(AlertKind.manual.severity > AlertKind.heartRateLow.severity)
        #expect(AlertKind.heartRateLow.severity == AlertKind.heartRateHigh.severity)
        #expect(AlertKind.heartRateHigh.severity > AlertKind.contactLost.severity)
        #expect(AlertKind.contactLost.severity > AlertKind.strapSilent.severity)
    }
}

/// A wearer under threat asks for help without the device showing it.
@Suite struct DiscreetSOSTests {
    @Test func raisedAtOnceWithoutACountdownToShowOrCancel() throws {
        var h = SOSHarness()
        h.readings(from: 0, through: 2_000, bpm: 70)
        let actions = h.send(.discreetSOS, at: 2_000)
        #expect(!actions.contains { if case .startCountdown = $0 { true } else { false } })
        let raised = try #require(
            actions.compactMap { action -> AlertRecord? in if case .raise(let record) = action { record } else { nil } }.first
        )
        #expect(raised.kind == .manual)
        #expect(raised.state == .raised)
        #expect(raised.isDiscreet)
        #expect(raised.reason == AlertRecord.discreetReason)
    }

    @Test func aManualSOSIsNotDiscreet() {
        var h = SOSHarness()
        h.send(.manualSOS, at: 1_000)
        #expect(h.engine.openAlert?.isDiscreet == false)
    }

    @Test func duringACountdownItConfirmsTheAlertAsIs() {
        var h = SOSHarness()
        h.send(.manualSOS, at: 1_000)
        #expect(h.engine.openAlert?.state == .pending)
        h.send(.discreetSOS, at: 1_500)
        #expect(h.engine.openAlert?.state == .raised)
    }
}
