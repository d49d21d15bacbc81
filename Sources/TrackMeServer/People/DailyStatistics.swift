import TrackMeCore

/// One heart-rate reading of a person as their pages show it.
struct HeartRateSample: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var bpm: Int
    var deviceID: String
    var contact: Bool

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case bpm
        case deviceID = "device_id"
        case contact
    }
}

/// One position fix of a person.
struct PositionSample: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var latitude: Double
    var longitude: Double
    var deviceID: String

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case latitude = "lat"
        case longitude = "lon"
        case deviceID = "device_id"
    }
}

/// A day's heart-rate figures for the wearer. Pure: from the day's samples and the person's limits.
struct DailyStatistics: Codable, Hashable, Sendable {
    /// The UTC day's start.
    var dayMilliseconds: Int64
    var readings: Int
    var minimum: Int?
    var mean: Double?
    var maximum: Int?
    /// The lower decile of the day's readings with skin contact (as the device's own baseline
    /// learns it), once there are at least `restingMinimumSamples`.
    var restingEstimate: Int?
    /// Time spent below the minimum or above the maximum: each out-of-range reading counts until
    /// the next reading, at most `maximumGapMilliseconds`.
    var secondsOutOfRange: Int
    var limitMinimum: Int
    var limitMaximum: Int

    static let restingMinimumSamples = 30
    static let maximumGapMilliseconds: Int64 = 60_000

    enum CodingKeys: String, CodingKey {
        case dayMilliseconds = "day_ms"
        case readings
        case minimum = "min"
        case mean
        case maximum = "max"
        case restingEstimate = "resting_estimate"
        case secondsOutOfRange = "seconds_out_of_range"
        case limitMinimum = "limit_min"
        case limitMaximum = "limit_max"
    }

    /// One entry per UTC day in `[from, to)` that has readings, oldest first. `samples` in time order.
    static func days(_ samples: [HeartRateSample], limits: HeartRateLimits) -> [DailyStatistics] {
        var byDay: [Int64: [HeartRateSample]] = [:]
        for sample in samples { byDay[Int64(GroupFigures.day(sample.atMilliseconds)), default: []].append(sample) }
        return byDay.keys.sorted().compactMap { day in
            guard let list = byDay[day] else { return nil }
            return compute(list.sorted { $0.atMilliseconds < $1.atMilliseconds }, dayMilliseconds: day * GroupFigures.dayMilliseconds, limits: limits)
        }
    }

    static func compute(_ samples: [HeartRateSample], dayMilliseconds: Int64, limits: HeartRateLimits) -> DailyStatistics {
        var estimator = RestingHeartRateEstimator(minimumSamples: restingMinimumSamples)
        var outOfRange: Int64 = 0
        var sum = 0
        for (index, sample) in samples.enumerated() {
            sum += sample.bpm
            estimator.add(HeartRateReading(bpm: sample.bpm, contact: sample.contact ? .detected : .notDetected))
            if sample.bpm < limits.minimum || sample.bpm > limits.maximum, index + 1 < samples.count {
                outOfRange += min(maximumGapMilliseconds, max(0, samples[index + 1].atMilliseconds - sample.atMilliseconds))
            }
        }
        let mean = samples.isEmpty ? nil : (Double(sum) / Double(samples.count) * 10).rounded() / 10
        return DailyStatistics(
            dayMilliseconds: dayMilliseconds, readings: samples.count, minimum: samples.map(\.bpm).min(), mean: mean,
            maximum: samples.map(\.bpm).max(), restingEstimate: estimator.estimate, secondsOutOfRange: Int(outOfRange / 1000),
            limitMinimum: limits.minimum, limitMaximum: limits.maximum)
    }
}
