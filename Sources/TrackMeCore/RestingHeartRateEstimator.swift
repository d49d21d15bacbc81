/// Learns a person's resting heart rate from their own readings, for `HeartRateLimits` (the
/// optional personal baseline of the SOS rules).
///
/// The estimate is the lower decile of all readings taken with skin contact, once there are
/// enough of them: over days that include sleep and rest it sits near the resting rate, and
/// short bursts of exercise or artefacts do not move it. Cheap per reading (one counter in a
/// fixed histogram); `Codable` so the agent can keep it across restarts.
public struct RestingHeartRateEstimator: Hashable, Sendable, Codable {
    public static let range = 30...220

    /// Readings counted per bpm, index 0 = `range.lowerBound`.
    private var counts: [UInt32]
    public private(set) var sampleCount: Int
    /// How many readings before there is an estimate (default: 6 hours at one per second).
    public var minimumSamples: Int
    /// Which quantile is the estimate (default: the lower decile).
    public var quantile: Double

    public init(minimumSamples: Int = 6 * 3600, quantile: Double = 0.1) {
        counts = [UInt32](repeating: 0, count: Self.range.count)
        sampleCount = 0
        self.minimumSamples = minimumSamples
        self.quantile = quantile
    }

    /// Counts a reading if the strap had contact and the rate is plausible.
    public mutating func add(_ reading: HeartRateReading) {
        guard reading.contact != .notDetected, Self.range.contains(reading.bpm) else { return }
        let index = reading.bpm - Self.range.lowerBound
        // A decoded estimator may carry fewer counts than the range (a damaged saved value).
        if index < counts.count, counts[index] < UInt32.max {
            counts[index] += 1
            sampleCount += 1
        }
    }

    /// Adds another estimator's counts, as if its readings had been added here: the day figures
    /// keep one per device and day and combine them without the readings.
    public mutating func merge(_ other: RestingHeartRateEstimator) {
        for index in counts.indices where index < other.counts.count {
            let sum = UInt64(counts[index]) + UInt64(other.counts[index])
            let kept = UInt32(min(sum, UInt64(UInt32.max)))
            sampleCount += Int(kept - counts[index])
            counts[index] = kept
        }
    }

    /// The learned resting rate, or nil until `minimumSamples` readings were counted.
    public var estimate: Int? {
        guard sampleCount >= max(1, minimumSamples) else { return nil }
        let target = Int((Double(sampleCount) * min(max(quantile, 0), 1)).rounded(.up))
        var seen = 0
        for (index, count) in counts.enumerated() {
            seen += Int(count)
            if seen >= max(1, target) { return Self.range.lowerBound + index }
        }
        return nil
    }
}
