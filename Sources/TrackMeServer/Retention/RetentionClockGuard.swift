import TrackMeCore

/// Decides whether the retention job may trust the wall clock now (a sans-I/O struct: the job
/// passes both clocks in).
///
/// Retention deletes what was filed before `now - retention`, so a wall clock set a year ahead
/// would empty the readings table at the next pass. The guard keeps a trusted wall time (in the
/// database, so it survives a restart) and the monotonic time it was trusted at; the wall clock
/// is trusted while it stays within `tolerance` ahead of `trusted + monotonic elapsed`. A wall
/// clock behind that is accepted (deleting less is safe). After a restart there is no monotonic
/// link to the trusted time, so a forward gap up to `maxRestartGap` is taken as down time.
/// A refusal holds until the clock comes back, or until it has stayed ahead for `acceptAfter`
/// of monotonic time (then the operator has had that long of `/health` and metrics saying so).
struct RetentionClockGuard: Sendable {
    enum Decision: Hashable, Sendable {
        /// Act with this wall time, and persist it as the new trusted time.
        case act(wallMilliseconds: Int64)
        /// Do nothing: the wall clock is this far ahead of the trusted time.
        case refuse(aheadMilliseconds: Int64)
    }

    var tolerance: Duration = .seconds(600)
    var maxRestartGap: Duration = .seconds(7 * 86_400)
    var acceptAfter: Duration = .seconds(7 * 86_400)

    private var trusted: (wall: Int64, monotonic: Duration)
    private var refusingSince: Duration?
    /// True until the first decision after a start from a trusted time persisted by an earlier
    /// run (no monotonic link to it).
    private var restarted: Bool

    /// - Parameters:
    ///   - trustedWall: the trusted time persisted by an earlier run (`restarted` true), or the
    ///     wall clock at the first start.
    init(trustedWall: Int64, restarted: Bool, monotonicNow: Duration) {
        trusted = (trustedWall, monotonicNow)
        self.restarted = restarted
    }

    mutating func decide(wallMilliseconds wall: Int64, monotonicNow: Duration) -> Decision {
        let elapsed = (monotonicNow - trusted.monotonic).milliseconds
        let allowance = (restarted ? maxRestartGap : tolerance).milliseconds
        let ahead = wall - (trusted.wall + elapsed)
        if ahead <= allowance {
            self.trusted = (wall, monotonicNow)
            restarted = false
            refusingSince = nil
            return .act(wallMilliseconds: wall)
        }
        let since = refusingSince ?? monotonicNow
        refusingSince = since
        if monotonicNow - since >= acceptAfter {
            self.trusted = (wall, monotonicNow)
            restarted = false
            refusingSince = nil
            return .act(wallMilliseconds: wall)
        }
        return .refuse(aheadMilliseconds: ahead)
    }
}
