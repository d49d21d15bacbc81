public import TrackMeCore

/// The Heart Rate Measurement characteristic (0x2A37) value: decoding and encoding.
///
/// Layout (Heart Rate Service 1.0, little-endian): flags (1 byte); heart rate, uint8 or uint16 as
/// flags bit 0 says; energy expended, uint16 kJ, if bit 3; RR intervals, uint16 each in 1/1024 s,
/// as many as fill the rest of the payload, if bit 4. Bits 1-2 give sensor contact: 0b0x not
/// supported, 0b10 supported but not detected, 0b11 detected. Bits 5-7 are reserved and ignored.
public enum HeartRateMeasurement {
    public static let uuid = BluetoothUUID(0x2A37)

    /// Notification payload limit for the default ATT MTU of 23 (MTU minus opcode and handle).
    public static let defaultMaximumPayload = 20

    struct Flags: OptionSet {
        let rawValue: UInt8
        static let bpmIsUInt16 = Flags(rawValue: 1 << 0)
        static let contactDetected = Flags(rawValue: 1 << 1)
        static let contactSupported = Flags(rawValue: 1 << 2)
        static let energyExpended = Flags(rawValue: 1 << 3)
        static let rrIntervals = Flags(rawValue: 1 << 4)
    }

    /// Decodes one payload. Never traps: a payload that ends early, or that has a byte left over,
    /// throws with the offset and the field expected there.
    public static func decode(_ bytes: [UInt8]) throws(PayloadDecodingError) -> HeartRateReading {
        var reader = ByteReader(bytes)
        let flags = Flags(rawValue: try reader.readUInt8("flags"))
        let bpm: Int
        if flags.contains(.bpmIsUInt16) {
            bpm = Int(try reader.readUInt16("heart rate uint16"))
        } else {
            bpm = Int(try reader.readUInt8("heart rate uint8"))
        }
        let contact: SensorContact
        if !flags.contains(.contactSupported) {
            contact = .unsupported
        } else if flags.contains(.contactDetected) {
            contact = .detected
        } else {
            contact = .notDetected
        }
        var energy: Int?
        if flags.contains(.energyExpended) {
            energy = Int(try reader.readUInt16("energy expended uint16"))
        }
        var rr: [UInt16] = []
        if flags.contains(.rrIntervals) {
            // Flag bit 4 promises at least one interval; after that, as many as the payload holds.
            repeat {
                rr.append(try reader.readUInt16("RR interval uint16"))
            } while !reader.isAtEnd
        }
        try reader.expectEnd("heart rate measurement (flags 0x\(Hex.byte(flags.rawValue)))")
        return HeartRateReading(bpm: bpm, contact: contact, energyExpendedKilojoules: energy, rrIntervals: rr)
    }

    /// Encodes a reading as a strap would, fitting into `maximumLength` bytes: bpm above 255 (or
    /// `forceUInt16`) uses the uint16 form, energy is clamped to uint16, and RR intervals that do
    /// not fit are left out (a real strap sends them in the next notification).
    public static func encode(
        _ reading: HeartRateReading,
        forceUInt16: Bool = false,
        maximumLength: Int = defaultMaximumPayload
    ) -> [UInt8] {
        var flags: Flags = []
        let wide = forceUInt16 || reading.bpm > Int(UInt8.max) || reading.bpm < 0
        if wide { flags.insert(.bpmIsUInt16) }
        switch reading.contact {
        case .detected: flags.formUnion([.contactSupported, .contactDetected])
        case .notDetected: flags.insert(.contactSupported)
        case .unsupported: break
        }
        var length = 1 + (wide ? 2 : 1)
        if reading.energyExpendedKilojoules != nil {
            flags.insert(.energyExpended)
            length += 2
        }
        let rrRoom = max(0, (maximumLength - length) / 2)
        let rr = reading.rrIntervals.prefix(rrRoom)
        if !rr.isEmpty { flags.insert(.rrIntervals) }

        var bytes: [UInt8] = [flags.rawValue]
        if wide {
            bytes.appendLittleEndian(UInt16(clamping: reading.bpm))
        } else {
            bytes.append(UInt8(clamping: reading.bpm))
        }
        if let energy = reading.energyExpendedKilojoules {
            bytes.appendLittleEndian(UInt16(clamping: energy))
        }
        for interval in rr { bytes.appendLittleEndian(interval) }
        return bytes
    }
}

/// Body Sensor Location (0x2A38): where the strap sits.
public enum BodySensorLocation: UInt8, Sendable, Hashable, CaseIterable {
    case other = 0
    case chest, wrist, finger, hand, earLobe, foot

    public static let uuid = BluetoothUUID(0x2A38)

    public static func decode(_ bytes: [UInt8]) throws(PayloadDecodingError) -> BodySensorLocation {
        var reader = ByteReader(bytes)
        let raw = try reader.readUInt8("body sensor location")
        guard let location = BodySensorLocation(rawValue: raw) else {
            throw PayloadDecodingError(code: .invalidValue, offset: 0, expected: "body sensor location 0-6, found \(raw)")
        }
        try reader.expectEnd("body sensor location")
        return location
    }

    public var encoded: [UInt8] { [rawValue] }
}

/// Battery Level (0x2A19, Battery service 0x180F): percent, 0-100.
public enum BatteryLevel {
    public static let uuid = BluetoothUUID(0x2A19)

    public static func decode(_ bytes: [UInt8]) throws(PayloadDecodingError) -> Int {
        var reader = ByteReader(bytes)
        let level = try reader.readUInt8("battery level")
        guard level <= 100 else {
            throw PayloadDecodingError(code: .invalidValue, offset: 0, expected: "battery level 0-100, found \(level)")
        }
        try reader.expectEnd("battery level")
        return Int(level)
    }

    public static func encode(_ percent: Int) -> [UInt8] { [UInt8(clamping: min(100, max(0, percent)))] }
}
