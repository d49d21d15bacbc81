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

    /// One entry per UTC day that has readings, oldest first.
    static func days(_ samples: [HeartRateSample], limits: HeartRateLimits) -> [DailyStatistics] {
        var days = Accumulator(limits: limits)
        for sample in samples.sorted(by: { $0.atMilliseconds < $1.atMilliseconds }) { days.add(sample) }
        return days.days
    }

    /// The day figures built one sample at a time, so that a year of 1 Hz readings costs a few
    /// counters per day and not the readings themselves (the statistics and the export read them
    /// page by page). Each device's samples arrive in time order; devices may interleave. A
    /// reading out of range counts until the same strap's next reading on the same day: two straps
    /// worn at once are two witnesses, not one faster one.
    struct Accumulator: Sendable {
        /// One day's counters. Those of one device and a whole day are what the statistics keep
        /// between requests (`HeartRateDays`); they merge as if their readings had been added.
        struct Day: Codable, Hashable, Sendable {
            var readings = 0
            var sum = 0
            var minimum = Int.max
            var maximum = Int.min
            var estimator = RestingHeartRateEstimator(minimumSamples: DailyStatistics.restingMinimumSamples)
            var outOfRangeMilliseconds: Int64 = 0
        }

        let limits: HeartRateLimits
        private var byDay: [Int64: Day] = [:]
        private var previous: [String: HeartRateSample] = [:]

        init(limits: HeartRateLimits) {
            self.limits = limits
        }

        /// A day's counters kept from an earlier pass (one device's whole day): merged, never
        /// re-read. The device's out-of-range time stays within its day, so nothing carries over.
        mutating func merge(dayNumber: Int64, _ figures: Day) {
            byDay[dayNumber, default: Day()].merge(figures)
        }

        /// The counters of one UTC day (by its number), if it had a reading.
        func figures(ofDay dayNumber: Int64) -> Day? {
            byDay[dayNumber]
        }

        mutating func add(_ sample: HeartRateSample) {
            let day = Int64(GroupFigures.day(sample.atMilliseconds))
            if let last = previous[sample.deviceID], Int64(GroupFigures.day(last.atMilliseconds)) == day,
                last.bpm < limits.minimum || last.bpm > limits.maximum
            {
                byDay[day, default: Day()].outOfRangeMilliseconds += min(maximumGapMilliseconds, max(0, sample.atMilliseconds - last.atMilliseconds))
            }
            previous[sample.deviceID] = sample
            byDay[day, default: Day()].add(sample)
        }

        var days: [DailyStatistics] {
            byDay.keys.sorted().compactMap { day in
                guard let figures = byDay[day], figures.readings > 0 else { return nil }
                return DailyStatistics(
                    dayMilliseconds: day * GroupFigures.dayMilliseconds,
                    readings: figures.readings,
                    minimum: figures.minimum,
                    mean: (Double(figures.sum) / Double(figures.readings) * 10).rounded() / 10,
                    maximum: figures.maximum,
                    restingEstimate: figures.estimator.estimate,
                    secondsOutOfRange: Int(figures.outOfRangeMilliseconds / 1000),
                    limitMinimum: limits.minimum,
                    limitMaximum: limits.maximum
                )
            }
        }
    }
}

extension DailyStatistics.Accumulator.Day {
    fileprivate mutating func merge(_ other: Self) {
        guard other.readings > 0 else { return }
        readings += other.readings
        sum += other.sum
        minimum = min(minimum, other.minimum)
        maximum = max(maximum, other.maximum)
        estimator.merge(other.estimator)
        outOfRangeMilliseconds += other.outOfRangeMilliseconds
    }

    fileprivate mutating func add(_ sample: HeartRateSample) {
        readings += 1
        sum += sample.bpm
        minimum = min(minimum, sample.bpm)
        maximum = max(maximum, sample.bpm)
        estimator.add(HeartRateReading(bpm: sample.bpm, contact: sample.contact ? .detected : .notDetected))
    }
}
