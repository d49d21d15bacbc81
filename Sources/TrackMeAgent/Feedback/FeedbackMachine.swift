public import TrackMeCore

/// What the wearer's device shows (an LED pattern, a hook's sound): one state at a time.
public enum FeedbackState: String, Hashable, Sendable, CaseIterable, Codable {
    /// Nothing to say: monitoring as usual.
    case idle
    /// An alert's countdown runs: cancel now if it is a mistake (`safe`, a short button press).
    case countdown
    /// The alert is raised and on its way; the server has not confirmed it yet (offline, retrying).
    case raised
    /// The server has the alert.
    case sent
    /// A rule's alert that calls nobody: the person is not enrolled in AutomatedSOS (the server's
    /// care settings), so no dispatcher sees it and the device calls no one; the SOS button still
    /// calls for help.
    case notDispatched = "not_dispatched"
    /// A person (a dispatcher) acknowledged it: help knows.
    case acknowledged
    /// The alert was resolved; shown for a while, then idle.
    case resolved
    /// No alert, but the strap's battery, or the device's own, is below its warning level.
    case batteryLow = "battery_low"
    /// No alert; a ride is offered to this taxi and waits for the driver's answer
    /// (`trackme-agent taxi accept|refuse`).
    case rideOffer = "ride_offer"
}

/// Turns the pipeline's events into the one `FeedbackState` the outputs show. Pure: time is the
/// caller's clock offset `now`; `receive` returns the state to show when it changed (or when an
/// escalation step asks to remind the wearer that nobody has acknowledged yet), else nil.
///
/// The alert's phase wins over a ride offer, and that over the battery warning; a resolved alert
/// is shown for `resolvedShownFor`, then the device goes back to idle (or the battery warning). A
/// discreet alert is never shown, from its raise to its end: the device goes on showing what it
/// showed before, so whoever threatens the wearer sees nothing change.
public struct FeedbackMachine: Sendable {
    public enum Event: Hashable, Sendable {
        /// An action of the SOS engine (countdown started, raised, delivered, acknowledged,
        /// resolved, cancelled, withdrawn).
        case engine(SOSAction)
        /// The dispatch lane sent this update and the server accepted it.
        case sent(AlertUpdate)
        /// The dispatch lane says the alert is (or is still not) acknowledged.
        case acknowledgement(alertID: String, acknowledged: Bool)
        /// The alert was resolved on the server (a dispatcher's resolve reaching the device comes in
        /// here, as does the engine's `.update` of a resolved record).
        case resolved(alertID: String)
        /// The strap's battery is below (or back above) its warning level.
        case batteryLow(Bool)
        /// The device's own battery is low or critical (`PowerWatch`), or no longer.
        case deviceBatteryLow(Bool)
        /// A ride offer waits for the driver's answer, or no longer (answered or lapsed).
        case rideOffer(Bool)
        /// The person's AutomatedSOS enrolment (the server's care settings): off, a rule's alert
        /// raised from now on is shown as `notDispatched`. An alert already shown keeps its phase.
        case automatedSOS(active: Bool)
        /// Time passed.
        case tick
    }

    fileprivate enum Phase: Hashable, Sendable {
        case none
        case countdown(String)
        case raised(String)
        case sent(String)
        case acknowledged(String)
        case resolved(String, until: Duration)
        case notDispatched(String)
    }

    public let resolvedShownFor: Duration
    private var phase: Phase = .none
    /// The open discreet alert, whose events change nothing shown.
    private var discreetAlertID: String?
    private var batteryLow = false
    private var deviceBatteryLow = false
    private var rideOffered = false
    private var automatedSOS = true
    public private(set) var shown: FeedbackState = .idle

    public init(resolvedShownFor: Duration = .seconds(30)) {
        self.resolvedShownFor = resolvedShownFor
    }

    public mutating func receive(_ event: Event, now: Duration) -> FeedbackState? {
        var remind = false
        if let id = discreetAlertID ?? event.discreetStart(shown: phase.alertID), id == event.alertID {
            discreetAlertID = event.endsAlert ? nil : id
            return receive(.tick, now: now)
        }
        switch event {
        case .engine(let action):
            switch action {
            case .startCountdown(let record, _):
                phase = .countdown(record.id)
            case .raise(let record):
                phase = record.kind == .manual || automatedSOS ? .raised(record.id) : .notDispatched(record.id)
            case .update(let record):
                apply(record.state, id: record.id, now: now)
            case .cancelled(let record), .withdrawn(let record):
                if phase.alertID == record.id || phase.alertID == nil { phase = .none }
            case .positionUpdate, .kindChanged, .logMonitoringPaused, .logMonitoringResumed:
                // A graver kind keeps the alert as it is shown (raised, sent or acknowledged).
                break
            }
        case .sent(let update):
            if update.type == .raised, case .raised(let id) = phase, id == update.alert.id { phase = .sent(id) }
        case .acknowledgement(let id, let acknowledged):
            if acknowledged {
                apply(.acknowledged, id: id, now: now)
            } else if phase.alertID == id {
                // An escalation step: nobody has acknowledged yet; say so again.
                remind = true
            }
        case .resolved(let id):
            apply(.resolved, id: id, now: now)
        case .batteryLow(let low):
            batteryLow = low
        case .deviceBatteryLow(let low):
            deviceBatteryLow = low
        case .rideOffer(let offered):
            rideOffered = offered
        case .automatedSOS(let active):
            automatedSOS = active
        case .tick:
            break
        }
        if case .resolved(_, let until) = phase, now >= until { phase = .none }
        // An alert wins over a ride offer (the driver's SOS is shown as it goes), and an offer,
        // which lapses within seconds, over a battery warning.
        let state = phase.state ?? (rideOffered ? .rideOffer : batteryLow || deviceBatteryLow ? .batteryLow : .idle)
        guard state != shown || remind else { return nil }
        shown = state
        return state
    }

    /// An alert record's new state: only forward (a late "delivered" does not undo "acknowledged").
    private mutating func apply(_ state: AlertState, id: String, now: Duration) {
        guard phase.alertID == id || phase.alertID == nil else { return }
        switch state {
        case .pending:
            break
        case .raised:
            if phase.rank < 2 { phase = .raised(id) }
        case .delivered:
            if phase.rank < 3 { phase = .sent(id) }
        case .acknowledged:
            if phase.rank < 4 { phase = .acknowledged(id) }
        case .resolved:
            if phase.rank < 5 { phase = .resolved(id, until: now + resolvedShownFor) }
        case .cancelled:
            phase = .none
        }
    }
}

extension FeedbackMachine.Phase {
    var alertID: String? {
        switch self {
        case .none: nil
        case .countdown(let id), .raised(let id), .sent(let id), .acknowledged(let id), .resolved(let id, _), .notDispatched(let id): id
        }
    }

    var rank: Int {
        switch self {
        case .none: 0
        case .countdown: 1
        case .raised: 2
        // The server's answer to an alert it keeps from dispatchers is no "sent".
        case .sent, .notDispatched: 3
        case .acknowledged: 4
        case .resolved: 5
        }
    }

    var state: FeedbackState? {
        switch self {
        case .none: nil
        case .countdown: .countdown
        case .raised: .raised
        case .sent: .sent
        case .acknowledged: .acknowledged
        case .resolved: .resolved
        case .notDispatched: .notDispatched
        }
    }
}

extension FeedbackMachine.Event {
    /// The alert this event is about, if any.
    var alertID: String? {
        switch self {
        case .engine(let action):
            switch action {
            case .startCountdown(let record, _), .raise(let record), .update(let record), .cancelled(let record), .withdrawn(let record),
                .positionUpdate(let record), .kindChanged(let record):
                record.id
            case .logMonitoringPaused, .logMonitoringResumed: nil
            }
        case .sent(let update): update.alert.id
        case .acknowledgement(let id, _), .resolved(let id): id
        case .batteryLow, .deviceBatteryLow, .rideOffer, .automatedSOS, .tick: nil
        }
    }

    /// The id of a discreet alert (`AlertRecord.isDiscreet`) this event starts showing: its
    /// countdown, its raise, or an update of one not shown yet (an alert restored at start).
    func discreetStart(shown: String?) -> String? {
        guard case .engine(let action) = self else { return nil }
        switch action {
        case .startCountdown(let record, _), .raise(let record): return record.isDiscreet ? record.id : nil
        case .update(let record): return record.id == shown || !record.isDiscreet ? nil : record.id
        case .cancelled, .withdrawn, .positionUpdate, .kindChanged, .logMonitoringPaused, .logMonitoringResumed: return nil
        }
    }

    /// Whether the alert ends with this event (cancelled, withdrawn, resolved).
    var endsAlert: Bool {
        switch self {
        case .engine(.cancelled), .engine(.withdrawn), .resolved: true
        case .engine(.update(let record)): !record.state.isOpen
        default: false
        }
    }
}
