// Data path: the domain every step shares (readings, the SOS rules of step 3, the wire format of step 5); no I/O.

/// Which rule raised an alert.
public enum AlertKind: String, Hashable, Sendable, Codable, CaseIterable {
    case heartRateLow = "heart_rate_low"
    case heartRateHigh = "heart_rate_high"
    /// 0 bpm, or no beat for several seconds, while the strap reports skin contact.
    case noPulse = "no_pulse"
    case contactLost = "contact_lost"
    case strapSilent = "strap_silent"
    case manual
    /// The beats the strap sends look like ventricular fibrillation, flutter or tachycardia
    /// (`RhythmSignal`, in the alert's `reason`): a cardiac arrest the averaged bpm may not show.
    case lethalRhythm = "lethal_rhythm"
}

/// Where an alert is in its lifecycle.
public enum AlertState: String, Hashable, Sendable, Codable, CaseIterable {
    /// Counting down; the wearer can still cancel.
    case pending
    /// Journaled durably and handed to the dispatch lane.
    case raised
    /// The server accepted it.
    case delivered
    /// A dispatcher or contact confirmed it.
    case acknowledged
    case resolved
    case cancelled

    /// Whether the alert still counts as the person's one open alert.
    public var isOpen: Bool {
        switch self {
        case .pending, .raised, .delivered, .acknowledged: true
        case .resolved, .cancelled: false
        }
    }
}

/// Why the wearer (or someone for them) cancelled an alert.
public enum CancelReason: String, Hashable, Sendable, Codable, CaseIterable {
    case falseAlarm = "false_alarm"
    case accidental
    case iAmSafe = "i_am_safe"
}

/// The last known position when an alert was raised, and how old it was then.
public struct AlertPosition: Hashable, Sendable, Codable {
    public var fix: PositionFix
    /// Milliseconds between the fix and the alert on the monotonic clock.
    public var ageMilliseconds: Int64

    public init(fix: PositionFix, ageMilliseconds: Int64) {
        self.fix = fix
        self.ageMilliseconds = ageMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case fix
        case ageMilliseconds = "age_ms"
    }
}

/// A heart-rate reading together with when it was taken.
public struct TimedHeartRate: Hashable, Sendable, Codable {
    public var reading: HeartRateReading
    public var timestamp: ReadingTimestamp

    public init(reading: HeartRateReading, timestamp: ReadingTimestamp) {
        self.reading = reading
        self.timestamp = timestamp
    }

    enum CodingKeys: String, CodingKey {
        case reading = "hr"
        case timestamp = "t"
    }
}

/// One alert as the device keeps it and sends it.
public struct AlertRecord: Hashable, Sendable, Codable {
    /// A random identifier made on the device (UUID text), stable across retries and restarts.
    public var id: String
    public var deviceID: String
    public var kind: AlertKind
    public var state: AlertState
    /// When the first reading that made the rule true was taken.
    public var firstCritical: ReadingTimestamp
    /// When the alert was raised (journaled), or nil while it is still pending.
    public var raised: ReadingTimestamp?
    /// The readings that made the rule true, newest last.
    public var triggeringReadings: [TimedHeartRate]
    /// The last known position, or nil if gpsd never had a fix ("unknown").
    public var position: AlertPosition?
    public var cancelReason: CancelReason?
    /// Which signal made the rule fire, where a rule has several: a `RhythmSignal` name for
    /// `lethal_rhythm` (and `slow_beats` for `heart_rate_low`, `fast_beats` for
    /// `heart_rate_high`). Shown to the dispatcher.
    public var reason: String?
    /// Raised discreetly: the device shows and sounds nothing of it, from its countdown to its
    /// end, and the local fallback hears so (`TRACKME_DISCREET=1`). Set when the alert is made,
    /// by a discreet press or, for every alert, by the care setting `discreet_sos`
    /// (`SOSSettings.discreet`): one flag that the feedback and the fallback both read.
    public var discreet: Bool
    /// The `reason` of a manual alert the wearer raised discreetly (`SOSEvent.discreetSOS`): the
    /// wearer may be under threat, and the device shows nothing of it.
    public static let discreetReason = "discreet"

    /// Raised discreetly: nothing of it is shown or sounded on the device.
    public var isDiscreet: Bool { discreet || (kind == .manual && reason == Self.discreetReason) }

    public init(
        id: String,
        deviceID: String,
        kind: AlertKind,
        state: AlertState,
        firstCritical: ReadingTimestamp,
        raised: ReadingTimestamp? = nil,
        triggeringReadings: [TimedHeartRate] = [],
        position: AlertPosition? = nil,
        cancelReason: CancelReason? = nil,
        reason: String? = nil,
        discreet: Bool = false
    ) {
        self.id = id
        self.deviceID = deviceID
        self.kind = kind
        self.state = state
        self.firstCritical = firstCritical
        self.raised = raised
        self.triggeringReadings = triggeringReadings
        self.position = position
        self.cancelReason = cancelReason
        self.reason = reason
        self.discreet = discreet
    }

    enum CodingKeys: String, CodingKey {
        case id = "alert_id"
        case deviceID = "device_id"
        case kind, state
        case firstCritical = "first_critical"
        case raised
        case triggeringReadings = "triggering_readings"
        case position
        case cancelReason = "cancel_reason"
        case reason
        case discreet
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        deviceID = try c.decode(String.self, forKey: .deviceID)
        kind = try c.decode(AlertKind.self, forKey: .kind)
        state = try c.decode(AlertState.self, forKey: .state)
        firstCritical = try c.decode(ReadingTimestamp.self, forKey: .firstCritical)
        raised = try c.decodeIfPresent(ReadingTimestamp.self, forKey: .raised)
        triggeringReadings = try c.decode([TimedHeartRate].self, forKey: .triggeringReadings)
        position = try c.decodeIfPresent(AlertPosition.self, forKey: .position)
        cancelReason = try c.decodeIfPresent(CancelReason.self, forKey: .cancelReason)
        reason = try c.decodeIfPresent(String.self, forKey: .reason)
        // Journal records written before the flag: a discreet press said so by its reason alone.
        discreet = try c.decodeIfPresent(Bool.self, forKey: .discreet) ?? (kind == .manual && reason == Self.discreetReason)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(kind, forKey: .kind)
        try c.encode(state, forKey: .state)
        try c.encode(firstCritical, forKey: .firstCritical)
        try c.encode(raised, forKey: .raised)
        try c.encode(triggeringReadings, forKey: .triggeringReadings)
        try c.encode(position, forKey: .position)
        try c.encode(cancelReason, forKey: .cancelReason)
        // Only when set: alerts of rules with one signal stay byte for byte what older readers know.
        try c.encodeIfPresent(reason, forKey: .reason)
        if discreet { try c.encode(true, forKey: .discreet) }
    }
}
