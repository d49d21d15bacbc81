import Foundation
import TrackMeCore

/// Where a run's trace time sits on the wall clock: the one value the server's wall clock, the
/// devices' timestamps and (when people watch) the pacing all read, so they cannot disagree.
///
/// A run nobody watches sits at a fixed date, so the same seed gives the same report. A watched
/// run (`--serve`) sits at the present from the moment it starts, and goes at real time, so every
/// age and time a page works out from the browser's clock is true.
struct WallAnchor: Sendable {
    /// Wall time (ms since 1970) of trace millisecond 0.
    let origin: Int64
    /// The real instant of trace millisecond 0, for a run anchored at the present.
    private let start: ContinuousClock.Instant?

    /// 2026-11-21T00:00:00Z.
    static let fixed = WallAnchor(origin: 1_795_219_200_000, start: nil)

    /// Trace millisecond `ms` is now: on the wall clock and in real time.
    static func present(atTraceMilliseconds ms: Int64) -> WallAnchor {
        let instant = ContinuousClock.now
        let wall = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        return WallAnchor(origin: wall - ms, start: instant.advanced(by: .milliseconds(-ms)))
    }

    /// Whether the run is anchored at the present (and so paced in real time).
    var isPresent: Bool { start != nil }

    /// The wall time of trace millisecond `ms`.
    func wall(_ ms: Int64) -> Int64 { origin + ms }

    /// The real instant trace millisecond `ms` is due at, for a run anchored at the present.
    func instant(ofTraceMilliseconds ms: Int64) -> ContinuousClock.Instant? {
        start?.advanced(by: .milliseconds(ms))
    }

    /// A reading time at trace millisecond `ms`. Monotonic time starts 10 s before the trace, as
    /// if the agent had been up a little while.
    func timestamp(_ ms: Int64) -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(max(0, ms + 10_000)) * 1_000_000,
            bootID: ScenarioRunner.bootID,
            wallClockMilliseconds: wall(ms),
            wallClockTrusted: true
        )
    }

    /// The true wall time of a reading stamped by `timestamp(_:)` (whatever its wall clock said).
    func trueWallMilliseconds(_ timestamp: ReadingTimestamp) -> Int64 {
        wall(Int64(timestamp.monotonicNanoseconds / 1_000_000) - 10_000)
    }
}
