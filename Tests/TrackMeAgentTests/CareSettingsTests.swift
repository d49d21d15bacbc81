import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// Issue 20 (care): the server's care settings over the configuration file, a local override
/// winning and reported as a conflict, and the SOS rules deciding differently once applied.
@Suite("Care settings on the device")
struct CareSettingsTests {
    static let person = PersonProfile(name: "Ada", age: 70)

    static func timestamp(_ second: Int) -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(second) * 1_000_000_000,
            bootID: "3f1c2d9e-8a51-4c1e-9d7b-2a4e5f6a7b8c",
            wallClockMilliseconds: 1_795_000_000_000 + Int64(second) * 1000,
            wallClockTrusted: true
        )
    }

    /// 50 bpm with contact, once a second for 20 s: does the engine start a heart-rate-low alert?
    static func raisesLowAlert(_ resolution: CareSettingsResolution, reconfigured: Bool = false) -> Bool {
        var engine = SOSEngine(
            deviceID: "pi-0001",
            profile: reconfigured ? person : resolution.profile,
            settings: reconfigured ? SOSSettings() : resolution.settings,
            ids: SequentialAlertIDs(),
            now: timestamp(0)
        )
        if reconfigured { engine.reconfigure(profile: resolution.profile, settings: resolution.settings) }
        for second in 1...20 {
            _ = engine.receive(.heartRate(HeartRateReading(bpm: 50, contact: .detected, rrIntervals: [1229])), now: timestamp(second))
        }
        return engine.openAlert?.kind == .heartRateLow
    }

    @Test("without server settings the configuration file's values rule: 50 bpm is above the derived 40 bpm minimum")
    func configurationIsTheFallback() {
        let resolution = CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: nil)
        #expect(resolution.version == nil && resolution.conflicts.isEmpty)
        #expect(resolution.profile == Self.person)
        #expect(!Self.raisesLowAlert(resolution))
    }

    @Test("the server's minimum of 55 bpm makes 50 bpm an alert, also when applied to a running engine; switched off, it is not")
    func serverSettingsChangeTheDecision() {
        let server = CareSettings(version: 3, minimumHeartRate: 55, contacts: [EmergencyContact(name: "Ines")])
        let resolution = CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: server)
        #expect(resolution.version == 3 && resolution.profile.minimumHeartRate == 55 && resolution.profile.contacts?.first?.name == "Ines")
        #expect(Self.raisesLowAlert(resolution))
        #expect(Self.raisesLowAlert(resolution, reconfigured: true))
        var off = server
        off.rules = ["heart_rate_low": false]
        #expect(!Self.raisesLowAlert(CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: off), reconfigured: true))
    }

    @Test("a local override wins and is reported as a conflict; one that agrees is not")
    func localOverrideConflict() {
        let overrides = SOSRuleOverrides(rules: [.heartRateLow: RuleOverride(thresholdBPM: 45), .contactLost: RuleOverride(enabled: true)])
        let server = CareSettings(version: 2, minimumHeartRate: 55, rules: ["contact_lost": false, "strap_silent": false])
        let resolution = CareSettingsResolution(configured: Self.person, overrides: overrides, server: server)
        #expect(resolution.profile.minimumHeartRate == 45)
        #expect(resolution.settings.contactLost.enabled)
        #expect(!resolution.settings.strapSilent.enabled)
        #expect(resolution.conflicts == ["contact_lost.enabled", "heart_rate_low.threshold_bpm"])
        // The value in force travels with the conflict, for the server's pages to draw.
        #expect(resolution.overrides == ["heart_rate_low.threshold_bpm": 45])
        #expect(resolution.status.overrides == ["heart_rate_low.threshold_bpm": 45])
        #expect(!Self.raisesLowAlert(resolution))
        let agreeing = CareSettingsResolution(
            configured: Self.person,
            overrides: SOSRuleOverrides(rules: [.heartRateLow: RuleOverride(thresholdBPM: 55)]),
            server: server
        )
        #expect(agreeing.conflicts.isEmpty)
        #expect(agreeing.overrides.isEmpty)
        var status = AgentStatus(deviceID: "pi-0001", uptimeSeconds: 1)
        status.care = resolution.status
        let text = StatusReport.render(status)
        #expect(text.contains("server v2"))
        #expect(text.contains("LOCAL OVERRIDE differs from the server: contact_lost.enabled, heart_rate_low.threshold_bpm"))
    }

    @Test("status says whether AutomatedSOS is active and who provides it, from the server's care settings")
    func automatedSOSInStatus() {
        var status = AgentStatus(deviceID: "pi-0001", uptimeSeconds: 1)
        status.care = CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: nil).status
        #expect(StatusReport.render(status).contains("provided by \(AutomatedSOSService.operatorProvider)"), "on by default")
        let off = CareSettings(version: 3, automatedSOS: AutomatedSOSService(active: false, provider: "Care & Co", changedBy: "person"))
        status.care = CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: off).status
        let text = StatusReport.render(status)
        #expect(text.contains("OFF") && text.contains("rule alerts reach no dispatcher"), "\(text)")
        #expect(status.care?.automatedSOS.active == false)
        let on = CareSettings(version: 4, automatedSOS: AutomatedSOSService(active: true, provider: "Care & Co", changedBy: "organisation"))
        status.care = CareSettingsResolution(configured: Self.person, overrides: SOSRuleOverrides(), server: on).status
        #expect(StatusReport.render(status).contains("provided by Care & Co"))
    }

    @Test("settings a device must not take: thresholds out of range, minimum not below maximum, unknown rules, manual SOS off")
    func refusedSettings() {
        #expect(CareSettings(minimumHeartRate: 10).problem()?.field == "min_hr")
        #expect(CareSettings(minimumHeartRate: 90, maximumHeartRate: 80).problem()?.field == "min_hr")
        #expect(CareSettings(rules: ["fall": true]).problem()?.field == "rules")
        #expect(CareSettings(rules: ["manual": false]).problem()?.field == "rules")
        #expect(CareSettings(minimumHeartRate: 45, maximumHeartRate: 150, rules: ["no_pulse": true]).problem() == nil)
    }

    @Test("orders in a reply: read from an acknowledgement and from the 410 of an erased device; absent or not JSON: none")
    func ordersInReplies() throws {
        let ack = BatchAcknowledgement(idempotencyKey: "pi:1", stored: 0, duplicates: 0, orders: SyncOrders(careSettings: CareSettings(version: 1)))
        #expect(SyncOrders.inReply(Array(try WireCodec.encode(ack)))?.careSettings?.version == 1)
        let erased = Array(#"{"error":{"code":"device_erased","message":"x"},"orders":{"wipe":{"ordered_ms":5}}}"#.utf8)
        #expect(SyncOrders.inReply(erased)?.wipe == WipeOrder(orderedMilliseconds: 5))
        #expect(SyncOrders.inReply(Array(try WireCodec.encode(BatchAcknowledgement(idempotencyKey: "pi:1", stored: 0, duplicates: 0)))) == nil)
        #expect(SyncOrders.inReply(Array("<html>".utf8)) == nil)
    }
}
