public import EdgeStore
import Foundation
public import Logging
import Synchronization
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
    /// Every trusted timestamp teaches this boot's wall-clock offset, so readings stamped before
    /// the clock was synchronised can be corrected before they are synced.
    let corrections = WallClockAnchors()
    /// Moves the wall clock the readings see (`trackme-agent run --wall-clock-offset-file`): a
    /// rehearsal of a clock that jumps, on a real device or in a test, without touching the
    /// system clock. Nil in service.
    let wallOffset: WallClockOffsetFile?

    /// Reads both clocks once; the wall time's trusted flag is the source's own judgement.
    private let read: @Sendable () -> ReadingTimestamp

    public init(wallClockOffsetFile: String? = nil) {
        let raw = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        // Without /proc (a container without it) a per-process id keeps ages within this run right.
        let bootID = trimmed.isEmpty ? "process-\(UUID().uuidString.lowercased())" : trimmed
        let wallOffset = wallClockOffsetFile.map(WallClockOffsetFile.init(path:))
        self.bootID = bootID
        self.wallOffset = wallOffset
        read = { Self.systemNow(bootID: bootID, wallOffset: wallOffset) }
    }

    /// Timestamps from another source of both clocks: the simulation's virtual clock, whose
    /// wall time a scenario may set to 1970 and untrusted (a board without a real-time clock
    /// before NTP or GPS). Learning and correcting are the daemon's own.
    public init(bootID: String, read: @escaping @Sendable () -> ReadingTimestamp) {
        self.bootID = bootID
        self.wallOffset = nil
        self.read = read
    }

    /// Now, on both clocks.
    public func now() -> ReadingTimestamp {
        taken(read())
    }

    /// A timestamp read from this source's clocks at another moment than now (the simulation
    /// stamps a trace second's readings after the fact): a trusted one teaches the offset as
    /// `now()`'s would.
    public func taken(_ timestamp: ReadingTimestamp) -> ReadingTimestamp {
        if timestamp.wallClockTrusted { corrections.learn(timestamp) }
        return timestamp
    }

    /// Batch `batchSequence`'s readings as they are to be sent, their untrusted wall times
    /// corrected with what trusted timestamps taught (the sync engine's `correctTimes`).
    public func corrected(_ readings: [WireReading], batchSequence: Int64) -> [WireReading] {
        corrections.corrected(readings, batchSequence: batchSequence)
    }

    /// Takes up the anchors an earlier run saved in `store`; a batch in flight may have gone
    /// out before the restart, so anchors not yet in force apply only above it and its resend
    /// carries what it carried then.
    public func restoreAnchors(from store: ReadingStore, deviceID: String, logger: Logger) {
        do {
            if let data = try store.deviceState(ReadingStore.DeviceStateKey.wallClockAnchors) {
                corrections.restore(try JSONDecoder().decode(WallClockCorrection.self, from: data))
            }
        } catch {
            logger.warning("wall clock anchors unreadable; readings of earlier runs stay uncorrected", metadata: ["store.error": "\(error)"])
        }
        if let inFlight = try? store.inFlightBatches(deviceID: deviceID).map(\.batch.batchSequence).max() {
            corrections.noteSent(upTo: inFlight)
        }
    }

    /// Saves the anchors in `store` if they changed (the ticker calls it every second).
    public func saveAnchors(to store: ReadingStore, logger: Logger) {
        guard let changed = corrections.takeChanged() else { return }
        do {
            try store.setDeviceState(try JSONEncoder().encode(changed), for: ReadingStore.DeviceStateKey.wallClockAnchors)
        } catch {
            logger.warning("wall clock anchors not saved", metadata: ["store.error": "\(error)"])
        }
    }

    static func systemNow(bootID: String, wallOffset: WallClockOffsetFile?) -> ReadingTimestamp {
        var boot = timespec()
        clock_gettime(CLOCK_BOOTTIME, &boot)
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let mono = UInt64(max(0, boot.tv_sec)) * 1_000_000_000 + UInt64(max(0, boot.tv_nsec))
        let wallMilliseconds = Int64(wall.tv_sec) * 1000 + Int64(wall.tv_nsec) / 1_000_000 + (wallOffset?.milliseconds(now: mono) ?? 0)
        return ReadingTimestamp(
            monotonicNanoseconds: mono,
            bootID: bootID,
            wallClockMilliseconds: wallMilliseconds,
            wallClockTrusted: Self.wallClockSynchronised()
        )
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

/// A file holding a number of seconds (`31536000`, `-31536000`, `0`) added to the system wall
/// clock, read again at most once a second, so that a test or a field rehearsal can move the
/// agent's wall clock mid-run. A missing or unreadable file counts as 0.
final class WallClockOffsetFile: Sendable {
    let path: String
    private let cached = Mutex<(readAt: UInt64, milliseconds: Int64)?>(nil)

    init(path: String) {
        self.path = path
    }

    /// The offset now (`monotonic` is the caller's monotonic time, in ns, for the cache).
    func milliseconds(now monotonic: UInt64) -> Int64 {
        if let cached = cached.withLock({ $0 }), monotonic &- cached.readAt < 1_000_000_000 { return cached.milliseconds }
        let text = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        let seconds = Double(text) ?? 0
        let value = seconds.isFinite ? Int64((seconds * 1000).rounded()) : 0
        cached.withLock { $0 = (monotonic, value) }
        return value
    }
}

@_silgen_name("adjtimex")
private func systemAdjtimex(_ timex: UnsafeMutableRawPointer) -> Int32

/// The agent's `WallClockCorrection`, shared by the timestamps (which teach it), the sync
/// engine (which applies it to each batch) and the ticker (which saves it when it changed).
final class WallClockAnchors: Sendable {
    private struct State {
        var correction = WallClockCorrection()
        var changed = false
    }

    private let state = Mutex(State())

    func learn(_ timestamp: ReadingTimestamp) {
        state.withLock { s in
            if s.correction.learn(timestamp) { s.changed = true }
        }
    }

    /// Anchors saved by an earlier run (of this boot or others); what this run learned wins.
    func restore(_ saved: WallClockCorrection) {
        state.withLock { s in
            var merged = saved
            for anchor in s.correction.anchors {
                if merged.learn(
                    ReadingTimestamp(
                        monotonicNanoseconds: 0,
                        bootID: anchor.bootID,
                        wallClockMilliseconds: anchor.offsetMilliseconds,
                        wallClockTrusted: true
                    )
                ) {
                    s.changed = true
                }
            }
            merged.noteSent(upTo: s.correction.highestBatchSent)
            s.correction = merged
        }
    }

    /// Batch `batchSequence`'s readings as they are to be sent; anchors that come into force
    /// here are saved by the next `takeChanged`.
    func corrected(_ readings: [WireReading], batchSequence: Int64) -> [WireReading] {
        state.withLock { s in
            let pending = s.correction.anchors.contains { $0.fromBatch == nil }
            let result = s.correction.corrected(readings, batchSequence: batchSequence)
            if pending { s.changed = true }
            return result
        }
    }

    /// The in-flight batches found at start may have been sent before the restart.
    func noteSent(upTo batchSequence: Int64) {
        state.withLock { $0.correction.noteSent(upTo: batchSequence) }
    }

    /// The anchors if they changed since the last call (to be saved), else nil.
    func takeChanged() -> WallClockCorrection? {
        state.withLock { s in
            guard s.changed else { return nil }
            s.changed = false
            return s.correction
        }
    }

    var current: WallClockCorrection { state.withLock { $0.correction } }
}
