/// What in the strap's stream points to a lethal rhythm (ventricular fibrillation or flutter,
/// sustained ventricular tachycardia) when the averaged bpm does not. During VF there are no QRS
/// complexes and a strap's R-wave detector sees silence (the no-pulse rule), fast garbage, or
/// sparse beats; each signal below catches one of those shapes. Reasons and sources in
/// `simulations/SOS-RULES.md`.
public enum RhythmSignal: String, Hashable, Sendable, Codable, CaseIterable {
    /// Most of the last seconds above the maximum, with irregular intervals: a detector counting
    /// fibrillation waves (150-300 "bpm" in bursts with dips).
    case fastIrregular = "fast_irregular"
    /// A fast rhythm whose intervals jump at random, neither sinus (smooth) nor bigeminy (a
    /// strict short-long alternation): a detector catching some of the waves of VT or VF.
    case erratic
    /// Several gaps of seconds without a beat, with erratic beats between them: a detector that
    /// catches only a few fibrillation waves.
    case dropouts
    /// The rate leaps within seconds from a steady baseline to a fast one: the onset of VT (or
    /// another tachycardia), unlike the gradual rise of exercise.
    case suddenTachycardia = "sudden_tachycardia"
    /// A run of beats much shorter than the person's own recent intervals: a salvo of
    /// ventricular beats.
    case ventricularBurst = "ventricular_burst"
    /// Consecutive beat intervals longer than the minimum rate allows: extreme bradycardia
    /// counted in beats, before the strap's averaged bpm follows.
    case slowBeats = "slow_beats"
    /// Most of the last beats faster than the maximum rate: extreme tachycardia counted in
    /// beats, through the strap's missed and doubled detections.
    case fastBeats = "fast_beats"
    /// The wearer, who was moving, stopped dead while one of the signals above was building up:
    /// the pattern of a collapse. It shortens the wait; it is never required.
    case stoppedMoving = "stopped_moving"
}

/// The signals' thresholds. A signal whose setting is nil is off.
public struct RhythmSettings: Hashable, Sendable {
    public struct FastIrregular: Hashable, Sendable {
        /// The seconds looked at, and at least this many readings with contact in them.
        public var window: Duration = .seconds(20)
        public var minimumReadings = 15
        /// The share of those readings above the person's maximum.
        public var shareAboveMaximum = 0.6
        /// At least half of the successive RR differences exceed this (the median does).
        public var irregularMilliseconds = 50
    }

    public struct Erratic: Hashable, Sendable {
        public var window: Duration = .seconds(30)
        public var minimumBeats = 12
        /// A successive difference above this is a jump.
        public var jumpMilliseconds = 120
        /// The share of successive differences, and of differences two beats apart, that jump.
        /// Both must reach it: bigeminy jumps at every beat but repeats every second one.
        public var jumpShare = 0.35
        /// The mean rate of the window's beats, bpm.
        public var minimumRate = 100
        /// Below this share of beats within `dominantTolerance` of one interval: no organised
        /// rhythm underneath. Frequent extrasystoles jump as often, but most beats keep the
        /// underlying interval.
        public var dominantShare = 0.6
        public var dominantTolerance = 0.1
        /// How long the condition must hold before the signal fires.
        public var hold: Duration = .seconds(35)
        /// The hold when the wearer stopped dead meanwhile (`stoppedMoving`).
        public var holdWhenStopped: Duration = .seconds(5)
    }

    public struct Dropouts: Hashable, Sendable {
        public var window: Duration = .seconds(30)
        /// At least this many RR intervals of `gapMilliseconds` or more in the window.
        public var gaps = 2
        public var gapMilliseconds = 3_000
        /// At least half of the successive differences of the other intervals exceed this.
        public var irregularMilliseconds = 150
    }

    public struct SuddenTachycardia: Hashable, Sendable {
        /// The last `readings` readings are all at least `ratio` times the median of the readings
        /// before them in `window`, and at least `minimumRate`. Five readings at 140 bpm or more
        /// are 12 beats or more, the number of fast intervals a defibrillator counts before it
        /// calls VT; a rise of 40 % within seconds (intervals 29 % shorter) is the "sudden onset"
        /// that tells VT from sinus tachycardia, whose rise in exercise takes half a minute or
        /// more. 140 bpm: the extreme-tachycardia limit of the PhysioNet/CinC 2015 alarms.
        public var readings = 5
        public var window: Duration = .seconds(30)
        public var ratio = 1.4
        public var minimumRate = 140
        /// Readings above this are corrupt (`SOSSettings.absurdBPM`), not a rate that leapt.
        public var maximumRate = 250
    }

    public struct VentricularBurst: Hashable, Sendable {
        /// The last `beats` intervals are each at most `ratio` of the median interval of the
        /// window before them and at most `maximumMilliseconds` (100 bpm, the rate that defines
        /// VT), and the longest within `regularity` of the shortest: a salvo of ventricular beats
        /// is fast and roughly even (a detector at 1 Hz sees its intervals vary by a third or
        /// more), while artefact spikes mix very short and normal intervals.
        public var beats = 3
        public var window: Duration = .seconds(30)
        public var minimumBeats = 15
        public var ratio = 0.8
        public var maximumMilliseconds = 600
        public var regularity = 0.5
    }

    public struct SlowBeats: Hashable, Sendable {
        /// This many consecutive intervals slower than the minimum rate.
        public var beats = 3
    }

    public struct FastBeats: Hashable, Sendable {
        /// At least `fast` of the last `beats` intervals are shorter than the maximum rate
        /// allows. Most, not all: a strap that misses a beat reports one interval twice as long,
        /// and one that counts a T wave splits one in two, so a tachycardia seen through it still
        /// has most of its intervals short; bigeminy at a normal rate (short, long, short, ...)
        /// has half.
        public var beats = 17
        public var fast = 12
    }

    /// Judges whether the recent beats can be trusted to time a rhythm: an interval shorter than
    /// `shortestMilliseconds` (240 bpm) in `window` is faster than any organised rhythm a
    /// ventricular burst or a tachycardia counted in beats is about, so the detector counted
    /// something that was not a beat (a T wave, a spike, a wide complex twice). The signals it
    /// gates (`ventricularBurst`, `fastBeats`) stay quiet then; the averaged-bpm rules and the
    /// fibrillation signals, whose waves are that fast, are not gated.
    public struct NoiseGate: Hashable, Sendable {
        public var window: Duration = .seconds(30)
        public var shortestMilliseconds = 250
    }

    public struct Motion: Hashable, Sendable {
        /// Speeds (m/s, from gpsd) at or above this count as moving.
        public var movingSpeed = 1.0
        /// At or below this, standing still.
        public var stillSpeed = 0.3
        /// The wearer moved within this long before stopping.
        public var recentlyMoving: Duration = .seconds(60)
        /// Still for at least this long.
        public var stillFor: Duration = .seconds(3)
    }

    public var fastIrregular: FastIrregular? = FastIrregular()
    public var erratic: Erratic? = Erratic()
    public var dropouts: Dropouts? = Dropouts()
    public var suddenTachycardia: SuddenTachycardia? = SuddenTachycardia()
    public var ventricularBurst: VentricularBurst?
    public var slowBeats: SlowBeats?
    public var fastBeats: FastBeats?
    public var noiseGate: NoiseGate?
    public var motion: Motion? = Motion()

    public init() {}

    /// Every signal off: the rules see only the averaged bpm, contact and no-beat windows.
    public static var none: RhythmSettings {
        var settings = RhythmSettings()
        settings.fastIrregular = nil
        settings.erratic = nil
        settings.dropouts = nil
        settings.suddenTachycardia = nil
        settings.ventricularBurst = nil
        settings.slowBeats = nil
        settings.fastBeats = nil
        return settings
    }
}

protocol Timed: Hashable, Sendable {
    var nanos: Int64 { get }
}

/// The lethal-rhythm signals over the last half minute of one strap's notifications: feed it
/// every reading with contact (and every position), ask it which signal holds. Pure; keeps fixed
/// rings of the recent readings and beat intervals, so a reading costs a scan of a few dozen
/// values and no allocation.
public struct RhythmWatch: Hashable, Sendable {
    struct Entry: Timed {
        var nanos: Int64
        var bpm: Int
    }

    struct Beat: Timed {
        var nanos: Int64
        var milliseconds: Int
    }

    static let entryCapacity = 64
    static let beatCapacity = 256

    private var entries: [Entry] = []
    private var entryNext = 0
    private var beats: [Beat] = []
    private var beatNext = 0
    /// Reused for medians, so that no reading allocates.
    private var scratch: [Int] = []
    private var erraticSince: Int64?
    private var lastMovingNanos: Int64?
    private var stillSinceNanos: Int64?

    public init() {
        entries.reserveCapacity(Self.entryCapacity)
        beats.reserveCapacity(Self.beatCapacity)
        scratch.reserveCapacity(Self.beatCapacity)
    }

    /// Forgets the rhythm (the link dropped, contact was lost, monitoring paused): what comes
    /// next is not continuous with what came before. Motion is kept.
    public mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        entryNext = 0
        beats.removeAll(keepingCapacity: true)
        beatNext = 0
        erraticSince = nil
    }

    /// A position report: its speed, when it has one, tells whether the wearer moves.
    public mutating func position(speed: Double?, nanos: Int64, settings: RhythmSettings) {
        guard let speed, speed.isFinite, let motion = settings.motion else { return }
        if speed >= motion.movingSpeed {
            lastMovingNanos = nanos
            stillSinceNanos = nil
        } else if speed <= motion.stillSpeed {
            if stillSinceNanos == nil { stillSinceNanos = nanos }
        } else {
            stillSinceNanos = nil
        }
    }

    /// Adds a reading and returns the signal that holds now, if any (the gravest first).
    /// `beatMilliseconds` are the reading's RR intervals already judged plausible.
    public mutating func receive(
        bpm: Int,
        beatMilliseconds: [Int],
        nanos: Int64,
        limits: HeartRateLimits,
        settings: RhythmSettings
    ) -> RhythmSignal? {
        append(Entry(nanos: nanos, bpm: bpm))
        for milliseconds in beatMilliseconds { append(Beat(nanos: nanos, milliseconds: milliseconds)) }

        if let s = settings.fastIrregular, fastIrregular(s, now: nanos, maximum: limits.maximum) { return .fastIrregular }
        if let s = settings.dropouts, dropouts(s, now: nanos) { return .dropouts }
        if let s = settings.erratic {
            if erratic(s, now: nanos) {
                let since = erraticSince ?? nanos
                erraticSince = since
                if nanos - since >= s.hold.nanoseconds { return .erratic }
                if nanos - since >= s.holdWhenStopped.nanoseconds, stoppedMoving(settings, now: nanos, since: since) {
                    return .stoppedMoving
                }
            } else {
                erraticSince = nil
            }
        }
        if let s = settings.suddenTachycardia, suddenTachycardia(s, now: nanos) { return .suddenTachycardia }
        if let s = settings.ventricularBurst, ventricularBurst(s, now: nanos), !noisy(settings.noiseGate, now: nanos) {
            return .ventricularBurst
        }
        if let s = settings.slowBeats, slowBeats(s, minimum: limits.minimum) { return .slowBeats }
        if let s = settings.fastBeats, fastBeats(s, maximum: limits.maximum), !noisy(settings.noiseGate, now: nanos) { return .fastBeats }
        return nil
    }

    // MARK: - Signals
    // The ring walks go newest first; every measure below is symmetric in time (absolute
    // differences, counts, medians), so the order does not matter.

    private func fastIrregular(_ s: RhythmSettings.FastIrregular, now: Int64, maximum: Int) -> Bool {
        let start = now - s.window.nanoseconds
        var count = 0
        var above = 0
        forEachEntry(after: start) { entry in
            count += 1
            if entry.bpm > maximum { above += 1 }
        }
        guard count >= s.minimumReadings, Double(above) >= s.shareAboveMaximum * Double(count) else { return false }
        var differences = 0
        var large = 0
        var previous: Int?
        forEachBeat(after: start) { beat in
            if let previous {
                differences += 1
                if abs(beat.milliseconds - previous) >= s.irregularMilliseconds { large += 1 }
            }
            previous = beat.milliseconds
            return true
        }
        return differences > 0 && 2 * large >= differences
    }

    private mutating func erratic(_ s: RhythmSettings.Erratic, now: Int64) -> Bool {
        let start = now - s.window.nanoseconds
        var count = 0
        var sum = 0
        var jumps = 0
        var jumpsTwoApart = 0
        var previous: Int?
        var beforePrevious: Int?
        forEachBeat(after: start) { beat in
            let value = beat.milliseconds
            count += 1
            sum += value
            if let previous, abs(value - previous) > s.jumpMilliseconds { jumps += 1 }
            if let beforePrevious, abs(value - beforePrevious) > s.jumpMilliseconds { jumpsTwoApart += 1 }
            beforePrevious = previous
            previous = value
            return true
        }
        guard count >= s.minimumBeats, count >= 3, sum > 0 else { return false }
        let rate = 60_000 * count / sum
        guard
            rate >= s.minimumRate && Double(jumps) >= s.jumpShare * Double(count - 1)
                && Double(jumpsTwoApart) >= s.jumpShare * Double(count - 2)
        else { return false }
        var intervals = takeScratch()
        defer { scratch = intervals }
        forEachBeat(after: start) { beat in
            intervals.append(beat.milliseconds)
            return true
        }
        return Double(Self.dominantCount(&intervals, tolerance: s.dominantTolerance)) < s.dominantShare * Double(count)
    }

    /// The most beats whose intervals lie within `tolerance` (a fraction) of one of them.
    private static func dominantCount(_ values: inout [Int], tolerance: Double) -> Int {
        values.sort()
        var best = 0
        var low = 0
        var high = 0
        for center in values.indices {
            let value = Double(values[center])
            while Double(values[low]) < value * (1 - tolerance) { low += 1 }
            if high < center { high = center }
            while high + 1 < values.count, Double(values[high + 1]) <= value * (1 + tolerance) { high += 1 }
            best = max(best, high - low + 1)
        }
        return best
    }

    private func dropouts(_ s: RhythmSettings.Dropouts, now: Int64) -> Bool {
        let start = now - s.window.nanoseconds
        var gaps = 0
        var differences = 0
        var large = 0
        var previous: Int?
        forEachBeat(after: start) { beat in
            if beat.milliseconds >= s.gapMilliseconds {
                gaps += 1
                return true
            }
            if let previous {
                differences += 1
                if abs(beat.milliseconds - previous) >= s.irregularMilliseconds { large += 1 }
            }
            previous = beat.milliseconds
            return true
        }
        return gaps >= s.gaps && differences > 0 && 2 * large >= differences
    }

    private mutating func suddenTachycardia(_ s: RhythmSettings.SuddenTachycardia, now: Int64) -> Bool {
        let start = now - s.window.nanoseconds
        var baseline = takeScratch()
        defer { scratch = baseline }
        var recentMinimum = Int.max
        var recentMaximum = 0
        var index = 0
        forEachEntry(after: start) { entry in
            if index < s.readings {
                recentMinimum = min(recentMinimum, entry.bpm)
                recentMaximum = max(recentMaximum, entry.bpm)
            } else if entry.bpm > 0 {
                baseline.append(entry.bpm)
            }
            index += 1
        }
        guard index >= s.readings, baseline.count >= 10, recentMinimum >= s.minimumRate, recentMaximum <= s.maximumRate else {
            return false
        }
        return Double(recentMinimum) >= s.ratio * Double(Self.median(&baseline))
    }

    private mutating func ventricularBurst(_ s: RhythmSettings.VentricularBurst, now: Int64) -> Bool {
        let start = now - s.window.nanoseconds
        var before = takeScratch()
        defer { scratch = before }
        var shortest = Int.max
        var longest = 0
        var index = 0
        forEachBeat(after: start) { beat in
            if index < s.beats {
                shortest = min(shortest, beat.milliseconds)
                longest = max(longest, beat.milliseconds)
            } else {
                before.append(beat.milliseconds)
            }
            index += 1
            return true
        }
        guard index >= s.minimumBeats, index > s.beats, longest <= s.maximumMilliseconds else { return false }
        guard Double(longest) <= (1 + s.regularity) * Double(shortest) else { return false }
        return Double(longest) <= s.ratio * Double(Self.median(&before))
    }

    private func slowBeats(_ s: RhythmSettings.SlowBeats, minimum: Int) -> Bool {
        guard minimum > 0 else { return false }
        let slowest = 60_000 / minimum
        var count = 0
        forEachBeat(after: Int64.min) { beat in
            guard beat.milliseconds >= slowest else { return false }
            count += 1
            return count < s.beats
        }
        return count >= s.beats
    }

    private func fastBeats(_ s: RhythmSettings.FastBeats, maximum: Int) -> Bool {
        guard maximum > 0, s.beats > 0 else { return false }
        var count = 0
        var fast = 0
        forEachBeat(after: Int64.min) { beat in
            count += 1
            // Faster than the maximum: interval < 60 000 / maximum ms, in integers.
            if beat.milliseconds * maximum < 60_000 { fast += 1 }
            return count < s.beats
        }
        return count >= s.beats && fast >= s.fast
    }

    private func noisy(_ gate: RhythmSettings.NoiseGate?, now: Int64) -> Bool {
        guard let gate else { return false }
        var found = false
        forEachBeat(after: now - gate.window.nanoseconds) { beat in
            if beat.milliseconds < gate.shortestMilliseconds { found = true }
            return !found
        }
        return found
    }

    private func stoppedMoving(_ settings: RhythmSettings, now: Int64, since: Int64) -> Bool {
        guard let motion = settings.motion, let still = stillSinceNanos, let moving = lastMovingNanos else { return false }
        // Moving shortly before the rhythm turned, and still since, for long enough.
        return now - still >= motion.stillFor.nanoseconds && since - moving <= motion.recentlyMoving.nanoseconds
            && still >= moving
    }

    // MARK: - Rings

    private mutating func append(_ entry: Entry) {
        Self.push(entry, into: &entries, next: &entryNext, capacity: Self.entryCapacity)
    }

    private mutating func append(_ beat: Beat) {
        Self.push(beat, into: &beats, next: &beatNext, capacity: Self.beatCapacity)
    }

    /// Adds `element` to a fixed ring, over its oldest once full.
    private static func push<T>(_ element: T, into ring: inout [T], next: inout Int, capacity: Int) {
        if ring.count < capacity { ring.append(element) } else { ring[next] = element }
        next = (next + 1) % capacity
    }

    private mutating func takeScratch() -> [Int] {
        var taken: [Int] = []
        swap(&taken, &scratch)
        taken.removeAll(keepingCapacity: true)
        return taken
    }

    /// Calls `body` for each entry taken after `start`, newest first.
    private func forEachEntry(after start: Int64, _ body: (Entry) -> Void) {
        Self.walk(entries, next: entryNext, capacity: Self.entryCapacity, after: start) { entry in
            body(entry)
            return true
        }
    }

    /// Calls `body` for each beat after `start`, newest first, until it returns false.
    private func forEachBeat(after start: Int64, _ body: (Beat) -> Bool) {
        Self.walk(beats, next: beatNext, capacity: Self.beatCapacity, after: start, body)
    }

    private static func walk<T: Timed>(_ ring: [T], next: Int, capacity: Int, after start: Int64, _ body: (T) -> Bool) {
        let count = ring.count
        guard count > 0 else { return }
        let newest = count < capacity ? count - 1 : (next + capacity - 1) % capacity
        for offset in 0..<count {
            let element = ring[(newest - offset + count) % count]
            if element.nanos <= start || !body(element) { return }
        }
    }

    private static func median(_ values: inout [Int]) -> Int {
        values.sort()
        let n = values.count
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2
    }
}
