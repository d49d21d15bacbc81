public import TrackMeCore

/// What `trackme-agent status` shows: is every part of the agent working?
///
/// Ages are milliseconds on the monotonic clock between the observation and the moment the
/// status was made; nil means "never" (no reading, no fix, no sync since start).
public struct AgentStatus: Hashable, Sendable, Codable {
    public var deviceID: String
    /// Seconds since the agent started.
    public var uptimeSeconds: Double
    public var monitoringPaused: Bool
    public var strap: StrapStatus
    public var gpsd: GPSDStatus
    public var store: StoreStatus
    public var sync: SyncStatus
    /// The person's one open alert, if any.
    public var alert: AlertStatus?
    /// The heart-rate limits the SOS rules use now, and why (absent from an agent without a pipeline).
    public var limits: LimitsStatus?
    /// What the wearer's LED and hook show now (`FeedbackState`), if feedback is wired.
    public var feedback: FeedbackState?
    /// The device's profile and a taxi's state or a runner's run; nil from an agent
    /// without one (a wearer).
    public var profile: ProfileState?
    /// Which care settings the rules run on (the server's version, or the configuration file)
    /// and the local overrides that conflict with them.
    public var care: CareStatus?

    public init(
        deviceID: String,
        uptimeSeconds: Double,
        monitoringPaused: Bool = false,
        strap: StrapStatus = .init(),
        gpsd: GPSDStatus = .init(),
        store: StoreStatus = .init(),
        sync: SyncStatus = .init(),
        alert: AlertStatus? = nil,
        limits: LimitsStatus? = nil,
        feedback: FeedbackState? = nil,
        profile: ProfileState? = nil
    ) {
        self.profile = profile
        self.deviceID = deviceID
        self.uptimeSeconds = uptimeSeconds
        self.monitoringPaused = monitoringPaused
        self.strap = strap
        self.gpsd = gpsd
        self.store = store
        self.sync = sync
        self.alert = alert
        self.limits = limits
        self.feedback = feedback
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case uptimeSeconds = "uptime_s"
        case monitoringPaused = "monitoring_paused"
        case strap, gpsd, store, sync, alert, limits, feedback, profile, care
    }
}

/// The care settings in force: the server's (`version`) over the configuration file, with the
/// fields the file's `sos:` overrides set otherwise (the local override wins; the server sees
/// the same list in the heartbeat).
public struct CareStatus: Hashable, Sendable, Codable {
    /// The server's care settings version applied; nil: the configuration file's values alone.
    public var version: Int64?
    public var conflicts: [String]
    /// The local override's value of each conflicting threshold (in force), by the names in
    /// `conflicts`.
    public var overrides: [String: Int]
    /// Whether AutomatedSOS is active for the person and who provides it, as the server's care
    /// settings say (on, by the operator, when they say nothing).
    public var automatedSOS: AutomatedSOSService
    /// The care setting `discreet_sos`: the device shows and sounds nothing of any alert.
    public var discreetSOS: Bool

    public init(
        version: Int64?,
        conflicts: [String],
        overrides: [String: Int] = [:],
        automatedSOS: AutomatedSOSService = AutomatedSOSService(),
        discreetSOS: Bool = false
    ) {
        self.version = version
        self.conflicts = conflicts
        self.overrides = overrides
        self.automatedSOS = automatedSOS
        self.discreetSOS = discreetSOS
    }

    enum CodingKeys: String, CodingKey {
        case version, conflicts, overrides
        case automatedSOS = "automated_sos"
        case discreetSOS = "discreet_sos"
    }

    /// `automated_sos` and `overrides` may be absent (a status from an older agent).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decodeIfPresent(Int64.self, forKey: .version)
        conflicts = try c.decode([String].self, forKey: .conflicts)
        overrides = try c.decodeIfPresent([String: Int].self, forKey: .overrides) ?? [:]
        automatedSOS = try c.decodeIfPresent(AutomatedSOSService.self, forKey: .automatedSOS) ?? AutomatedSOSService()
        discreetSOS = try c.decodeIfPresent(Bool.self, forKey: .discreetSOS) ?? false
    }
}

public struct StrapStatus: Hashable, Sendable, Codable {
    public enum LinkState: String, Hashable, Sendable, Codable, CaseIterable {
        /// The link service has not started (or is not wired in).
        case notStarted = "not_started"
        case scanning
        case connecting
        /// Connected and receiving Heart Rate Measurement notifications.
        case connected
        /// Lost; the link service is backing off before it reconnects.
        case disconnected
    }

    public var link: LinkState
    /// The strap's address, once known.
    public var address: String?
    /// Battery Service (0x180F) level, 0-100, if the strap has one.
    public var batteryPercent: Int?
    public var lastHeartRate: LastHeartRate?
    /// The battery is below the warning level (`strap.battery_warning_percent`).
    public var batteryLow: Bool?
    /// Where the strap says it sits (Body Sensor Location), as in the heartbeat.
    public var bodyLocation: String?

    public init(
        link: LinkState = .notStarted,
        address: String? = nil,
        batteryPercent: Int? = nil,
        lastHeartRate: LastHeartRate? = nil,
        batteryLow: Bool? = nil,
        bodyLocation: String? = nil
    ) {
        self.link = link
        self.address = address
        self.batteryPercent = batteryPercent
        self.lastHeartRate = lastHeartRate
        self.batteryLow = batteryLow
        self.bodyLocation = bodyLocation
    }

    enum CodingKeys: String, CodingKey {
        case link, address
        case batteryPercent = "battery_pct"
        case lastHeartRate = "last_hr"
        case batteryLow = "battery_low"
        case bodyLocation = "body_location"
    }
}

public struct LastHeartRate: Hashable, Sendable, Codable {
    public var bpm: Int
    public var contact: SensorContact
    public var ageMilliseconds: Int64

    public init(bpm: Int, contact: SensorContact, ageMilliseconds: Int64) {
        self.bpm = bpm
        self.contact = contact
        self.ageMilliseconds = ageMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case bpm, contact
        case ageMilliseconds = "age_ms"
    }
}

public struct GPSDStatus: Hashable, Sendable, Codable {
    public enum ConnectionState: String, Hashable, Sendable, Codable, CaseIterable {
        case notStarted = "not_started"
        case connecting
        /// Connected to gpsd and watching; see `lastFix` for whether the receiver has a fix.
        case connected
        case disconnected
    }

    public var connection: ConnectionState
    public var lastFix: PositionFix?
    public var fixAgeMilliseconds: Int64?

    public init(connection: ConnectionState = .notStarted, lastFix: PositionFix? = nil, fixAgeMilliseconds: Int64? = nil) {
        self.connection = connection
        self.lastFix = lastFix
        self.fixAgeMilliseconds = fixAgeMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case connection
        case lastFix = "last_fix"
        case fixAgeMilliseconds = "fix_age_ms"
    }
}

public struct StoreStatus: Hashable, Sendable, Codable {
    /// Readings and alert updates not yet acknowledged by the server.
    public var depth: Int
    /// Bytes the store uses on disk.
    public var bytes: Int
    public var budgetBytes: Int
    /// `disk`, or `memory_only` when the store could not be opened on disk: nothing it holds
    /// survives a restart, and the agent keeps trying to reopen it.
    public var state: String?
    /// Why the store is not well (`disk_full: ...`), or nil.
    public var problem: String?
    /// Readings that failed their integrity check, kept aside and not sent.
    public var quarantined: Int64?
    /// Rows (or runs of rows behind a damaged page, or whole files that would not open) of
    /// stores moved aside as corrupt that could not be salvaged: lost before they were sent.
    public var unsalvageable: Int64?
    /// The fingerprint of the key the store is sealed under, or nil in clear.
    public var keyID: String?

    public init(depth: Int = 0, bytes: Int = 0, budgetBytes: Int = 0) {
        self.depth = depth
        self.bytes = bytes
        self.budgetBytes = budgetBytes
    }

    enum CodingKeys: String, CodingKey {
        case depth, bytes
        case budgetBytes = "budget_bytes"
        case state, problem, quarantined, unsalvageable
        case keyID = "key_id"
    }
}

public struct SyncStatus: Hashable, Sendable, Codable {
    /// Age of the last batch the server acknowledged.
    public var lastSuccessAgeMilliseconds: Int64?
    /// The error of the last failed attempt, if the last attempt failed.
    public var lastError: String?

    public init(lastSuccessAgeMilliseconds: Int64? = nil, lastError: String? = nil) {
        self.lastSuccessAgeMilliseconds = lastSuccessAgeMilliseconds
        self.lastError = lastError
    }

    enum CodingKeys: String, CodingKey {
        case lastSuccessAgeMilliseconds = "last_success_age_ms"
        case lastError = "last_error"
    }
}

/// An alert as the control socket reports it.
public struct AlertStatus: Hashable, Sendable, Codable {
    public var id: String
    public var kind: AlertKind
    public var state: AlertState
    /// Seconds left to cancel while `state` is pending.
    public var countdownRemainingSeconds: Double?
    public var cancelReason: CancelReason?
    /// Which signal raised it, or `discreet` for a discreet SOS (shown only when asked).
    public var reason: String?

    public init(
        id: String,
        kind: AlertKind,
        state: AlertState,
        countdownRemainingSeconds: Double? = nil,
        cancelReason: CancelReason? = nil,
        reason: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.countdownRemainingSeconds = countdownRemainingSeconds
        self.cancelReason = cancelReason
        self.reason = reason
    }

    /// The status of a Core alert record.
    public init(_ record: AlertRecord, countdownRemainingSeconds: Double? = nil) {
        self.init(
            id: record.id,
            kind: record.kind,
            state: record.state,
            countdownRemainingSeconds: countdownRemainingSeconds,
            cancelReason: record.cancelReason,
            reason: record.reason
        )
    }

    enum CodingKeys: String, CodingKey {
        case id = "alert_id"
        case kind, state
        case countdownRemainingSeconds = "countdown_remaining_s"
        case cancelReason = "cancel_reason"
        case reason
    }
}

/// The heart-rate band in force and where each bound comes from.
public struct LimitsStatus: Hashable, Sendable, Codable {
    public var minimumBPM: Int
    /// `profile`, `resting_rate`, `extreme_bradycardia` (`HeartRateLimits.Source`).
    public var minimumSource: String
    public var maximumBPM: Int
    /// `profile` or `tanaka_age_predicted`.
    public var maximumSource: String
    /// The resting rate learned from the wearer's readings, once there is one.
    public var learnedRestingBPM: Int?
    /// Readings the learning has counted, and how many it needs before it has an estimate.
    public var learnedSamples: Int
    public var learnedSamplesNeeded: Int
    /// In words: which limits are in force and why.
    public var why: String

    public init(
        minimumBPM: Int,
        minimumSource: String,
        maximumBPM: Int,
        maximumSource: String,
        learnedRestingBPM: Int?,
        learnedSamples: Int,
        learnedSamplesNeeded: Int,
        why: String
    ) {
        self.minimumBPM = minimumBPM
        self.minimumSource = minimumSource
        self.maximumBPM = maximumBPM
        self.maximumSource = maximumSource
        self.learnedRestingBPM = learnedRestingBPM
        self.learnedSamples = learnedSamples
        self.learnedSamplesNeeded = learnedSamplesNeeded
        self.why = why
    }

    /// The limits of `profile` with what the agent learned.
    public init(limits: HeartRateLimits, profile: PersonProfile, learnedRestingRate: Int?, learnedSamples: Int, learnedSamplesNeeded: Int) {
        var reasons: [String] = []
        switch limits.minimumSource {
        case .profile:
            reasons.append("minimum \(limits.minimum) bpm set in the profile (min_hr)")
        case .restingRate:
            if let resting = profile.restingHeartRate {
                reasons.append("minimum \(limits.minimum) bpm from the profile's resting rate \(resting) bpm")
            } else {
                reasons.append(
                    "minimum \(limits.minimum) bpm from the resting rate \(learnedRestingRate ?? 0) bpm learned from \(learnedSamples) readings"
                )
            }
        case .extremeBradycardia:
            reasons.append(
                "minimum \(limits.minimum) bpm, the extreme-bradycardia default (no resting rate yet: \(learnedSamples) of \(learnedSamplesNeeded) readings learned)"
            )
        case .tanakaAgePredicted, .careProfile:
            reasons.append("minimum \(limits.minimum) bpm")
        }
        switch limits.maximumSource {
        case .profile:
            reasons.append("maximum \(limits.maximum) bpm set in the profile (max_hr)")
        case .tanakaAgePredicted:
            reasons.append("maximum \(limits.maximum) bpm predicted from age \(profile.age) (208 - 0.7 x age)")
        case .careProfile:
            reasons.append("maximum \(limits.maximum) bpm, the care profile's limit")
        case .restingRate, .extremeBradycardia:
            reasons.append("maximum \(limits.maximum) bpm")
        }
        self.init(
            minimumBPM: limits.minimum,
            minimumSource: limits.minimumSource.rawValue,
            maximumBPM: limits.maximum,
            maximumSource: limits.maximumSource.rawValue,
            learnedRestingBPM: learnedRestingRate,
            learnedSamples: learnedSamples,
            learnedSamplesNeeded: learnedSamplesNeeded,
            why: reasons.joined(separator: "; ")
        )
    }

    enum CodingKeys: String, CodingKey {
        case minimumBPM = "min_bpm"
        case minimumSource = "min_source"
        case maximumBPM = "max_bpm"
        case maximumSource = "max_source"
        case learnedRestingBPM = "learned_resting_bpm"
        case learnedSamples = "learned_samples"
        case learnedSamplesNeeded = "learned_samples_needed"
        case why
    }
}
