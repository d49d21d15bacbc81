public import TrackMeCore

/// An NMEA capture turned into position fixes at their offsets from the first epoch, for the
/// simulation's fast mode (field mode replays the same log through the real gpsd instead).
///
/// Only what a position needs is read: RMC (time, validity, position, speed, track, date) and GGA
/// (fix quality, position, altitude). Sentences with a bad checksum are skipped, as gpsd skips
/// them; one fix is produced per epoch (UTC time of day), merging the RMC and GGA of that epoch.
public struct NMEAPositionLog: Sendable {
    public struct TimedFix: Sendable, Hashable {
        /// Milliseconds from the log's first epoch.
        public var offsetMilliseconds: Int64
        public var fix: PositionFix
    }

    public var fixes: [TimedFix]

    public init(text: String) {
        var epochs: [(timeOfDayMs: Int64, fix: PositionFix)] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            guard let fields = Self.validSentence(rawLine) else { continue }
            let type = fields[0].suffix(3)
            guard type == "RMC" || type == "GGA", fields.count > 6, let tod = Self.timeOfDay(fields[1]) else { continue }
            if epochs.last?.timeOfDayMs != tod {
                epochs.append((tod, PositionFix(mode: .none)))
            }
            guard var fix = epochs.last?.fix else { continue }
            if type == "RMC" {
                Self.applyRMC(fields, to: &fix)
            } else {
                Self.applyGGA(fields, to: &fix)
            }
            epochs[epochs.count - 1].fix = fix
        }
        var result: [TimedFix] = []
        var offset: Int64 = 0
        var previous: Int64?
        for epoch in epochs {
            if let previous {
                var step = epoch.timeOfDayMs - previous
                if step < 0 { step += 86_400_000 }  // midnight
                // A receiver clock jump (power-up time to real time) is not a gap in the recording.
                offset += (step > 10_000) ? 1000 : step
            }
            previous = epoch.timeOfDayMs
            result.append(TimedFix(offsetMilliseconds: offset, fix: epoch.fix))
        }
        fixes = result
    }

    /// Splits a sentence into fields if it is well formed with a correct checksum.
    static func validSentence(_ line: Substring) -> [Substring]? {
        guard let dollar = line.firstIndex(of: "$") else { return nil }
        let sentence = line[line.index(after: dollar)...]
        guard let star = sentence.lastIndex(of: "*") else { return nil }
        let body = sentence[..<star]
        let checksumText = sentence[sentence.index(after: star)...].prefix(2)
        guard checksumText.count == 2, let expected = UInt8(checksumText, radix: 16) else { return nil }
        var sum: UInt8 = 0
        for byte in body.utf8 { sum ^= byte }
        guard sum == expected else { return nil }
        return body.split(separator: ",", omittingEmptySubsequences: false)
    }

    static func timeOfDay(_ field: Substring) -> Int64? {
        guard field.count >= 6, let hh = Int64(field.prefix(2)), let mm = Int64(field.dropFirst(2).prefix(2)),
            let ss = Double(field.dropFirst(4))
        else { return nil }
        return (hh * 3600 + mm * 60) * 1000 + Int64((ss * 1000).rounded())
    }

    /// `ddmm.mmmm` / `dddmm.mmmm` with hemisphere to signed degrees.
    static func coordinate(_ value: Substring, _ hemisphere: Substring, degreeDigits: Int) -> Double? {
        guard value.count > degreeDigits, let degrees = Double(value.prefix(degreeDigits)),
            let minutes = Double(value.dropFirst(degreeDigits))
        else { return nil }
        let magnitude = degrees + minutes / 60
        switch hemisphere {
        case "N", "E": return magnitude
        case "S", "W": return -magnitude
        default: return nil
        }
    }

    static func applyRMC(_ f: [Substring], to fix: inout PositionFix) {
        guard f.count > 9 else { return }
        guard f[2] == "A", let lat = coordinate(f[3], f[4], degreeDigits: 2), let lon = coordinate(f[5], f[6], degreeDigits: 3)
        else { return }
        fix.latitude = lat
        fix.longitude = lon
        if fix.mode < .twoDimensional { fix.mode = .twoDimensional }
        if let knots = Double(f[7]) { fix.speed = knots * 0.514444 }
        if let track = Double(f[8]) { fix.track = track }
        if f[9].count == 6, f[1].count >= 6 {
            let d = f[9]
            let t = f[1]
            fix.time =
                "20\(d.dropFirst(4).prefix(2))-\(d.dropFirst(2).prefix(2))-\(d.prefix(2))T"
                + "\(t.prefix(2)):\(t.dropFirst(2).prefix(2)):\(t.dropFirst(4))Z"
        }
    }

    static func applyGGA(_ f: [Substring], to fix: inout PositionFix) {
        guard f.count > 9, let quality = Int(f[6]), quality > 0,
            let lat = coordinate(f[2], f[3], degreeDigits: 2), let lon = coordinate(f[4], f[5], degreeDigits: 3)
        else { return }
        fix.latitude = lat
        fix.longitude = lon
        if let altitude = Double(f[9]) {
            fix.altitudeMSL = altitude
            fix.mode = .threeDimensional
        } else if fix.mode < .twoDimensional {
            fix.mode = .twoDimensional
        }
    }
}
