/// Whether the BLE link to the strap is up, as the heart-rate source reports it.
public enum StrapLinkState: String, Hashable, Sendable, Codable {
    case connected
    case disconnected
}

/// Something the SOS engine learns. Each comes with `now`, the time it happened (the reading's
/// own timestamp for a reading), passed to `SOSEngine.receive(_:now:)`.
public enum SOSEvent: Hashable, Sendable {
    /// One Heart Rate Measurement notification, taken at `now`.
    case heartRate(HeartRateReading)
    /// The strap connected or the link dropped.
    case strapLink(StrapLinkState)
    /// A position report from gpsd, taken at `now`. Reports without a position (no fix) do not
    /// replace the last known position.
    case position(PositionFix)
    /// The wearer asked for help (command or button).
    case manualSOS
    /// The wearer asked for help without the device showing it (a wearer under threat): raised at
    /// once, with no countdown to show or cancel, the alert's `reason` `discreet`. The device
    /// lights and sounds nothing for that alert; positions go on as for any alert.
    case discreetSOS
    /// The wearer (or someone for them) cancelled the open alert.
    case cancel(CancelReason)
    /// Monitoring paused (strap taken off on purpose) or resumed. Manual SOS still works while
    /// paused, and an open alert keeps its lifecycle, except that pausing withdraws a pending
    /// contact-lost or strap-silent countdown.
    case pause
    case resume
    /// The server accepted the alert.
    case delivered(alertID: String)
    /// A dispatcher or contact confirmed the alert.
    case acknowledged(alertID: String)
    /// The alert is over (a dispatcher closed it).
    case resolved(alertID: String)
    /// Time passed: drives the countdown and the time-based rules (strap silent, contact lost).
    /// The agent sends one at least every 250 ms.
    case tick
}

/// What the shell must do after an event, in order.
public enum SOSAction: Hashable, Sendable {
    /// A rule fired with a countdown: show it (display, buzzer) until `deadline`; the wearer can
    /// cancel. Nothing is dispatched yet.
    case startCountdown(AlertRecord, deadline: ReadingTimestamp)
    /// Journal the alert durably, then hand it to the dispatch lane. State `raised`.
    case raise(AlertRecord)
    /// The open alert changed state (`delivered`, `acknowledged`, `resolved`): journal it; a
    /// `resolved` one also goes to the dispatch lane.
    case update(AlertRecord)
    /// A newer last known position for the open, raised alert: hand it to the dispatch lane.
    case positionUpdate(AlertRecord)
    /// A graver rule fired while the alert was open: the alert now has that rule's kind (state
    /// unchanged). Hand it to the dispatch lane at once (`kind_changed`); see SOS-RULES.md.
    case kindChanged(AlertRecord)
    /// The wearer cancelled the alert (`cancelReason` set). If `raised` is non-nil it was
    /// dispatched: journal it and tell the dispatch lane; otherwise just stop the countdown.
    case cancelled(AlertRecord)
    /// A technical alert's countdown stopped because the signal came back (state `cancelled`,
    /// no reason). It was never raised: nothing to dispatch; log it.
    case withdrawn(AlertRecord)
    /// Log that monitoring was paused or resumed.
    case logMonitoringPaused
    case logMonitoringResumed
}

/// Makes the identifiers of new alerts. Injected so that tests and the simulation are
/// deterministic; the agent uses random UUIDs.
public protocol AlertIDGenerator: Sendable {
    mutating func next() -> String
}

/// `prefix-1`, `prefix-2`, ...: for tests and simulations.
public struct SequentialAlertIDs: AlertIDGenerator {
    public var prefix: String
    public private(set) var count = 0

    public init(prefix: String = "alert") { self.prefix = prefix }

    public mutating func next() -> String {
        count += 1
        return "\(prefix)-\(count)"
    }
}
