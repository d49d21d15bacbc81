import Foundation
public import TrackMeCore

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's source of `ReadingTimestamp`s: `CLOCK_BOOTTIME` (monotonic, and it keeps counting
/// while the board is suspended) with this boot's id from `/proc/sys/kernel/random/boot_id`, and
/// the wall clock with a trusted flag.
///
/// The wall clock is trusted when the kernel says it is synchronised: `adjtimex()` reports
/// `STA_UNSYNC` clear (the flag NTP daemons, chrony and gpsd's time service clear once they
/// discipline the clock; what `timedatectl` shows as "System clock synchronized"). A plausible
/// year alone is not enough: a Pi restores the last shutdown's time from
/// fake-hwclock, which is plausible and wrong.
public struct AgentTimestamps: Sendable {
    public let bootID: String

    public init() {
        let raw = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        // Without /proc (a container without it) a per-process id keeps ages within this run right.
        bootID = trimmed.isEmpty ? "process-\(UUID().uuidString.lowercased())" : trimmed
    }

    /// Now, on both clocks.
    public func now() -> ReadingTimestamp {
        var boot = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let mono = UInt64(max(0, boot.tv_sec)) * 1_000_000_000 + UInt64(max(0, boot.tv_nsec))
        let wallMilliseconds = Int64(wall.tv_sec) * 1000 + Int64(wall.tv_nsec) / 1_000_000
        return ReadingTimestamp(
            monotonicNanoseconds: mono, bootID: bootID, wallClockMilliseconds: wallMilliseconds,
            wallClockTrusted: Self.wallClockSynchronised())
    }

    /// Whether the kernel considers the system clock synchronised: a read-only `adjtimex`
    /// (modes 0) returns `TIME_ERROR` (5) while `STA_UNSYNC` is set.
    static func wallClockSynchronised() -> Bool {
        // Glibc's Swift module does not include <sys/timex.h>; the call only needs a zeroed
        // `struct timex` (208 bytes on LP64; 256 leaves room) and its return value.
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
        let result = systemAdjtimex(buffer)
        return result >= 0 && result != 5
    }
}

@_silgen_name("adjtimex")
private func systemAdjtimex(_ timex: UnsafeMutableRawPointer) -> Int32
