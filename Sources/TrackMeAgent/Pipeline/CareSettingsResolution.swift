public import TrackMeCore

/// What the SOS rules run on, from three layers (pure: values in, values out):
///
/// 1. the configuration file's `person:` values: the fallback, used when the server has sent
///    no care settings;
/// 2. the server's care settings (`CareSettings`, set by the person or their carer), over them:
///    the care profile the rules start from (`wearable`, `bedside`), thresholds, resting rate,
///    contacts, rule switches;
/// 3. the configuration file's `sos:` overrides, over everything: an engineer's local override
///    on this device wins. Where it sets a field the server also sets, to another value, that is
///    a conflict, listed as `rule.field` for `status` and the heartbeat (the server shows it).
public struct CareSettingsResolution: Hashable, Sendable {
    public var profile: PersonProfile
    public var settings: SOSSettings
    /// The server's version in force; nil when none.
    public var version: Int64?
    public var conflicts: [String]
    /// The local override's value of each conflicting threshold (the value in force), by the
    /// names in `conflicts`.
    public var overrides: [String: Int]
    /// The person's AutomatedSOS enrolment as the server's settings carry it.
    public var automatedSOS: AutomatedSOSService
    /// The care setting `discreet_sos`: the wearer is shown nothing of any alert (the rules
    /// raise every alert discreetly: `settings.discreet`).
    public var discreetSOS: Bool { settings.discreet }

    /// `device` is the device profile, applied to the file's values before the
    /// server's: a runner's exercise-aware high limit, a taxi's manual SOS only.
    public init(configured person: PersonProfile, device: DeviceProfile = .wearer, overrides: SOSRuleOverrides, server: CareSettings?) {
        var (base, profile) = device.applied(to: SOSSettings(profile: server?.careProfile ?? .wearable), profile: person)
        var conflicts: [String] = []
        var overrideValues: [String: Int] = [:]
        if let server {
            if let value = server.minimumHeartRate { profile.minimumHeartRate = value }
            if let value = server.maximumHeartRate { profile.maximumHeartRate = value }
            if let value = server.restingHeartRate { profile.restingHeartRate = value }
            if let contacts = server.contacts { profile.contacts = contacts }
            for kind in AlertKind.allCases {
                if let enabled = server.ruleEnabled(kind) {
                    var rule = base.rule(kind)
                    rule.enabled = enabled
                    base.setRule(kind, rule)
                    if let local = overrides[kind].enabled, local != enabled { conflicts.append("\(kind.rawValue).enabled") }
                }
            }
            if let local = overrides[.heartRateLow].thresholdBPM, let remote = server.minimumHeartRate, local != remote {
                conflicts.append("heart_rate_low.threshold_bpm")
                overrideValues["heart_rate_low.threshold_bpm"] = local
            }
            if let local = overrides[.heartRateHigh].thresholdBPM, let remote = server.maximumHeartRate, local != remote {
                conflicts.append("heart_rate_high.threshold_bpm")
                overrideValues["heart_rate_high.threshold_bpm"] = local
            }
        }
        var applied = overrides.applied(to: base, profile: profile)
        applied.settings.discreet = server?.discreetSOS ?? false
        self.settings = applied.settings
        self.profile = applied.profile
        version = server?.version
        self.conflicts = conflicts.sorted()
        self.overrides = overrideValues
        automatedSOS = server?.automatedSOS ?? AutomatedSOSService()
    }

    public var status: CareStatus {
        CareStatus(version: version, conflicts: conflicts, overrides: overrides, automatedSOS: automatedSOS, discreetSOS: discreetSOS)
    }
}
