public import TrackMeCore

/// The compact binary form of a reading's payload as the store keeps it on disk.
///
/// A week of 1 Hz heart rate and 1 Hz GPS is 1.2 million readings and must fit in 64 MB, so
/// about 50 bytes a row including SQLite's own overhead; JSON would take four times that. The
/// encoding is lossless: a coordinate is kept as a scaled integer only when dividing it back
/// gives the very same `Double` (true for every value gpsd prints with at most 7 decimals),
/// otherwise as its 8 raw bytes; gpsd's ISO time text is kept as milliseconds only when
/// formatting them back gives the very same text.
public enum ReadingBodyCodec {
    public struct DecodingFailure: Error, Hashable, Sendable, CustomStringConvertible {
        public var offset: Int
        public var expected: String
        public var description: String { "reading body: expected \(expected) at byte \(offset)" }
    }

    static let kindHeartRate: UInt8 = 0
    static let kindFix: UInt8 = 1

    /// Encodes the payload and the timestamp's `wall_trusted` flag (the rest of the timestamp
    /// lives in columns of its own).
    public static func encode(_ payload: WireReading.Payload, wallClockTrusted: Bool) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        let trusted: UInt8 = wallClockTrusted ? 0x80 : 0
        switch payload {
        case .heartRate(let hr):
            let contact: UInt8 =
                switch hr.contact {
                case .detected: 0
                case .notDetected: 1
                case .unsupported: 2
                }
            let hasEnergy: UInt8 = hr.energyExpendedKilojoules == nil ? 0 : 0x10
            out.append(kindHeartRate | trusted | (contact << 2) | hasEnergy)
            appendVarint(zigzag(Int64(hr.bpm)), to: &out)
            if let energy = hr.energyExpendedKilojoules { appendVarint(zigzag(Int64(energy)), to: &out) }
            appendVarint(UInt64(hr.rrIntervals.count), to: &out)
            for rr in hr.rrIntervals { appendVarint(UInt64(rr), to: &out) }
        case .position(let fix):
            let mode = UInt8(truncatingIfNeeded: fix.mode.rawValue)
            out.append(kindFix | trusted | (mode << 2))
            var presence: UInt8 = 0
            let doubles = [fix.latitude, fix.longitude, fix.altitudeHAE, fix.altitudeMSL, fix.speed, fix.track, fix.horizontalError]
            for (i, value) in doubles.enumerated() where value != nil { presence |= 1 << UInt8(i) }
            if fix.time != nil { presence |= 0x80 }
            out.append(presence)
            for (i, value) in doubles.enumerated() {
                guard let value else { continue }
                appendDouble(value, scale: i < 2 ? 1e7 : 1e3, to: &out)
            }
            if let time = fix.time {
                if let ms = ISOTime.milliseconds(time) {
                    out.append(0)
                    appendVarint(zigzag(ms), to: &out)
                } else {
                    out.append(1)
                    let bytes = Array(time.utf8)
                    appendVarint(UInt64(bytes.count), to: &out)
                    out.append(contentsOf: bytes)
                }
            }
        }
        return out
    }

    /// Decodes a body written by `encode`; returns the payload and the `wall_trusted` flag.
    public static func decode(_ bytes: [UInt8]) throws(DecodingFailure) -> (payload: WireReading.Payload, wallClockTrusted: Bool) {
        var reader = Reader(bytes: bytes)
        let head = try reader.byte("kind byte")
        let trusted = head & 0x80 != 0
        switch head & 0x03 {
        case kindHeartRate:
            let contact: SensorContact
            switch (head >> 2) & 0x03 {
            case 0: contact = .detected
            case 1: contact = .notDetected
            case 2: contact = .unsupported
            default: throw DecodingFailure(offset: 0, expected: "a contact code 0-2")
            }
            let bpm = Int(unzigzag(try reader.varint("bpm")))
            var energy: Int?
            if head & 0x10 != 0 { energy = Int(unzigzag(try reader.varint("energy"))) }
            let count = try reader.varint("rr count")
            guard count <= 64 else { throw DecodingFailure(offset: reader.offset, expected: "at most 64 rr intervals") }
            var rr: [UInt16] = []
            rr.reserveCapacity(Int(count))
            for _ in 0..<count { rr.append(UInt16(truncatingIfNeeded: try reader.varint("rr interval"))) }
            return (.heartRate(HeartRateReading(bpm: bpm, contact: contact, energyExpendedKilojoules: energy, rrIntervals: rr)), trusted)
        case kindFix:
            guard let mode = FixMode(rawValue: Int((head >> 2) & 0x03)) else {
                throw DecodingFailure(offset: 0, expected: "a fix mode 1-3")
            }
            let presence = try reader.byte("presence bits")
            var values: [Double?] = []
            for i in 0..<7 {
                if presence & (1 << UInt8(i)) != 0 {
                    values.append(try reader.double(scale: i < 2 ? 1e7 : 1e3))
                } else {
                    values.append(nil)
                }
            }
            var time: String?
            if presence & 0x80 != 0 {
                let form = try reader.byte("time form")
                if form == 0 {
                    // Only years 0000-9999 were ever encoded (four-digit text); anything else is
                    // damage, and would overflow the calendar arithmetic.
                    let ms = unzigzag(try reader.varint("time ms"))
                    guard ISOTime.encodable.contains(ms) else {
                        throw DecodingFailure(offset: reader.offset, expected: "a time within years 0000-9999")
                    }
                    time = ISOTime.format(ms)
                } else {
                    // A length past Int.max would trap in Int(_:): refused like any length past the end.
                    guard let length = Int(exactly: try reader.varint("time length")) else {
                        throw DecodingFailure(offset: reader.offset, expected: "a time length within the body")
                    }
                    time = String(decoding: try reader.bytes(length, "time text"), as: UTF8.self)
                }
            }
            return (
                .position(
                    PositionFix(
                        time: time,
                        mode: mode,
                        latitude: values[0],
                        longitude: values[1],
                        altitudeHAE: values[2],
                        altitudeMSL: values[3],
                        speed: values[4],
                        track: values[5],
                        horizontalError: values[6]
                    )
                ),
                trusted
            )
        default:
            throw DecodingFailure(offset: 0, expected: "a reading kind 0 or 1")
        }
    }

    // MARK: - Primitives

    static func zigzag(_ v: Int64) -> UInt64 { UInt64(bitPattern: (v << 1) ^ (v >> 63)) }
    static func unzigzag(_ v: UInt64) -> Int64 { Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1) }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Tag bit 0 of the varint: 0 = scaled integer follows in the upper bits, 1 = raw bits follow.
    static func appendDouble(_ value: Double, scale: Double, to out: inout [UInt8]) {
        let scaled = (value * scale).rounded()
        if scaled.magnitude < 1e15, let integer = Int64(exactly: scaled), Double(integer) / scale == value,
            !(value == 0 && value.sign == .minus)
        {
            appendVarint(zigzag(integer) << 1, to: &out)
        } else {
            out.append(1)
            var bits = value.bitPattern
            for _ in 0..<8 {
                out.append(UInt8(truncatingIfNeeded: bits))
                bits >>= 8
            }
        }
    }

    struct Reader {
        var bytes: [UInt8]
        var offset = 0

        mutating func byte(_ what: String) throws(DecodingFailure) -> UInt8 {
            guard offset < bytes.count else { throw DecodingFailure(offset: offset, expected: what) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func bytes(_ count: Int, _ what: String) throws(DecodingFailure) -> ArraySlice<UInt8> {
            guard count >= 0, count <= bytes.count - offset else { throw DecodingFailure(offset: offset, expected: what) }
            defer { offset += count }
            return bytes[offset..<offset + count]
        }

        mutating func varint(_ what: String) throws(DecodingFailure) -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            let start = offset
            while true {
                guard shift < 64 else { throw DecodingFailure(offset: start, expected: "\(what) (varint too long)") }
                let b = try byte(what)
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
            }
        }

        mutating func double(scale: Double) throws(DecodingFailure) -> Double {
            let start = offset
            let first = try byte("number")
            if first == 1 {
                var bits: UInt64 = 0
                for (i, b) in try bytes(8, "8 raw bytes of a number").enumerated() { bits |= UInt64(b) << (8 * UInt64(i)) }
                return Double(bitPattern: bits)
            }
            offset = start
            let tagged = try varint("number")
            return Double(unzigzag(tagged >> 1)) / scale
        }
    }
}

/// gpsd's time text `YYYY-MM-DDTHH:MM:SS.sssZ` to and from milliseconds since the epoch,
/// without Foundation's formatters (slow, and locale-dependent if misused).
enum ISOTime {
    /// The milliseconds of years 0000 to 9999, the only ones a four-digit text can carry.
    static let encodable: Range<Int64> =
        (CivilDate(year: 0, month: 1, day: 1).daysSinceEpoch * 86_400_000)..<(CivilDate(year: 10_000, month: 1, day: 1).daysSinceEpoch * 86_400_000)

    static func milliseconds(_ text: String) -> Int64? {
        let u = Array(text.utf8)
        guard u.count == 24, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A, u[19] == 0x2E,
            u[23] == 0x5A
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in range {
                guard u[i] >= 0x30, u[i] <= 0x39 else { return nil }
                v = v * 10 + Int64(u[i] - 0x30)
            }
            return v
        }
        guard let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
            let mi = number(14..<16), let s = number(17..<19), let ms = number(20..<23)
        else { return nil }
        let days = CivilDate(year: y, month: mo, day: d).daysSinceEpoch
        let result = ((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
        // Only the canonical form is kept as a number; anything else keeps its text.
        return format(result) == text ? result : nil
    }

    static func format(_ milliseconds: Int64) -> String {
        CivilDate.iso8601(milliseconds: milliseconds)
    }
}
