/// How far a runner has run and when they finished, counted along their own fixes, one fix at a
/// time. Pure: the store keeps what it needs between fixes (the last accepted fix, the running
/// total, a fix held back as a possible jump), so a fix costs one great-circle step whatever the
/// course or the track's length, and a course that uses one street twice (out and back, laps)
/// cannot place anyone on the wrong pass.
enum RaceProgress {
    /// Faster than this between two fixes is a GPS jump, not running: the fastest 100 m ever run
    /// averages 10.4 m/s and peaks at 12.4 m/s for a stride or two, and a distance race's pace
    /// is under 6.5 m/s; at 12 m/s no runner is ever cut, while a reflected or cold-started fix
    /// (hundreds of metres in a second) always is.
    static let maximumSpeedMetresPerSecond = 12.0
    /// What two fixes of a consumer receiver may disagree by standing still (each is good to
    /// about 5-10 m): a step within it is never called a jump, however short the interval.
    static let fixErrorMetres = 25.0
    /// A runner with no newer fix than this is shown as stale: their watch samples at 1 Hz and
    /// the agent sends each second, so a fix is normally 1-3 s old on the page; 10 s is three
    /// times that, past a lost send or two, and a frozen or lost GPS shows within 10 s.
    static let staleAfterMilliseconds: Int64 = 10_000

    /// What the store keeps of a runner between fixes.
    struct State: Hashable, Sendable {
        /// The last fix counted or taken as the runner's place (what is shown).
        var fix: RaceIngest.Fix?
        /// Metres counted since the start (or the runner's later check-in).
        var distanceMetres: Double?
        /// When the counted distance reached the race distance.
        var finishMilliseconds: Int64?
        /// A fix too far from `fix` to be run: a jump, unless the next fix agrees with it
        /// rather than with `fix` (then `fix` was the bad one, and the runner goes on from it).
        var held: RaceIngest.Fix?
    }

    /// The state after one fix newer than `state.fix`; counting starts at `countFrom`, and the
    /// finish is the moment (interpolated between the two fixes) the total reaches `raceMetres`.
    static func advance(_ state: State, with next: RaceIngest.Fix, countFrom: Int64, raceMetres: Double) -> State {
        var state = state
        guard var last = state.fix else {
            state.fix = next
            if next.milliseconds >= countFrom { state.distanceMetres = state.distanceMetres ?? 0 }
            return state
        }
        guard next.milliseconds > last.milliseconds else { return state }
        var step = distance(last, next)
        if !isRunnable(step, from: last, to: next) {
            guard let held = state.held, next.milliseconds > held.milliseconds, isRunnable(distance(held, next), from: held, to: next) else {
                state.held = next
                return state
            }
            // Two fixes agree with each other and not with the one kept: that one was the odd
            // one out. The runner goes on from the held fix, nothing counted across the
            // disagreement.
            last = held
            step = distance(held, next)
        }
        state.held = nil
        state.fix = next
        guard next.milliseconds > countFrom else { return state }
        // A step across the start counts only its part after it.
        let from = max(last.milliseconds, countFrom)
        let counted = step * Double(next.milliseconds - from) / Double(next.milliseconds - last.milliseconds)
        let before = state.distanceMetres ?? 0
        let after = before + counted
        state.distanceMetres = after
        if state.finishMilliseconds == nil, after >= raceMetres, counted > 0 {
            let fraction = max(0, raceMetres - before) / counted
            state.finishMilliseconds = from + Int64((Double(next.milliseconds - from) * fraction).rounded(.up))
        }
        return state
    }

    static func isRunnable(_ metres: Double, from: RaceIngest.Fix, to: RaceIngest.Fix) -> Bool {
        metres <= maximumSpeedMetresPerSecond * Double(to.milliseconds - from.milliseconds) / 1000 + fixErrorMetres
    }

    static func distance(_ a: RaceIngest.Fix, _ b: RaceIngest.Fix) -> Double {
        RunPath.distance([a.latitude, a.longitude], [b.latitude, b.longitude])
    }

    /// Seconds since the runner's shown fix, by the server's clock (never negative), and whether
    /// that makes them stale.
    static func age(fixMilliseconds: Int64?, now: Int64) -> (seconds: Double, stale: Bool)? {
        guard let fixMilliseconds else { return nil }
        let age = max(0, now - fixMilliseconds)
        return ((Double(age) / 100).rounded() / 10, age > staleAfterMilliseconds)
    }
}
