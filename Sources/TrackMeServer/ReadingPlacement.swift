import TrackMeCore

/// Decides where in time a reading is filed. A device's wall time is used only when the device
/// trusted it and it is plausible (not after the server's own time plus a tolerance, not before
/// the device was enrolled); otherwise the reading is filed at the time the server received it,
/// the earliest moment it is known to have existed by, and flagged with the reason. A Pi that
/// booted without a real-time clock thus never files readings in 1970.
enum ReadingPlacement {
    static func row(for reading: WireReading, device: DeviceRow, now: Int64, futureTolerance: Duration) throws -> ReadingRow {
        let wall = reading.timestamp.wallClockMilliseconds
        let tolerance = futureTolerance.milliseconds
        let flag: TimeFlag?
        switch (wall, reading.timestamp.wallClockTrusted) {
        case (nil, _):
            flag = .noWallClock
        case (.some, false):
            flag = .untrustedClock
        case (.some(let wall), true) where wall > now + tolerance:
            flag = .future
        case (.some(let wall), true) where wall < device.enrolledMilliseconds - tolerance:
            flag = .beforeEnrolment
        case (.some, true):
            flag = nil
        }
        let placed = flag == nil ? (wall ?? now) : now
        return ReadingRow(
            sequence: reading.sequence,
            kind: reading.kind,
            placedMilliseconds: placed,
            wallMilliseconds: wall,
            timeFlag: flag,
            body: try WireFastPath.canonicalJSON(reading) ?? StoreJSON.encode(reading)
        )
    }
}
