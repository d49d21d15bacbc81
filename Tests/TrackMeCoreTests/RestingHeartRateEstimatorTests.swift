import Foundation
import Testing
import TrackMeCore

@Suite struct RestingHeartRateEstimatorTests {
    @Test func noEstimateUntilEnoughReadings() {
        var estimator = RestingHeartRateEstimator(minimumSamples: 100)
        for _ in 0..<99 { estimator.add(HeartRateReading(bpm: 60, contact: .detected)) }
        #expect(estimator.estimate == nil)
        estimator.add(HeartRateReading(bpm: 60, contact: .detected))
        #expect(estimator.estimate == 60)
    }

    @Test func estimateIsTheLowerDecileOfContactReadings() {
        var estimator = RestingHeartRateEstimator(minimumSamples: 10)
        // 100 readings 50...149 with contact; the zeros and the no-contact ones do not count.
        for bpm in 50..<150 { estimator.add(HeartRateReading(bpm: bpm, contact: .detected)) }
        for _ in 0..<500 {
            estimator.add(HeartRateReading(bpm: 0, contact: .detected))
            estimator.add(HeartRateReading(bpm: 40, contact: .notDetected))
        }
        #expect(estimator.sampleCount == 100)
        #expect(estimator.estimate == 59)
    }

    @Test func learnedRateFromARealTraceFeedsTheLimits() throws {
        var estimator = RestingHeartRateEstimator(minimumSamples: 600)
        let trace = try SOSTraceAcceptanceTests.load("prcp12726_tilt_contact_loss.csv")
        for row in trace.rows { estimator.add(row.reading) }
        let resting = try #require(estimator.estimate)
        #expect((55...65).contains(resting), "the 12726 subject rests at about 60 bpm (SOURCES.md: 60-79 with tilt)")
        let limits = HeartRateLimits(profile: PersonProfile(name: "12726", age: 28), learnedRestingRate: resting)
        #expect(limits.minimumSource == .restingRate)
        #expect(limits.minimum == min(40, max(30, resting - 20)))
    }

    @Test func mergedEstimatorsEqualOneFedEveryReading() {
        var morning = RestingHeartRateEstimator(minimumSamples: 10)
        var evening = RestingHeartRateEstimator(minimumSamples: 10)
        var whole = RestingHeartRateEstimator(minimumSamples: 10)
        for bpm in 50..<100 {
            morning.add(HeartRateReading(bpm: bpm, contact: .detected))
            whole.add(HeartRateReading(bpm: bpm, contact: .detected))
        }
        for bpm in 40..<60 {
            evening.add(HeartRateReading(bpm: bpm, contact: .detected))
            whole.add(HeartRateReading(bpm: bpm, contact: .detected))
        }
        morning.merge(evening)
        #expect(morning == whole)
        #expect(morning.sampleCount == 70)
        #expect(morning.estimate == 46)
    }

    @Test func aDamagedSavedEstimatorDoesNotTrap() throws {
        let damaged = #"{"counts":[1,2],"sampleCount":3,"minimumSamples":1,"quantile":0.1}"#
        var estimator = try JSONDecoder().decode(RestingHeartRateEstimator.self, from: Data(damaged.utf8))
        estimator.add(HeartRateReading(bpm: 120, contact: .detected))
        var fresh = RestingHeartRateEstimator(minimumSamples: 1)
        fresh.merge(estimator)
        #expect(fresh.sampleCount == 3)
    }

    @Test func survivesARestartThroughCodable() throws {
        var estimator = RestingHeartRateEstimator(minimumSamples: 3)
        for bpm in [58, 61, 64] { estimator.add(HeartRateReading(bpm: bpm, contact: .detected)) }
        let copy = try JSONDecoder().decode(RestingHeartRateEstimator.self, from: try JSONEncoder().encode(estimator))
        #expect(copy == estimator)
        #expect(copy.estimate == 58)
    }
}

/// Issue 19's scenario: an athlete sleeps at 36-38 bpm. The age default (40 bpm) raises a
/// false heart_rate_low alarm in the night; the resting rate learned from their own days
/// (about 50 bpm: minimum 30) does not. A real emergency below 30 still raises.
@Suite struct LearnedBaselineNightTests {
    static func raises(_ harness: SOSHarness) -> Bool {
        harness.first { if case .raise(let record) = $0, record.kind == .heartRateLow { record } else { nil } } != nil
    }

    /// Ten minutes of sleep at 36-38 bpm, one notification a second.
    static func night(_ harness: inout SOSHarness) {
        for minute in 0..<10 {
            let start = Int64(minute) * 60_000
            harness.readings(from: start, through: start + 59_000, bpm: 36 + minute % 3)
        }
    }

    @Test func theAgeDefaultRaisesAFalseAlarmAtNight() {
        var harness = SOSHarness(profile: PersonProfile(name: "Runner", age: 34))
        Self.night(&harness)
        #expect(harness.engine.limits.minimumSource == .extremeBradycardia)
        #expect(Self.raises(harness), "40 bpm default: a sleeping athlete looks bradycardic")
    }

    @Test func theLearnedBaselinePreventsIt() {
        var estimator = RestingHeartRateEstimator(minimumSamples: 600)
        // Days of the person's own readings: mostly 48-70 at rest and about.
        for i in 0..<3000 { estimator.add(HeartRateReading(bpm: 48 + i % 23, contact: .detected)) }
        let learned = estimator.estimate
        #expect(learned.map { (48...52).contains($0) } == true)
        var harness = SOSHarness(profile: PersonProfile(name: "Runner", age: 34))
        harness.engine.learnRestingRate(learned)
        #expect(harness.engine.limits.minimum == 30)
        Self.night(&harness)
        #expect(!Self.raises(harness))
        // A real emergency still raises: 25 bpm for a minute.
        harness.readings(from: 700_000, through: 760_000, bpm: 25)
        #expect(Self.raises(harness))
    }
}
