import Foundation
import Testing
import TrackMeCore

/// The lethal-rhythm signals on synthetic RR sequences: each fires on the shape it is for, and
/// the shapes of a healthy or merely arrhythmic heart (exercise, bigeminy, sinus pauses) stay
/// quiet. Defaults: age 60, so the maximum is 166 bpm.
@Suite struct LethalRhythmRuleTests {
    /// A fixed pseudo-random sequence, so every run sees the same "chaos".
    struct Chaos {
        var state: UInt64
        mutating func next(_ range: ClosedRange<Int>) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let span = UInt64(range.upperBound - range.lowerBound + 1)
            return range.lowerBound + Int((state >> 33) % span)
        }
    }

    /// Feeds one notification per second: each with the beats `beats(second)` returns and the
    /// strap's averaged bpm over the last four intervals (as a strap computes it).
    static func feed(
        _ h: inout SOSHarness,
        from: Int64,
        seconds: Int,
        beats: (Int) -> [Int],
        position: ((Int) -> Double?)? = nil
    ) {
        var lastIntervals: [Int] = []
        for second in 0..<seconds {
            let t = from + Int64(second) * 1000
            if let speed = position?(second) {
                h.send(.position(PositionFix(mode: .threeDimensional, latitude: 45.46, longitude: 9.19, speed: speed)), at: t)
            }
            let rr = beats(second)
            lastIntervals = Array((lastIntervals + rr).suffix(4))
            let bpm = lastIntervals.isEmpty ? 0 : 60_000 * lastIntervals.count / max(1, lastIntervals.reduce(0, +))
            let reading = HeartRateReading(bpm: bpm, contact: .detected, rrIntervals: rr.map(HeartRateReading.rrUnits(fromMilliseconds:)))
            h.send(.heartRate(reading), at: t)
            for tick in stride(from: t + 250, to: t + 1000, by: 250) { h.send(.tick, at: tick) }
        }
    }

    /// Beats of `rr` ms laid out over the seconds: the intervals that end in second `s`.
    static func laidOut(_ rr: [Int]) -> [Int: [Int]] {
        var bySecond: [Int: [Int]] = [:]
        var clock = 0
        for interval in rr {
            clock += interval
            bySecond[clock / 1000, default: []].append(interval)
        }
        return bySecond
    }

    static func raisedLethal(_ h: SOSHarness) -> (ms: Int64, record: AlertRecord)? {
        h.all(\.raised).first { $0.record.kind == .lethalRhythm }
    }

    // MARK: fast and irregular (a detector counting fibrillation waves)

    /// A minute of 150-300 "bpm" in bursts, every fifth second a dip under the maximum: the 30 s
    /// unbroken run that heart_rate_high needs never happens.
    static func feedFibrillationCountedAsBeats(_ h: inout SOSHarness, from: Int64) {
        var chaos = Chaos(state: 7)
        var rr: [Int] = []
        while rr.reduce(0, +) < 60_000 { rr.append(chaos.next(190...400)) }
        let bySecond = laidOut(rr)
        feed(&h, from: from, seconds: 60, beats: { s in s % 5 == 4 ? [600] : bySecond[s] ?? [] })
    }

    /// The wearable defaults with the onset signal off, so that the window's own signal is seen
    /// (the jump from 75 bpm into fibrillation is also a sudden tachycardia).
    static var withoutOnset: SOSSettings {
        var settings = SOSSettings()
        settings.rhythm.suddenTachycardia = nil
        return settings
    }

    @Test func fastIrregularBurstsWithDipsFireWithinTheWindow() throws {
        var h = SOSHarness(settings: Self.withoutOnset)
        Self.feed(&h, from: 0, seconds: 30, beats: { _ in [800] })
        Self.feedFibrillationCountedAsBeats(&h, from: 30_000)
        let alert = try #require(Self.raisedLethal(h))
        #expect(alert.record.reason == RhythmSignal.fastIrregular.rawValue)
        #expect(alert.ms <= 30_000 + 25_000, "within the 20 s window and a few seconds of onset")
        #expect(!h.all(\.raised).contains { $0.record.kind == .heartRateHigh })
    }

    @Test func fastIrregularIsOffWithoutTheSignal() {
        var settings = Self.withoutOnset
        settings.rhythm.fastIrregular = nil
        settings.rhythm.erratic = nil
        var h = SOSHarness(settings: settings)
        Self.feed(&h, from: 0, seconds: 30, beats: { _ in [800] })
        Self.feedFibrillationCountedAsBeats(&h, from: 30_000)
        #expect(Self.raisedLethal(h) == nil, "the case above fails without the rule")
    }

    // MARK: erratic (a detector catching some of the waves)

    static func erraticIntervals(seed: UInt64, seconds: Int) -> [Int: [Int]] {
        var chaos = Chaos(state: seed)
        var rr: [Int] = []
        while rr.reduce(0, +) < seconds * 1000 { rr.append([380, 400, 580, 600, 450, 700][chaos.next(0...5)] + chaos.next(-20...20)) }
        return laidOut(rr)
    }

    @Test func erraticTachycardiaUnderTheMaximumFiresAfterItsHold() throws {
        var h = SOSHarness()
        Self.feed(&h, from: 0, seconds: 60, beats: { _ in [850] })
        let bySecond = Self.erraticIntervals(seed: 3, seconds: 90)
        Self.feed(&h, from: 60_000, seconds: 90, beats: { bySecond[$0] ?? [] })
        let alert = try #require(Self.raisedLethal(h))
        #expect(alert.record.reason == RhythmSignal.erratic.rawValue)
        // The window fills (about 30 s), then the 35 s hold; well inside a minute of onset plus the window.
        #expect(alert.ms > 60_000 + 35_000)
        #expect(alert.ms <= 60_000 + 70_000)
        #expect(h.all(\.countdown).isEmpty, "a lethal rhythm is raised at once")
    }

    @Test func wearerWhoStopsDeadShortensTheHold() throws {
        var h = SOSHarness()
        // Walking at 1.4 m/s, then still from the onset of the erratic rhythm.
        Self.feed(&h, from: 0, seconds: 60, beats: { _ in [600] }, position: { _ in 1.4 })
        let bySecond = Self.erraticIntervals(seed: 3, seconds: 90)
        Self.feed(&h, from: 60_000, seconds: 90, beats: { bySecond[$0] ?? [] }, position: { _ in 0.0 })
        let alert = try #require(Self.raisedLethal(h))
        #expect(alert.record.reason == RhythmSignal.stoppedMoving.rawValue)

        var still = SOSHarness()
        Self.feed(&still, from: 0, seconds: 60, beats: { _ in [600] })
        Self.feed(&still, from: 60_000, seconds: 90, beats: { bySecond[$0] ?? [] })
        let unwitnessed = try #require(Self.raisedLethal(still))
        #expect(alert.ms + 20_000 <= unwitnessed.ms, "motion shortened the wait by the hold's difference")
    }

    @Test func bigeminyJumpsEveryBeatButRepeatsAndStaysQuiet() {
        var h = SOSHarness()
        // Ventricular bigeminy at 103 bpm: 400, 760, 400, 760 ...
        let bySecond = Self.laidOut(Array(repeating: [400, 760], count: 200).flatMap { $0 })
        Self.feed(&h, from: 0, seconds: 200, beats: { bySecond[$0] ?? [] })
        #expect(h.log.isEmpty)
    }

    @Test func exerciseRampAboveNothingIrregularStaysQuiet() {
        var h = SOSHarness()
        // Ten minutes from 80 to 160 bpm, sinus jitter of +-15 ms: exercise, under the maximum.
        var chaos = Chaos(state: 11)
        var rr: [Int] = []
        while rr.reduce(0, +) < 600_000 {
            let progress = Double(rr.reduce(0, +)) / 600_000
            let bpm = 80 + 80 * progress
            rr.append(Int(60_000 / bpm) + chaos.next(-15...15))
        }
        let bySecond = Self.laidOut(rr)
        Self.feed(&h, from: 0, seconds: 600, beats: { bySecond[$0] ?? [] })
        #expect(h.log.isEmpty)
    }

    @Test func sprintAboveTheMaximumIsOnlyHeartRateHigh() {
        var h = SOSHarness()
        // 120 bpm rising over 30 s to a regular 175 bpm held for 60 s: heart_rate_high's business
        // (30 s above 166), not a lethal rhythm. (A step from 120 to 175 within a beat is what
        // the onset of VT looks like: sudden_tachycardia.)
        var rr: [Int] = []
        var clock = 0
        while clock < 110_000 {
            let seconds = Double(clock) / 1000
            let bpm = seconds < 20 ? 120 : min(175, 120 + 55 * (seconds - 20) / 30)
            rr.append(Int(60_000 / bpm))
            clock += rr[rr.count - 1]
        }
        let bySecond = Self.laidOut(rr)
        Self.feed(&h, from: 0, seconds: 110, beats: { bySecond[$0] ?? [] })
        #expect(Self.raisedLethal(h) == nil)
        #expect(h.all(\.raised).first?.record.kind == .heartRateHigh)
    }

    // MARK: dropouts (a detector catching only a few waves)

    @Test func sparseErraticBeatsWithGapsFire() throws {
        var h = SOSHarness()
        Self.feed(&h, from: 0, seconds: 30, beats: { _ in [900] })
        // Gaps of 3-4 s between short runs of erratic beats; the averaged bpm stays 40-80.
        var chaos = Chaos(state: 5)
        var rr: [Int] = []
        while rr.reduce(0, +) < 60_000 {
            rr.append(chaos.next(3_100...4_200))
            for _ in 0..<3 { rr.append(chaos.next(400...1_300)) }
        }
        let bySecond = Self.laidOut(rr)
        Self.feed(&h, from: 30_000, seconds: 60, beats: { bySecond[$0] ?? [] })
        let alert = try #require(Self.raisedLethal(h))
        #expect(alert.record.reason == RhythmSignal.dropouts.rawValue)
        #expect(alert.ms <= 30_000 + 30_000)
    }

    @Test func sinusPausesBetweenRegularBeatsStayQuiet() {
        var h = SOSHarness()
        // Sick sinus: a 3.5 s pause every 10 s between regular 1 s beats.
        let bySecond = Self.laidOut(Array(repeating: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 3_500], count: 20).flatMap { $0 })
        Self.feed(&h, from: 0, seconds: 180, beats: { bySecond[$0] ?? [] })
        #expect(Self.raisedLethal(h) == nil)
    }

    // MARK: lifecycle

    @Test func aLethalRhythmRaisesTheKindOfAnOpenAlertWithItsReason() throws {
        var settings = SOSSettings()
        settings.manual.countdown = .zero
        var h = SOSHarness(settings: settings)
        Self.feed(&h, from: 0, seconds: 30, beats: { _ in [850] })
        h.send(.manualSOS, at: 30_500)
        #expect(h.all(\.raised).first?.record.kind == .manual)
        let bySecond = Self.erraticIntervals(seed: 3, seconds: 90)
        Self.feed(&h, from: 31_000, seconds: 90, beats: { bySecond[$0] ?? [] })
        let changed = try #require(
            h.log.compactMap { entry -> AlertRecord? in
                if case .kindChanged(let record) = entry.action { return record }
                return nil
            }.first
        )
        #expect(changed.kind == .lethalRhythm)
        #expect(changed.reason == RhythmSignal.erratic.rawValue)
    }

    @Test func aCountdownOnTheRuleCanStillBeCancelled() throws {
        var settings = SOSSettings()
        settings.lethalRhythm.countdown = .seconds(15)
        var h = SOSHarness(settings: settings)
        Self.feed(&h, from: 0, seconds: 60, beats: { _ in [850] })
        let bySecond = Self.erraticIntervals(seed: 3, seconds: 90)
        Self.feed(&h, from: 60_000, seconds: 70, beats: { bySecond[$0] ?? [] })
        let countdown = try #require(h.first(\.countdown))
        #expect(countdown.record.kind == .lethalRhythm)
        h.send(.cancel(.falseAlarm), at: countdown.ms + 1_000)
        #expect(Self.raisedLethal(h) == nil)
        #expect(h.engine.openAlert == nil)
    }

    // MARK: bedside profile

    @Test func bedsideCountsExtremeBradycardiaInBeats() throws {
        var h = SOSHarness(settings: SOSSettings(profile: .bedside))
        // Three intervals of 1.7 s after regular 0.9 s ones (one feed, so the strap's 4-beat
        // average carries over): below 40 bpm for the beats, before the average falls under 40.
        let slowing: (Int) -> [Int] = { s in s < 30 ? [900] : ((s - 30) % 2 == 1 ? [1_700] : []) }
        Self.feed(&h, from: 0, seconds: 36, beats: slowing)
        let alert = try #require(h.all(\.raised).first)
        #expect(alert.record.kind == .heartRateLow)
        #expect(alert.record.reason == RhythmSignal.slowBeats.rawValue, "\(h.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })")

        var wearable = SOSHarness()
        Self.feed(&wearable, from: 0, seconds: 36, beats: slowing)
        #expect(wearable.all(\.raised).isEmpty, "the wearable profile waits for the averaged bpm")
    }

    @Test func bedsideSeesASuddenTachycardiaWithinSeconds() throws {
        var h = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&h, from: 0, seconds: 40, beats: { _ in [700] })
        Self.feed(&h, from: 40_000, seconds: 6, beats: { _ in [380, 380] })
        let alert = try #require(h.all(\.raised).first)
        #expect(alert.record.kind == .lethalRhythm)
        #expect(alert.ms <= 42_000, "a salvo of short beats after a steady baseline, within two notifications")
        #expect(HeartRateLimits(profile: PersonProfile(name: "p", age: 60), defaultMaximum: 140).maximum == 140)

        var wearable = SOSHarness()
        Self.feed(&wearable, from: 0, seconds: 40, beats: { _ in [700] })
        Self.feed(&wearable, from: 40_000, seconds: 4, beats: { _ in [380, 380] })
        #expect(wearable.all(\.raised).isEmpty, "the wearable profile waits for five readings")
    }

    // MARK: sudden tachycardia (the onset of VT under the maximum)

    @Test func wearableSeesASuddenTachycardiaUnderTheMaximumAfterFiveReadings() throws {
        // 86 bpm, then 158 bpm at once: under a 60-year-old's 166, so heart_rate_high never fires.
        var h = SOSHarness()
        Self.feed(&h, from: 0, seconds: 40, beats: { _ in [700] })
        Self.feed(&h, from: 40_000, seconds: 30, beats: { _ in [380, 380] })
        let alert = try #require(h.all(\.raised).first)
        #expect(alert.record.kind == .lethalRhythm)
        #expect(alert.record.reason == RhythmSignal.suddenTachycardia.rawValue)
        #expect(alert.ms >= 44_000 && alert.ms <= 46_000, "the fifth fast reading, once the strap's average has caught up")

        var without = SOSSettings()
        without.rhythm.suddenTachycardia = nil
        var h2 = SOSHarness(settings: without)
        Self.feed(&h2, from: 0, seconds: 40, beats: { _ in [700] })
        Self.feed(&h2, from: 40_000, seconds: 30, beats: { _ in [380, 380] })
        #expect(h2.all(\.raised).isEmpty, "without the signal the same jump raises nothing")
    }

    @Test func aShortRunOfTachycardiaStaysQuietOnTheWearable() {
        // Non-sustained: three seconds of 158 bpm, back to 86.
        var h = SOSHarness()
        Self.feed(&h, from: 0, seconds: 40, beats: { _ in [700] })
        Self.feed(&h, from: 40_000, seconds: 3, beats: { _ in [380, 380] })
        Self.feed(&h, from: 43_000, seconds: 40, beats: { _ in [700] })
        #expect(h.all(\.raised).isEmpty)
    }

    @Test func exerciseOnsetRampStaysQuiet() {
        // A 25-year-old (maximum 190) starting a hard effort: 70 bpm at rest rising towards 180
        // with a time constant of 30 s, the quick end of heart-rate on-kinetics in healthy adults
        // (the steepest rise, 3.7 bpm/s, is at the start): never 30 % above the half minute before.
        var h = SOSHarness(profile: PersonProfile(name: "runner", age: 25))
        var chaos = Chaos(state: 13)
        var rr: [Int] = []
        var clock = 0.0
        while clock < 240_000 {
            let seconds = clock / 1000
            let bpm = seconds < 60 ? 70 : 70 + 110 * (1 - exp(-(seconds - 60) / 30))
            let interval = Int(60_000 / bpm) + chaos.next(-10...10)
            rr.append(interval)
            clock += Double(interval)
        }
        let bySecond = Self.laidOut(rr)
        Self.feed(&h, from: 0, seconds: 240, beats: { bySecond[$0] ?? [] })
        #expect(h.log.isEmpty, "\(h.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })")
    }

    @Test func bedsideTakesARegularSalvoNotAnIrregularSpike() {
        var salvo = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&salvo, from: 0, seconds: 30, beats: { _ in [800] })
        Self.feed(&salvo, from: 30_000, seconds: 2, beats: { s in s == 0 ? [420, 410] : [415] })
        #expect(
            salvo.all(\.raised).first?.record.reason == RhythmSignal.ventricularBurst.rawValue,
            "\(salvo.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })"
        )

        // A real salvo as a strap's detector times it: fast, but its intervals vary by a third
        // (CinC v404s, TRUE VT: 404/312/380/420 ms after a sinus rhythm at 740 ms).
        var uneven = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&uneven, from: 0, seconds: 30, beats: { _ in [740] })
        Self.feed(&uneven, from: 30_000, seconds: 2, beats: { s in s == 0 ? [404, 312] : [380] })
        #expect(
            uneven.all(\.raised).first?.record.reason == RhythmSignal.ventricularBurst.rawValue,
            "\(uneven.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })"
        )

        var spike = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&spike, from: 0, seconds: 30, beats: { _ in [800] })
        Self.feed(&spike, from: 30_000, seconds: 2, beats: { s in s == 0 ? [260, 560] : [330] })
        #expect(spike.all(\.raised).isEmpty)
    }

    // MARK: bedside: tachycardia counted in beats, the noise gate, the minimum

    /// A tachycardia of 146 bpm (410 ms) whose every fourth beat the strap's detector misses
    /// (one 820 ms interval): its 4-beat average reads 117 bpm, under the bedside maximum of 140,
    /// while 12 or 13 of any 17 intervals are the rhythm's own 410 ms.
    static let tachycardiaWithMissedBeats = laidOut(Array(repeating: [410, 410, 410, 820], count: 40).flatMap { $0 })

    @Test func bedsideCountsExtremeTachycardiaInBeatsThroughMissedDetections() throws {
        var h = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&h, from: 0, seconds: 60, beats: { Self.tachycardiaWithMissedBeats[$0] ?? [] })
        let alert = try #require(h.all(\.raised).first, "\(h.log.map(\.action))")
        #expect(alert.record.kind == .heartRateHigh)
        #expect(alert.record.reason == RhythmSignal.fastBeats.rawValue)
        #expect(alert.ms <= 10_000, "17 beats of about 0.5 s")

        var without = SOSSettings(profile: .bedside)
        without.rhythm.fastBeats = nil
        var h2 = SOSHarness(settings: without)
        Self.feed(&h2, from: 0, seconds: 60, beats: { Self.tachycardiaWithMissedBeats[$0] ?? [] })
        #expect(h2.all(\.raised).isEmpty, "the averaged bpm never reaches 140")

        var wearable = SOSHarness()
        Self.feed(&wearable, from: 0, seconds: 60, beats: { Self.tachycardiaWithMissedBeats[$0] ?? [] })
        #expect(wearable.all(\.raised).isEmpty, "off on the wearable: 146 bpm is exercise there (see exerciseOnsetRampStaysQuiet)")

        // Bigeminy at 104 bpm (344, 808, ...): half its intervals are short, not most.
        var bigeminy = SOSHarness(settings: SOSSettings(profile: .bedside))
        let alternating = Self.laidOut(Array(repeating: [344, 808], count: 60).flatMap { $0 })
        Self.feed(&bigeminy, from: 0, seconds: 60, beats: { alternating[$0] ?? [] })
        #expect(bigeminy.all(\.raised).isEmpty, "\(bigeminy.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })")
    }

    /// Thirty seconds of sinus rhythm at 800 ms in which the detector once counted a T wave
    /// (800 ms split into 570 and 230), then a regular salvo of three short beats.
    static func feedSalvo(_ h: inout SOSHarness, doubleCountAt second: Int?) {
        Self.feed(&h, from: 0, seconds: 30, beats: { s in s == second ? [570, 230] : [800] })
        Self.feed(&h, from: 30_000, seconds: 2, beats: { s in s == 0 ? [420, 410] : [415] })
    }

    @Test func bedsideDoesNotTrustASalvoAmongDoubleCountedBeats() {
        var noisy = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feedSalvo(&noisy, doubleCountAt: 10)
        #expect(noisy.all(\.raised).isEmpty, "\(noisy.all(\.raised).map { ($0.ms, $0.record.kind, $0.record.reason ?? "-") })")

        var ungated = SOSSettings(profile: .bedside)
        ungated.rhythm.noiseGate = nil
        var h = SOSHarness(settings: ungated)
        Self.feedSalvo(&h, doubleCountAt: 10)
        #expect(h.all(\.raised).first?.record.reason == RhythmSignal.ventricularBurst.rawValue)

        // The gate looks back 30 s only: a double count longer ago does not hide a salvo.
        var old = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&old, from: 0, seconds: 5, beats: { s in s == 0 ? [570, 230] : [800] })
        Self.feed(&old, from: 5_000, seconds: 35, beats: { _ in [800] })
        Self.feed(&old, from: 40_000, seconds: 2, beats: { s in s == 0 ? [420, 410] : [415] })
        #expect(old.all(\.raised).first?.record.reason == RhythmSignal.ventricularBurst.rawValue)
    }

    @Test func bedsideCallsABradycardiaAt43BeatsPerMinute() throws {
        // 43 bpm (1 400 ms): over the challenge's 40 as a strap times it, under the bedside 45.
        let bySecond = Self.laidOut(Array(repeating: 900, count: 22) + Array(repeating: 1_400, count: 20))
        let slow: (Int) -> [Int] = { bySecond[$0] ?? [] }
        var h = SOSHarness(settings: SOSSettings(profile: .bedside))
        Self.feed(&h, from: 0, seconds: 45, beats: slow)
        let alert = try #require(h.all(\.raised).first)
        #expect(alert.record.kind == .heartRateLow)

        var at40 = SOSSettings(profile: .bedside)
        at40.defaultMinimumHeartRate = nil
        var h2 = SOSHarness(settings: at40)
        Self.feed(&h2, from: 0, seconds: 45, beats: slow)
        #expect(h2.all(\.raised).isEmpty)

        let person = PersonProfile(name: "p", age: 60)
        let bedside = HeartRateLimits(profile: person, learnedRestingRate: 60, defaultMaximum: 140, defaultMinimum: 45)
        #expect(bedside.minimum == 45 && bedside.minimumSource == .careProfile)
        var explicit = person
        explicit.minimumHeartRate = 38
        #expect(HeartRateLimits(profile: explicit, defaultMinimum: 45).minimum == 38, "the person's own limit wins")
    }
}
