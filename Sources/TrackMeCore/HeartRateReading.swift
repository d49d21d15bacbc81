/// What the strap says about skin contact (Heart Rate Measurement flags, bits 1-2).
public enum SensorContact: String, Hashable, Sendable, Codable, CaseIterable {
    /// The strap supports contact detection and reports contact.
    case detected
    /// The strap supports contact detection and reports no contact.
    case notDetected = "not_detected"
    /// The strap does not report contact at all.
    case unsupported
}

/// One decoded Heart Rate Measurement (0x2A37) notification.
public struct HeartRateReading: Hashable, Sendable, Codable {
    /// Beats per minute as the strap sent it (uint8 or uint16 on the air).
    public var bpm: Int
    public var contact: SensorContact
    /// Cumulative energy expended in kilojoules, when the strap included it.
    public var energyExpendedKilojoules: Int?
    /// RR intervals in the strap's own unit, 1/1024 s, oldest first.
    public var rrIntervals: [UInt16]

    public init(bpm: Int, contact: SensorContact, energyExpendedKilojoules: Int? = nil, rrIntervals: [UInt16] = []) {
        self.bpm = bpm
        self.contact = contact
        self.energyExpendedKilojoules = energyExpendedKilojoules
        self.rrIntervals = rrIntervals
    }

    /// RR intervals in whole milliseconds, rounded to the nearest.
    public var rrMilliseconds: [Int] {
        rrIntervals.map { Self.milliseconds(fromRR: $0) }
    }

    /// Converts one RR interval in 1/1024 s to milliseconds, rounding half up.
    public static func milliseconds(fromRR value: UInt16) -> Int {
        (Int(value) * 1000 + 512) / 1024
    }

    /// Converts milliseconds to the nearest 1/1024 s unit, clamped to what a uint16 holds.
    public static func rrUnits(fromMilliseconds ms: Int) -> UInt16 {
        let units = (ms * 1024 + 500) / 1000
        return UInt16(clamping: max(0, units))
    }

    enum CodingKeys: String, CodingKey {
        case bpm
        case contact
        case energyExpendedKilojoules = "energy_kj"
        case rrIntervals = "rr"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bpm = try c.decode(Int.self, forKey: .bpm)
        contact = try c.decode(SensorContact.self, forKey: .contact)
        energyExpendedKilojoules = try c.decodeIfPresent(Int.self, forKey: .energyExpendedKilojoules)
        rrIntervals = try c.decode([UInt16].self, forKey: .rrIntervals)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bpm, forKey: .bpm)
        try c.encode(contact, forKey: .contact)
        try c.encode(energyExpendedKilojoules, forKey: .energyExpendedKilojoules)
        try c.encode(rrIntervals, forKey: .rrIntervals)
    }
}
