/// A UTC calendar date and the day number it has since 1970-01-01, both ways, without
/// Foundation's calendar (Howard Hinnant's `days_from_civil` and `civil_from_days`, exact over
/// the whole Int64 range of days that fits a year). One place for every ISO 8601 time and every
/// day-named partition the code writes.
public struct CivilDate: Hashable, Sendable {
    public var year: Int64
    public var month: Int64
    public var day: Int64

    public static let dayMilliseconds: Int64 = 86_400_000

    public init(year: Int64, month: Int64, day: Int64) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The date `days` after 1970-01-01 (before it when negative).
    public init(daysSinceEpoch days: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// The UTC date holding a time in milliseconds since 1970 (a time before 1970 is in its own day).
    public init(containing milliseconds: Int64) {
        self.init(daysSinceEpoch: Self.days(containing: milliseconds))
    }

    /// Days since 1970-01-01.
    public var daysSinceEpoch: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The day number holding a time in milliseconds (floor, not truncation).
    public static func days(containing milliseconds: Int64) -> Int64 {
        let remainder = milliseconds % dayMilliseconds
        return (milliseconds - remainder) / dayMilliseconds - (remainder < 0 ? 1 : 0)
    }

    /// `YYYYMMDD`.
    public var compact: String { Self.pad(year, 4) + Self.pad(month, 2) + Self.pad(day, 2) }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a time in milliseconds since 1970.
    public static func iso8601(milliseconds: Int64) -> String {
        let days = days(containing: milliseconds)
        let ms = milliseconds - days * dayMilliseconds
        let date = CivilDate(daysSinceEpoch: days)
        return "\(pad(date.year, 4))-\(pad(date.month, 2))-\(pad(date.day, 2))T\(pad(ms / 3_600_000, 2)):\(pad(ms / 60_000 % 60, 2)):"
            + "\(pad(ms / 1000 % 60, 2)).\(pad(ms % 1000, 3))Z"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
