/// When a reading was taken, in the two kinds of time a Raspberry Pi has.
///
/// A Pi has no real-time clock: until NTP or GPS sets it, the wall clock may say 1970 or
/// whatever the last shutdown wrote. The monotonic clock is always right about intervals but
/// restarts at every boot, so it is paired with the boot's identifier. The wall time is kept
/// with a flag saying whether it was trusted when the reading was taken, so a later trusted time
/// can correct it instead of the reading being silently filed in the wrong year.
public struct ReadingTimestamp: Hashable, Sendable, Codable {
    /// Nanoseconds on the monotonic clock (`CLOCK_MONOTONIC` / `CLOCK_BOOTTIME`) of boot `bootID`.
    public var monotonicNanoseconds: UInt64
    /// The kernel's boot identifier (`/proc/sys/kernel/random/boot_id`), or a simulation's run id.
    public var bootID: String
    /// Milliseconds since the Unix epoch on the wall clock, if the device had any wall time.
    public var wallClockMilliseconds: Int64?
    /// Whether the wall clock was synchronised (NTP or GPS) when the reading was taken.
    public var wallClockTrusted: Bool
    /// The wall time was not trusted when the reading was taken and was corrected on the device
    /// afterwards (`WallClockCorrection`): `wallClockMilliseconds` is the monotonic time plus the
    /// offset a trusted time of the same boot gave, and `wallClockTrusted` is then true.
    public var wallClockCorrected: Bool

    public init(
        monotonicNanoseconds: UInt64,
        bootID: String,
        wallClockMilliseconds: Int64?,
        wallClockTrusted: Bool,
        wallClockCorrected: Bool = false
    ) {
        self.monotonicNanoseconds = monotonicNanoseconds
        self.bootID = bootID
        self.wallClockMilliseconds = wallClockMilliseconds
        self.wallClockTrusted = wallClockTrusted
        self.wallClockCorrected = wallClockCorrected
    }

    enum CodingKeys: String, CodingKey {
        case monotonicNanoseconds = "mono_ns"
        case bootID = "boot_id"
        case wallClockMilliseconds = "wall_ms"
        case wallClockTrusted = "wall_trusted"
        case wallClockCorrected = "wall_corrected"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        monotonicNanoseconds = try c.decode(UInt64.self, forKey: .monotonicNanoseconds)
        bootID = try c.decode(String.self, forKey: .bootID)
        wallClockMilliseconds = try c.decodeIfPresent(Int64.self, forKey: .wallClockMilliseconds)
        wallClockTrusted = try c.decode(Bool.self, forKey: .wallClockTrusted)
        wallClockCorrected = try c.decodeIfPresent(Bool.self, forKey: .wallClockCorrected) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(monotonicNanoseconds, forKey: .monotonicNanoseconds)
        try c.encode(bootID, forKey: .bootID)
        try c.encode(wallClockMilliseconds, forKey: .wallClockMilliseconds)
        try c.encode(wallClockTrusted, forKey: .wallClockTrusted)
        // Only when true: timestamps never corrected stay byte for byte what older readers know.
        if wallClockCorrected { try c.encode(true, forKey: .wallClockCorrected) }
    }

    /// Milliseconds elapsed from `earlier` to `self` on the monotonic clock, or nil if the two
    /// were taken in different boots (their monotonic clocks are unrelated).
    public func milliseconds(since earlier: ReadingTimestamp) -> Int64? {
        guard bootID == earlier.bootID else { return nil }
        return (Int64(bitPattern: monotonicNanoseconds) - Int64(bitPattern: earlier.monotonicNanoseconds)) / 1_000_000
    }
}
