public import TrackMeCore

extension HeartRateTrace {
    /// The trace played again and again until `limit` (trace milliseconds): each repetition
    /// follows the last row one notification interval later, so a 30-minute record becomes a day.
    public func repeated(untilMilliseconds limit: Int64) -> HeartRateTrace {
        guard let firstRow = rows.first, let lastRow = rows.last else { return self }
        let period = lastRow.timeMilliseconds - firstRow.timeMilliseconds + 1000
        var result = self
        var shift = period
        while firstRow.timeMilliseconds + shift <= limit {
            for row in rows where row.timeMilliseconds + shift <= limit {
                var copy = row
                copy.timeMilliseconds += shift
                result.rows.append(copy)
            }
            shift += period
        }
        return result
    }
}
