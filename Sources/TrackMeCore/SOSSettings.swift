/// How one SOS rule behaves: when it may fire, how long the wearer has to cancel, and when it
/// may fire again. The defaults and their sources are in `simulations/SOS-RULES.md`.
public struct SOSRuleSettings: Hashable, Sendable {
    public var enabled: Bool
    /// How long the condition must hold, without a reading that breaks it, before the rule fires.
    public var persistence: Duration
    /// How many consecutive readings must show the condition (for reading-based conditions), so
    /// that two readings far apart do not count as a sustained episode.
    public var minimumReadings: Int
    /// How long the alert stays pending, cancellable by the wearer, before it is raised. Zero
    /// raises at once (hard rules).
    public var countdown: Duration
    /// After the rule fired, its condition must be false this long before it can fire again.
    public var rearm: Duration
    /// Whether a pending alert of this rule is withdrawn when the condition clears during the
    /// countdown. True for technical conditions (the signal came back), false for physiological
    /// ones, which latch: only the wearer can stop them (IEC 60601-1-8's latching alarms).
    public var withdrawsWhenCleared: Bool

    public init(
        enabled: Bool = true,
        persistence: Duration,
        minimumReadings: Int = 1,
        countdown: Duration,
        rearm: Duration = .seconds(60),
        withdrawsWhenCleared: Bool = false
    ) {
        self.enabled = enabled
        self.persistence = persistence
        self.minimumReadings = minimumReadings
        self.countdown = countdown
        self.rearm = rearm
        self.withdrawsWhenCleared = withdrawsWhenCleared
    }
}

/// All SOS rule settings for one person. `SOSSettings()` gives the documented defaults.
public struct SOSSettings: Hashable, Sendable {
    /// The care setting `discreet_sos`: every alert is raised discreetly (`AlertRecord.discreet`),
    /// a press or a rule's.
    public var discreet = false
    /// Heart rate below the person's minimum (`HeartRateLimits.minimum`).
    public var heartRateLow = SOSRuleSettings(persistence: .seconds(6), minimumReadings: 5, countdown: .seconds(10))
    /// Heart rate above the person's maximum (`HeartRateLimits.maximum`).
    public var heartRateHigh = SOSRuleSettings(persistence: .seconds(30), minimumReadings: 10, countdown: .seconds(10))
    /// 0 bpm while the strap reports contact; `persistence` applies to the zeros. A hard rule.
    public var noPulse = SOSRuleSettings(persistence: .seconds(3), minimumReadings: 3, countdown: .zero)
    /// No beat (no plausible RR interval) while the strap reports contact for this long fires
    /// `noPulse` too, judged at each notification. Only once the strap has sent RR intervals
    /// since it connected: a strap that never sends them cannot say that beats stopped.
    public var noBeatWindow: Duration = .seconds(6)
    /// The strap reports no skin contact for `persistence`.
    public var contactLost = SOSRuleSettings(
        persistence: .seconds(15),
        countdown: .seconds(30),
        withdrawsWhenCleared: true
    )
    /// No notification at all for `persistence` while monitoring is on.
    public var strapSilent = SOSRuleSettings(
        persistence: .seconds(20),
        countdown: .seconds(30),
        withdrawsWhenCleared: true
    )
    /// The wearer asked for help (a command or a button); `persistence` is unused.
    public var manual = SOSRuleSettings(persistence: .zero, countdown: .seconds(5), rearm: .zero)
    /// Readings above this are corrupt, not tachycardia: they neither extend nor break an episode.
    public var absurdBPM = 250
    /// Consecutive readings further apart than this do not make one episode: an episode that
    /// counts readings restarts after such a gap (link drop, corrupt readings in between).
    public var maximumReadingGap: Duration = .seconds(3)
    /// RR intervals shorter than this (300 bpm) are glitches, not beats.
    public var minimumPlausibleRRMilliseconds = 200
    /// A lethal rhythm seen in the beats (`rhythm` says which signals and how): a cardiac arrest
    /// of the same class as `noPulse`, hard. `persistence` is unused (each signal has its own).
    public var lethalRhythm = SOSRuleSettings(persistence: .zero, countdown: .zero)
    public var rhythm = RhythmSettings()
    /// The maximum when the profile sets none; nil derives it from age (`HeartRateLimits`).
    public var defaultMaximumHeartRate: Int?
    /// The minimum when the profile sets none; nil derives it from the resting rate or takes
    /// 40 bpm (`HeartRateLimits`).
    public var defaultMinimumHeartRate: Int?

    public init() {}

    /// The settings of a named care profile (`CareProfile`).
    public init(profile: CareProfile) {
        switch profile {
        case .wearable:
            break
        case .bedside:
            // A person in bed: no exercise to tell apart, so the PhysioNet/CinC 2015 alarm
            // definitions apply (asystole >= 4 s, < 40 bpm for 5 beats, > 140 bpm for 17 beats,
            // VT, VF) with persistences of a few beats and no countdown: a bedridden person may
            // not be able to cancel, and a carer is told at once. The minimum is 45, not 40: a
            // strap times the same slow beats a few bpm faster than a monitor's averaged rate,
            // and an extreme bradycardia missed in bed costs more than a false call to a carer
            // (simulations/SOS-RULES.md).
            heartRateLow = SOSRuleSettings(persistence: .seconds(3), minimumReadings: 3, countdown: .zero)
            heartRateHigh = SOSRuleSettings(persistence: .seconds(6), minimumReadings: 5, countdown: .zero)
            noBeatWindow = .seconds(4)
            defaultMaximumHeartRate = 140
            defaultMinimumHeartRate = 45
            rhythm.fastIrregular?.window = .seconds(10)
            rhythm.fastIrregular?.minimumReadings = 8
            rhythm.erratic?.window = .seconds(15)
            rhythm.erratic?.jumpShare = 0.3
            rhythm.erratic?.hold = .seconds(5)
            rhythm.erratic?.holdWhenStopped = .seconds(5)
            // In bed the onset of a tachycardia is judged by its beats (`fastBeats`, the
            // challenge's 17 beats) and salvos (`ventricularBurst`), both behind the noise gate;
            // the sudden jump of the averaged bpm, there to tell VT from exercise, is off.
            rhythm.suddenTachycardia = nil
            rhythm.ventricularBurst = RhythmSettings.VentricularBurst()
            rhythm.slowBeats = RhythmSettings.SlowBeats()
            rhythm.fastBeats = RhythmSettings.FastBeats()
            rhythm.noiseGate = RhythmSettings.NoiseGate()
        }
    }

    public func rule(_ kind: AlertKind) -> SOSRuleSettings {
        switch kind {
        case .heartRateLow: heartRateLow
        case .heartRateHigh: heartRateHigh
        case .noPulse: noPulse
        case .contactLost: contactLost
        case .strapSilent: strapSilent
        case .manual: manual
        case .lethalRhythm: lethalRhythm
        }
    }
}

/// A named set of SOS rule settings for a kind of wearer, chosen in the care settings.
public enum CareProfile: String, Hashable, Sendable, Codable, CaseIterable {
    /// Someone up and about: exercise must not look like an emergency (the defaults).
    case wearable
    /// Someone bedridden or cared for at home: the bedside monitor's alarm limits.
    case bedside
}

/// The heart-rate band a person is expected to stay in, and where each bound came from.
public struct HeartRateLimits: Hashable, Sendable {
    public enum Source: String, Hashable, Sendable {
        /// Set outright in the person's profile.
        case profile
        /// `208 - 0.7 * age` (Tanaka, Monahan & Seals 2001).
        case tanakaAgePredicted = "tanaka_age_predicted"
        /// `resting - 20`, kept within 30...40 bpm.
        case restingRate = "resting_rate"
        /// 40 bpm, the extreme-bradycardia limit (PhysioNet/CinC Challenge 2015), when no resting
        /// rate is known.
        case extremeBradycardia = "extreme_bradycardia"
        /// The care profile's limit (`bedside`: 140 bpm, the extreme-tachycardia limit of the
        /// PhysioNet/CinC Challenge 2015; 45 bpm, its extreme-bradycardia limit with a strap's
        /// margin).
        case careProfile = "care_profile"
    }

    /// Below this many bpm the heart-rate-low rule's condition is true.
    public var minimum: Int
    public var minimumSource: Source
    /// Above this many bpm the heart-rate-high rule's condition is true.
    public var maximum: Int
    public var maximumSource: Source

    public init(minimum: Int, minimumSource: Source, maximum: Int, maximumSource: Source) {
        self.minimum = minimum
        self.minimumSource = minimumSource
        self.maximum = maximum
        self.maximumSource = maximumSource
    }

    /// The limits for `profile`: its explicit bounds where set, otherwise derived. A resting rate
    /// learned from the person's history (`learnedRestingRate`) is used when the profile has
    /// none; a low resting rate (athletes, beta blockers) lowers the minimum to at most 20 below
    /// it, never under 30 bpm.
    public init(profile: PersonProfile, learnedRestingRate: Int? = nil, defaultMaximum: Int? = nil, defaultMinimum: Int? = nil) {
        if let explicit = profile.minimumHeartRate {
            minimum = explicit
            minimumSource = .profile
        } else if let defaultMinimum {
            minimum = defaultMinimum
            minimumSource = .careProfile
        } else if let resting = profile.restingHeartRate ?? learnedRestingRate {
            minimum = min(40, max(30, resting - 20))
            minimumSource = .restingRate
        } else {
            minimum = 40
            minimumSource = .extremeBradycardia
        }
        if let explicit = profile.maximumHeartRate {
            maximum = explicit
            maximumSource = .profile
        } else if let defaultMaximum {
            maximum = defaultMaximum
            maximumSource = .careProfile
        } else {
            // 208 - 0.7 * age, rounded to the nearest bpm, in integer arithmetic.
            maximum = (2080 - 7 * max(0, profile.age) + 5) / 10
            maximumSource = .tanakaAgePredicted
        }
    }
}

extension SOSSettings {
    /// Turns off every rule that judges a strap's notifications (all but `manual`): for a device
    /// worn without a strap (a taxi's terminal, a runner's tracker alone), whose silence says
    /// nothing about its wearer.
    public mutating func disableStrapRules() {
        heartRateLow.enabled = false
        heartRateHigh.enabled = false
        noPulse.enabled = false
        lethalRhythm.enabled = false
        contactLost.enabled = false
        strapSilent.enabled = false
    }
}
