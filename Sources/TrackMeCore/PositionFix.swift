/// The quality of a position fix, as gpsd's TPV `mode` reports it.
public enum FixMode: Int, Hashable, Sendable, Codable, CaseIterable, Comparable {
    /// The receiver is talking but has no fix (gpsd mode 1; mode 0, "not seen", maps here too).
    case none = 1
    case twoDimensional = 2
    case threeDimensional = 3

    public static func < (lhs: FixMode, rhs: FixMode) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One position report from gpsd (a TPV). Fields gpsd did not set are nil, never zero.
public struct PositionFix: Hashable, Sendable, Codable {
    /// The fix time as gpsd gives it (ISO-8601 UTC with its fractional seconds), if any.
    public var time: String?
    public var mode: FixMode
    public var latitude: Double?
    public var longitude: Double?
    /// Altitude above the WGS84 ellipsoid, metres.
    public var altitudeHAE: Double?
    /// Altitude above mean sea level, metres.
    public var altitudeMSL: Double?
    /// Speed over ground, metres per second.
    public var speed: Double?
    /// Course over ground, degrees from true north.
    public var track: Double?
    /// Estimated horizontal position error, metres (gpsd `eph`).
    public var horizontalError: Double?

    public init(
        time: String? = nil,
        mode: FixMode,
        latitude: Double? = nil,
        longitude: Double? = nil,
        altitudeHAE: Double? = nil,
        altitudeMSL: Double? = nil,
        speed: Double? = nil,
        track: Double? = nil,
        horizontalError: Double? = nil
    ) {
        self.time = time
        self.mode = mode
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeHAE = altitudeHAE
        self.altitudeMSL = altitudeMSL
        self.speed = speed
        self.track = track
        self.horizontalError = horizontalError
    }

    /// A fix that places the wearer: mode 2D or better with both coordinates present.
    public var hasPosition: Bool {
        mode >= .twoDimensional && latitude != nil && longitude != nil
    }

    enum CodingKeys: String, CodingKey {
        case time, mode
        case latitude = "lat"
        case longitude = "lon"
        case altitudeHAE = "alt_hae"
        case altitudeMSL = "alt_msl"
        case speed, track
        case horizontalError = "eph"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        time = try c.decodeIfPresent(String.self, forKey: .time)
        mode = try c.decode(FixMode.self, forKey: .mode)
        latitude = try c.decodeIfPresent(Double.self, forKey: .latitude)
        longitude = try c.decodeIfPresent(Double.self, forKey: .longitude)
        altitudeHAE = try c.decodeIfPresent(Double.self, forKey: .altitudeHAE)
        altitudeMSL = try c.decodeIfPresent(Double.self, forKey: .altitudeMSL)
        speed = try c.decodeIfPresent(Double.self, forKey: .speed)
        track = try c.decodeIfPresent(Double.self, forKey: .track)
        horizontalError = try c.decodeIfPresent(Double.self, forKey: .horizontalError)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(time, forKey: .time)
        try c.encode(mode, forKey: .mode)
        try c.encode(latitude, forKey: .latitude)
        try c.encode(longitude, forKey: .longitude)
        try c.encode(altitudeHAE, forKey: .altitudeHAE)
        try c.encode(altitudeMSL, forKey: .altitudeMSL)
        try c.encode(speed, forKey: .speed)
        try c.encode(track, forKey: .track)
        try c.encode(horizontalError, forKey: .horizontalError)
    }
}
