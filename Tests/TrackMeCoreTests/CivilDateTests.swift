import Foundation
import Testing
import TrackMeCore

@Suite struct CivilDateTests {
    @Test("days and dates agree both ways over four centuries either side of 1970, leap days included")
    func roundTrip() {
        var previous = CivilDate(daysSinceEpoch: -146_097 - 1)
        for days in Int64(-146_097)...Int64(146_097) {
            let date = CivilDate(daysSinceEpoch: days)
            #expect(date.daysSinceEpoch == days)
            // Each day follows the last: the next day of the month, or the first of the next.
            let next = date.day == previous.day + 1 || (date.day == 1 && (date.month == previous.month % 12 + 1))
            if !next { Issue.record("\(previous) then \(date)") }
            previous = date
        }
        #expect(CivilDate(year: 2000, month: 2, day: 29).daysSinceEpoch + 1 == CivilDate(year: 2000, month: 3, day: 1).daysSinceEpoch)
        #expect(CivilDate(year: 1900, month: 2, day: 28).daysSinceEpoch + 1 == CivilDate(year: 1900, month: 3, day: 1).daysSinceEpoch)
    }

    @Test("ISO 8601 text as Foundation writes it, before 1970 too")
    func iso8601() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for milliseconds: Int64 in [0, 1, 86_399_999, 86_400_000, -1, -86_400_000, 951_782_400_123, 1_795_000_000_000, -2_208_988_800_000] {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            #expect(CivilDate.iso8601(milliseconds: milliseconds) == expected, "\(milliseconds)")
        }
        #expect(CivilDate(containing: -1) == CivilDate(year: 1969, month: 12, day: 31))
        #expect(CivilDate(containing: 1_795_000_000_000).compact == "20261118")
        #expect(CivilDate.days(containing: -1) == -1)
        #expect(CivilDate.days(containing: 86_400_000) == 1)
    }
}
