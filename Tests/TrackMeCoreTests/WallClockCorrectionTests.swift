import Foundation
import Testing
import TrackMeCore

/// Issue 19: wall times stamped before the clock was trusted, corrected from a trusted time of the same boot.
@Suite struct WallClockCorrectionTests {
    /// A Pi that booted at 1970 (wall = monotonic), then NTP set the clock: true time is
    /// `trueStart + monotonic`.
    static let trueStart: Int64 = 1_795_000_000_000  // 2026-11-18
    static func stamp(_ seconds: Int64, boot: String = "b1", trusted: Bool) -> ReadingTimestamp {
        let mono = UInt64(seconds) * 1_000_000_000
        return ReadingTimestamp(
            monotonicNanoseconds: mono,
            bootID: boot,
            wallClockMilliseconds: trusted ? trueStart + seconds * 1000 : seconds * 1000,
            wallClockTrusted: trusted
        )
    }

    @Test func untrustedReadingsOfTheBootGetTheTrueTimeOnceATrustedOneIsSeen() {
        var correction = WallClockCorrection()
        let early = Self.stamp(30, trusted: false)
        #expect(correction.corrected(early) == early, "nothing known yet: unchanged")
        let learned = correction.learn(Self.stamp(95, trusted: true))
        #expect(learned)
        let fixed = correction.corrected(early)
        #expect(fixed.wallClockMilliseconds == Self.trueStart + 30_000)
        #expect(fixed.wallClockTrusted && fixed.wallClockCorrected)
        #expect(fixed.monotonicNanoseconds == early.monotonicNanoseconds && fixed.bootID == "b1")
        let trusted = Self.stamp(100, trusted: true)
        #expect(correction.corrected(trusted) == trusted, "a trusted time is left alone")
        let otherBoot = Self.stamp(30, boot: "b0", trusted: false)
        #expect(correction.corrected(otherBoot) == otherBoot, "another boot's monotonic clock says nothing")
    }

    @Test func jitterDoesNotRelearnButAStepDoes() {
        var correction = WallClockCorrection()
        let first = correction.learn(Self.stamp(10, trusted: true))
        #expect(first)
        var jittered = Self.stamp(11, trusted: true)
        jittered.wallClockMilliseconds? += 40
        let afterJitter = correction.learn(jittered)
        #expect(!afterJitter)
        var stepped = Self.stamp(12, trusted: true)
        stepped.wallClockMilliseconds? += 3_600_000
        let afterStep = correction.learn(stepped)
        #expect(afterStep)
        #expect(correction.offset(bootID: "b1") == Self.trueStart + 3_600_000)
        let untrusted = correction.learn(Self.stamp(13, trusted: false))
        #expect(!untrusted, "an untrusted time teaches nothing")
    }

    @Test func onlyTheRecentBootsAreKept() {
        var correction = WallClockCorrection()
        for boot in 0..<(WallClockCorrection.maximumAnchors + 4) { correction.learn(Self.stamp(1, boot: "b\(boot)", trusted: true)) }
        #expect(correction.anchors.count == WallClockCorrection.maximumAnchors)
        #expect(correction.offset(bootID: "b0") == nil)
        #expect(correction.offset(bootID: "b\(WallClockCorrection.maximumAnchors + 3)") != nil)
    }

    static func batch(_ seconds: [Int64], trusted: Bool = false) -> [WireReading] {
        seconds.map {
            WireReading(sequence: $0 + 1, timestamp: stamp($0, trusted: trusted), payload: .heartRate(HeartRateReading(bpm: 60, contact: .detected)))
        }
    }

    @Test func aResentBatchCarriesWhatItCarriedTheFirstTime() {
        var correction = WallClockCorrection()
        let batch5 = Self.batch([1, 2, 3])
        let first5 = correction.corrected(batch5, batchSequence: 5)
        #expect(first5 == batch5, "nothing known: sent as recorded")
        correction.learn(Self.stamp(50, trusted: true))
        let again5 = correction.corrected(batch5, batchSequence: 5)
        #expect(again5 == batch5, "its resend is the same, though an anchor is now known")
        let batch6 = Self.batch([4, 5])
        let sent6 = correction.corrected(batch6, batchSequence: 6)
        #expect(sent6.map(\.timestamp.wallClockMilliseconds) == [Self.trueStart + 4000, Self.trueStart + 5000])
        #expect(sent6.map(\.timestamp.wallClockCorrected) == [true, true])
        let again6 = correction.corrected(batch6, batchSequence: 6)
        #expect(again6 == sent6, "and batch 6's resend is corrected the same")
        let third5 = correction.corrected(batch5, batchSequence: 5)
        #expect(third5 == batch5)
        #expect(correction.anchors.first?.fromBatch == 6)
    }

    @Test func afterARestartAnchorsStayOffBatchesThatMayHaveGoneOut() throws {
        var correction = WallClockCorrection()
        correction.learn(Self.stamp(50, trusted: true))
        // Saved before any batch went out; the restarted agent finds batches up to 9 in flight.
        var restored = try WireCodec.decode(WallClockCorrection.self, from: try WireCodec.encode(correction))
        restored.noteSent(upTo: 9)
        let batch9 = Self.batch([1])
        let sent9 = restored.corrected(batch9, batchSequence: 9)
        #expect(sent9 == batch9)
        let sent10 = restored.corrected(Self.batch([2]), batchSequence: 10)
        #expect(sent10.first?.timestamp.wallClockCorrected == true)
    }

    @Test func wireFieldIsSentOnlyWhenCorrectedAndRoundTrips() throws {
        var correction = WallClockCorrection()
        correction.learn(Self.stamp(60, trusted: true))
        let plain = Self.stamp(5, trusted: false)
        #expect(!String(decoding: try WireCodec.encode(plain), as: UTF8.self).contains("wall_corrected"))
        let fixed = correction.corrected(plain)
        let json = try WireCodec.encode(fixed)
        #expect(String(decoding: json, as: UTF8.self).contains("\"wall_corrected\":true"))
        #expect(try WireCodec.decode(ReadingTimestamp.self, from: json) == fixed)
        #expect(try WireCodec.decode(ReadingTimestamp.self, from: try WireCodec.encode(plain)) == plain)
    }
}
