import Foundation
import TrackMeCore

/// A person's statistics come from day summaries, not from every reading each time: the counters
/// of one device's whole UTC day (`DailyStatistics.Accumulator.Day`) are kept once the day is
/// over, and a later request over that day merges them instead of reading its 86,400 readings
/// again. Pure: which days may be kept, and whether a kept day still stands.
///
/// A kept day stands until a reading of it arrives late. Intake marks such a day
/// (`markHeartRateDaysLate`, before the batch is written) with the time it received the reading;
/// a kept day whose mark is later than its reading pass (less `settle`) is read again. Readings
/// that arrive on time need no mark: a day is kept only once `grace` (the last batches of the day
/// arriving after midnight) and `settle` (a batch's transaction still in flight) have passed.
/// The intake's cost is one write per late batch of a device back from offline; a device that
/// is online never writes one.
enum HeartRateDays {
    /// A reading of a day received up to this long after the day ended is on time.
    static let grace: Int64 = 10 * 60_000
    /// Longer than a batch's transaction can take between its receipt time and its commit.
    static let settle: Int64 = 10 * 60_000

    /// The UTC day number of a time.
    static func day(_ milliseconds: Int64) -> Int64 { CivilDate.days(containing: milliseconds) }

    /// The days of heart-rate readings in a batch received at `received` that arrive late (after
    /// their day's end and `grace`): empty for a device that is online.
    static func lateDays(_ readings: [ReadingRow], receivedMilliseconds received: Int64) -> Set<Int64> {
        var days: Set<Int64> = []
        for reading in readings where reading.kind == .heartRate {
            let day = day(reading.placedMilliseconds)
            if (day + 1) * GroupFigures.dayMilliseconds + grace < received { days.insert(day) }
        }
        return days
    }

    /// Whether a day is over long enough for its readings to be kept as a summary at `now`.
    static func mayKeep(day: Int64, now: Int64) -> Bool {
        (day + 1) * GroupFigures.dayMilliseconds + grace + settle <= now
    }

    /// Whether a kept day can answer for its readings: summarised with today's limits (the time
    /// out of range depends on them) and no reading of it arrived since its pass.
    static func stands(_ row: HeartRateDayRow, limits: HeartRateLimits) -> Bool {
        guard let computed = row.computedMilliseconds, row.summary != nil, row.limitMinimum == limits.minimum,
            row.limitMaximum == limits.maximum
        else { return false }
        return row.lateMilliseconds < computed - settle
    }

    /// A window of readings (one device, one grant's span) cut into the whole days that may be
    /// kept and the pieces that are read each time: the partial days at its ends and the days
    /// too recent to keep.
    struct Plan: Equatable, Sendable {
        var keptDays: ClosedRange<Int64>?
        var readPieces: [Range<Int64>]
    }

    static func plan(from lower: Int64, to upper: Int64, now: Int64) -> Plan {
        guard lower < upper else { return Plan(keptDays: nil, readPieces: []) }
        let dayLength = GroupFigures.dayMilliseconds
        let firstWhole = lower % dayLength == 0 ? day(lower) : day(lower) + 1
        var lastWhole = day(upper) - 1
        while lastWhole >= firstWhole, !mayKeep(day: lastWhole, now: now) { lastWhole -= 1 }
        guard firstWhole <= lastWhole else { return Plan(keptDays: nil, readPieces: [lower..<upper]) }
        var pieces: [Range<Int64>] = []
        let wholeStart = firstWhole * dayLength
        let wholeEnd = (lastWhole + 1) * dayLength
        if lower < wholeStart { pieces.append(lower..<wholeStart) }
        if wholeEnd < upper { pieces.append(wholeEnd..<upper) }
        return Plan(keptDays: firstWhole...lastWhole, readPieces: pieces)
    }

    /// A kept day's counters as the store holds them (JSON, sealed by the store).
    static func encode(_ figures: DailyStatistics.Accumulator.Day) throws -> String {
        try StoreJSON.encode(figures)
    }

    /// A kept day's counters, or nil for a summary that does not decode (a damaged row is read
    /// again from the readings, never trusted and never fatal).
    static func decode(_ summary: String) -> DailyStatistics.Accumulator.Day? {
        try? StoreJSON.decode(summary)
    }
}

/// One device's day as the store keeps it: the counters (opened), when and with which limits they
/// were summarised, and the latest late arrival of a reading of the day.
struct HeartRateDayRow: Hashable, Sendable {
    var day: Int64
    var computedMilliseconds: Int64?
    var limitMinimum: Int?
    var limitMaximum: Int?
    var summary: String?
    var lateMilliseconds: Int64
}

/// The statistics' day summaries (`heart_rate_days`), one row per device and UTC day.
protocol HeartRateDayStore: Sendable {
    /// The rows of `days` that exist, summaries opened.
    func heartRateDays(deviceID: String, days: ClosedRange<Int64>) async throws -> [HeartRateDayRow]

    /// Keeps the counters of whole days summarised by a pass that began at `computedMilliseconds`
    /// (sealed with the device's key); a day's late mark stays as it is.
    func saveHeartRateDays(
        deviceID: String,
        _ summaries: [Int64: String],
        limits: HeartRateLimits,
        computedMilliseconds: Int64
    ) async throws

    /// Marks days of the device as having received a reading late, at `receivedMilliseconds`.
    func markHeartRateDaysLate(deviceID: String, days: Set<Int64>, receivedMilliseconds: Int64) async throws
}
