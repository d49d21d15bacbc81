public import TrackMeCore

/// Realistic 1 Hz heart rate and 1 Hz GPS readings, deterministic from an index, for
/// benchmarks, the crash child and tests (values shaped like a real strap and gpsd).
public enum SyntheticReadings {
    public static let bootID = "3f1c2d9e-8a51-4c1e-9d7b-2a4e5f6a7b8c"

    /// Reading `index`: even indices are heart rate, odd ones fixes, half a second apart.
    public static func reading(_ index: Int, bootID: String = SyntheticReadings.bootID) -> (ReadingTimestamp, WireReading.Payload) {
        let mono = UInt64(1_000_000_000) + UInt64(index) * 500_000_000
        let wall: Int64 = 1_795_000_000_000 + Int64(index) * 500
        let timestamp = ReadingTimestamp(monotonicNanoseconds: mono, bootID: bootID, wallClockMilliseconds: wall, wallClockTrusted: index % 7 != 0)
        let second = index / 2
        if index % 2 == 0 {
            let bpm = 60 + (second * 7919) % 60
            let rr = UInt16(61_440 / bpm)
            return (timestamp, .heartRate(HeartRateReading(bpm: bpm, contact: .detected, energyExpendedKilojoules: nil, rrIntervals: [rr, rr &+ 3])))
        }
        // gpsd prints lat/lon with 9 decimals but a consumer receiver is good to a few metres;
        // values here carry 7 decimals, like the recorded traces.
        let lat = (440_689_340 + Double(second % 5000) * 13) / 1e7
        let lon = (-1_213_146_000 - Double(second % 5000) * 11) / 1e7
        let ms = wall - wall % 1000
        return (
            timestamp,
            .position(
                PositionFix(
                    time: isoTime(ms),
                    mode: .threeDimensional,
                    latitude: lat,
                    longitude: lon,
                    altitudeHAE: 1103.2 + Double(second % 50) / 10,
                    altitudeMSL: 1082.5,
                    speed: Double(second % 30) / 10,
                    track: Double(second % 3600) / 10,
                    horizontalError: 4.1
                )
            )
        )
    }

    static func isoTime(_ ms: Int64) -> String {
        CivilDate.iso8601(milliseconds: ms)
    }
}
