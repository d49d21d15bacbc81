public import TrackMeCore

extension SOSRuleOverrides {
    /// The engine's settings and the person's profile with these overrides applied.
    ///
    /// - `countdown_seconds` (global) replaces the countdown of every rule that has one; the hard rule
    ///   `no_pulse` keeps raising at once unless its own `countdown_seconds` says otherwise.
    /// - `threshold_bpm` of `heart_rate_low` / `heart_rate_high` becomes the profile's explicit
    ///   minimum / maximum, which the engine prefers over derived limits.
    public func applied(to settings: SOSSettings, profile: PersonProfile) -> (settings: SOSSettings, profile: PersonProfile) {
        var settings = settings
        var profile = profile
        for kind in AlertKind.allCases {
            var rule = settings.rule(kind)
            if let global = countdownSeconds, rule.countdown > .zero {
                rule.countdown = .milliseconds(Int64((global * 1000).rounded()))
            }
            let override = self[kind]
            if let enabled = override.enabled { rule.enabled = enabled }
            if let persistence = override.persistenceSeconds { rule.persistence = .milliseconds(Int64((persistence * 1000).rounded())) }
            if let countdown = override.countdownSeconds { rule.countdown = .milliseconds(Int64((countdown * 1000).rounded())) }
            settings.setRule(kind, rule)
            if let threshold = override.thresholdBPM {
                switch kind {
                case .heartRateLow: profile.minimumHeartRate = threshold
                case .heartRateHigh: profile.maximumHeartRate = threshold
                case .noPulse, .contactLost, .strapSilent, .manual, .lethalRhythm: break
                }
            }
        }
        return (settings, profile)
    }
}

extension SOSSettings {
    mutating func setRule(_ kind: AlertKind, _ rule: SOSRuleSettings) {
        switch kind {
        case .heartRateLow: heartRateLow = rule
        case .heartRateHigh: heartRateHigh = rule
        case .noPulse: noPulse = rule
        case .contactLost: contactLost = rule
        case .strapSilent: strapSilent = rule
        case .manual: manual = rule
        case .lethalRhythm: lethalRhythm = rule
        }
    }
}
