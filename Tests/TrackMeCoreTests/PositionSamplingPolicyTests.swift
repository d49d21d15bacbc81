import Testing
import TrackMeCore

@Suite("Position sampling policy")
struct PositionSamplingPolicyTests {
    static func at(_ milliseconds: Int, boot: String = "boot-1") -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(milliseconds) * 1_000_000,
            bootID: boot,
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        )
    }

    /// About 1.1 m per 1e-5 degree of latitude.
    static func fix(latitude: Double = 45.0, speed: Double? = 0) -> PositionFix {
        PositionFix(mode: .threeDimensional, latitude: latitude, longitude: 7.0, speed: speed)
    }

    /// Feeds one fix per `stepMs` for `count` steps and returns the times (ms) of the stored ones.
    static func storedTimes(
        count: Int,
        stepMs: Int,
        alertOpen: Bool = false,
        fix: (Int) -> PositionFix
    ) -> [Int] {
        var policy = PositionSamplingPolicy()
        return (0..<count).compactMap { i in
            policy.shouldStore(fix(i), at: at(i * stepMs), alertOpen: alertOpen) ? i * stepMs : nil
        }
    }

    @Test("stationary: one fix every 30 s")
    func stationary() {
        let stored = Self.storedTimes(count: 91, stepMs: 1_000) { _ in Self.fix() }
        #expect(stored == [0, 30_000, 60_000, 90_000])
    }

    @Test("moving by speed: every fix at 1 Hz, but not faster than the configured rate")
    func movingBySpeed() {
        #expect(Self.storedTimes(count: 10, stepMs: 1_000) { _ in Self.fix(speed: 5) } == Array(stride(from: 0, to: 10_000, by: 1_000)))
        // A 10 Hz receiver is thinned to 1 Hz.
        let tenHz = Self.storedTimes(count: 30, stepMs: 100) { _ in Self.fix(speed: 5) }
        #expect(tenHz == [0, 1_000, 2_000])
    }

    @Test("moving without speed: displacement from the last stored fix counts")
    func movingByDisplacement() {
        // 3e-4 degrees of latitude (~33 m) per second, speed not reported.
        let stored = Self.storedTimes(count: 5, stepMs: 1_000) { i in
            Self.fix(latitude: 45.0 + Double(i) * 3e-4, speed: nil)
        }
        #expect(stored == [0, 1_000, 2_000, 3_000, 4_000])
        // GPS jitter of ~1 m at rest is not movement.
        let jitter = Self.storedTimes(count: 31, stepMs: 1_000) { i in
            Self.fix(latitude: 45.0 + (i.isMultiple(of: 2) ? 1e-5 : 0), speed: 0.1)
        }
        #expect(jitter == [0, 30_000])
    }

    @Test("alert open: every fix at 1 Hz even when stationary")
    func alertOpen() {
        let stored = Self.storedTimes(count: 5, stepMs: 1_000, alertOpen: true) { _ in Self.fix() }
        #expect(stored == [0, 1_000, 2_000, 3_000, 4_000])
        let tenHz = Self.storedTimes(count: 25, stepMs: 100, alertOpen: true) { _ in Self.fix() }
        #expect(tenHz == [0, 1_000, 2_000])
    }

    @Test("receiver jitter: fixes 990 ms apart are each kept at 1 Hz")
    func jitter() {
        let stored = Self.storedTimes(count: 4, stepMs: 990) { _ in Self.fix(speed: 3) }
        #expect(stored == [0, 990, 1_980, 2_970])
    }

    @Test("fixes without a position are never stored")
    func noPosition() {
        var policy = PositionSamplingPolicy()
        let noFix = policy.shouldStore(PositionFix(mode: .none), at: Self.at(0), alertOpen: true)
        let noLongitude = policy.shouldStore(PositionFix(mode: .twoDimensional, latitude: 1), at: Self.at(0), alertOpen: true)
        let positioned = policy.shouldStore(Self.fix(), at: Self.at(0), alertOpen: false)
        #expect(!noFix)
        #expect(!noLongitude)
        #expect(positioned)
    }

    @Test("a new boot stores the next fix (monotonic times of two boots are unrelated)")
    func newBoot() {
        var policy = PositionSamplingPolicy()
        let first = policy.shouldStore(Self.fix(), at: Self.at(50_000), alertOpen: false)
        let secondLater = policy.shouldStore(Self.fix(), at: Self.at(51_000), alertOpen: false)
        let afterReboot = policy.shouldStore(Self.fix(), at: Self.at(1_000, boot: "boot-2"), alertOpen: false)
        #expect(first)
        #expect(!secondLater)
        #expect(afterReboot)
    }
}
