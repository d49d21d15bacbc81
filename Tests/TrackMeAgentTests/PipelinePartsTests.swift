import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

@Suite("pipeline parts")
struct PipelinePartsTests {
    @Test("SOS overrides: global countdown spares the hard rule; thresholds become the profile's limits")
    func overrides() {
        let overrides = SOSRuleOverrides(
            countdownSeconds: 3,
            rules: [
                .heartRateLow: RuleOverride(thresholdBPM: 35, persistenceSeconds: 12),
                .heartRateHigh: RuleOverride(enabled: false, thresholdBPM: 170),
                .strapSilent: RuleOverride(countdownSeconds: 45),
            ]
        )
        let (settings, profile) = overrides.applied(to: SOSSettings(), profile: PersonProfile(name: "Ada", age: 67))
        #expect(settings.manual.countdown == .seconds(3))
        #expect(settings.contactLost.countdown == .seconds(3))
        #expect(settings.noPulse.countdown == .zero, "no_pulse raises at once unless its own countdown says otherwise")
        #expect(settings.strapSilent.countdown == .seconds(45), "a rule's own countdown wins over the global one")
        #expect(settings.heartRateLow.persistence == .seconds(12))
        #expect(settings.heartRateHigh.enabled == false)
        #expect(profile.minimumHeartRate == 35)
        #expect(profile.maximumHeartRate == 170)
        #expect(HeartRateLimits(profile: profile).minimum == 35)
    }

    @Test("no overrides: the engine's defaults and the profile unchanged")
    func noOverrides() {
        let profile = PersonProfile(name: "Ada", age: 67, restingHeartRate: 55)
        let (settings, applied) = SOSRuleOverrides().applied(to: SOSSettings(), profile: profile)
        #expect(settings == SOSSettings())
        #expect(applied == profile)
    }

    @Test("timestamps: this boot's id, a monotonic clock that only moves forward, the wall clock now")
    func timestamps() throws {
        let source = AgentTimestamps()
        let bootID = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let first = source.now()
        let second = source.now()
        #expect(first.bootID == bootID)
        #expect(second.monotonicNanoseconds >= first.monotonicNanoseconds)
        let wall = try #require(first.wallClockMilliseconds)
        #expect(abs(wall - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000)
    }
}
