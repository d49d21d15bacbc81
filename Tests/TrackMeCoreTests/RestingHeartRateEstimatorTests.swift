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

    @Test func survivesARestartThroughCodable() throws {
        var estimator = RestingHeartRateEstimator(minimumSamples: 3)
        for bpm in [58, 61, 64] { estimator.add(HeartRateReading(bpm: bpm, contact: .detected)) }
        let copy = try JSONDecoder().decode(RestingHeartRateEstimator.self, from: try JSONEncoder().encode(estimator))
        #expect(copy == estimator)
        #expect(copy.estimate == 58)
    }
}
