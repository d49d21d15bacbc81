/// The lifecycle of a person's one open alert:
///
///     normal -> pending (countdown) -> raised -> delivered -> acknowledged -> resolved
///                  |  \-> withdrawn (technical rule, signal came back)
///                  \------------------+-----------+--------------+-> cancelled (with a reason)
///
/// `raised` may also be reached at once (countdown zero) and `acknowledged` straight from
/// `raised` (the acknowledgement can overtake the server's receipt). It also keeps the last
/// known position, which every raised alert and position update carries. Pure: time comes in as
/// `now`, identifiers inside the records it is given.
public struct AlertStateMachine: Hashable, Sendable {
    public enum Event: Hashable, Sendable {
        /// A rule fired: `record` (state `pending`, with its identifier, kind, first critical
        /// time and readings) starts a countdown of `countdown`, or is raised at once if zero.
        /// Ignored while an alert is open.
        case fire(AlertRecord, countdown: Duration)
        /// Another rule fired while an alert is pending: the countdown becomes at most
        /// `countdown` from now, and the alert takes that rule's kind if this shortens it.
        /// While an alert is raised (open), a graver rule (higher `AlertKind.severity`) gives the
        /// alert its kind; a rule no graver changes nothing.
        /// `reason` is the new rule's signal (`AlertRecord.reason`), if it names one.
        case escalate(AlertKind, countdown: Duration, reason: String? = nil)
        /// The wearer confirmed during the countdown (pressed SOS): raise at once.
        case confirm
        /// The condition of a technical rule cleared: a pending alert of that kind is withdrawn.
        case withdraw(AlertKind)
        case cancel(CancelReason)
        case delivered(alertID: String)
        case acknowledged(alertID: String)
        case resolved(alertID: String)
        /// A position report; only fixes that place the wearer replace the last known position.
        case position(PositionFix)
        /// Time passed: a countdown that reached its deadline raises the alert.
        case tick
    }

    private enum State: Hashable, Sendable {
        case normal
        case pending(AlertRecord, deadline: ReadingTimestamp)
        /// Raised, delivered or acknowledged (the record's `state` says which).
        case open(AlertRecord)
    }

    private var state: State = .normal
    private var lastFix: PositionFix?
    private var lastFixTime: ReadingTimestamp?

    public init() {}

    /// Restores the lifecycle after a restart from the journal: an alert that was raised,
    /// delivered or acknowledged and never closed is open again. Any other record (pending
    /// alerts are never journaled; closed ones are over) leaves it normal.
    public init(restoring alert: AlertRecord?) {
        guard let alert else { return }
        switch alert.state {
        case .raised, .delivered, .acknowledged: state = .open(alert)
        case .pending, .resolved, .cancelled: break
        }
    }

    /// The open alert (pending, raised, delivered or acknowledged), if any.
    public var alert: AlertRecord? {
        switch state {
        case .normal: nil
        case .pending(let record, _), .open(let record): record
        }
    }

    /// When the pending alert's countdown ends, if one is running.
    public var countdownDeadline: ReadingTimestamp? {
        switch state {
        case .normal, .open: nil
        case .pending(_, let deadline): deadline
        }
    }

    /// No alert is open: a rule that fires starts a new one.
    public var isNormal: Bool {
        switch state {
        case .normal: true
        case .pending, .open: false
        }
    }

    /// The last known position as of `now`, or nil if there never was a fix.
    public func lastKnownPosition(at now: ReadingTimestamp) -> AlertPosition? {
        guard let fix = lastFix, let time = lastFixTime else { return nil }
        guard let age = now.milliseconds(since: time) else { return nil }
        return AlertPosition(fix: fix, ageMilliseconds: max(0, age))
    }

    public mutating func receive(_ event: Event, now: ReadingTimestamp) -> [SOSAction] {
        switch event {
        case .fire(var record, let countdown):
            guard case .normal = state else { return [] }
            record.position = lastKnownPosition(at: now)
            if countdown <= .zero { return [raise(record, now: now)] }
            record.state = .pending
            let deadline = Self.advance(now, by: countdown)
            state = .pending(record, deadline: deadline)
            return [.startCountdown(record, deadline: deadline)]

        case .escalate(let kind, let countdown, let reason):
            if case .open(var record) = state {
                guard kind.severity > record.kind.severity else { return [] }
                record.kind = kind
                record.reason = reason
                state = .open(record)
                return [.kindChanged(record)]
            }
            guard case .pending(var record, let deadline) = state else { return [] }
            let proposed = Self.advance(now, by: max(.zero, countdown))
            guard proposed.monotonicNanoseconds < deadline.monotonicNanoseconds else { return [] }
            if record.kind != kind { record.reason = reason }
            record.kind = kind
            if countdown <= .zero { return [raise(record, now: now)] }
            state = .pending(record, deadline: proposed)
            return [.startCountdown(record, deadline: proposed)]

        case .confirm:
            guard case .pending(let record, _) = state else { return [] }
            return [raise(record, now: now)]

        case .withdraw(let kind):
            guard case .pending(var record, _) = state, record.kind == kind else { return [] }
            record.state = .cancelled
            state = .normal
            return [.withdrawn(record)]

        case .cancel(let reason):
            switch state {
            case .normal: return []
            case .pending(var record, _), .open(var record):
                record.state = .cancelled
                record.cancelReason = reason
                state = .normal
                return [.cancelled(record)]
            }

        case .delivered(let id):
            return transition(id: id, to: .delivered)

        case .acknowledged(let id):
            return transition(id: id, to: .acknowledged)

        case .resolved(let id):
            return transition(id: id, to: .resolved)

        case .position(let fix):
            guard fix.hasPosition else { return [] }
            lastFix = fix
            lastFixTime = now
            guard case .open(var record) = state else { return [] }
            record.position = lastKnownPosition(at: now)
            state = .open(record)
            return [.positionUpdate(record)]

        case .tick:
            guard case .pending(let record, let deadline) = state,
                now.monotonicNanoseconds >= deadline.monotonicNanoseconds
            else { return [] }
            return [raise(record, now: now)]
        }
    }

    private mutating func raise(_ pending: AlertRecord, now: ReadingTimestamp) -> SOSAction {
        var record = pending
        record.state = .raised
        record.raised = now
        record.position = lastKnownPosition(at: now)
        state = .open(record)
        return .raise(record)
    }

    /// Moves an open alert forward to `target` (delivered, acknowledged or resolved). Messages
    /// for another alert, repeated ones and ones that would move it backwards change nothing.
    private mutating func transition(id: String, to target: AlertState) -> [SOSAction] {
        guard case .open(var record) = state, record.id == id else { return [] }
        guard Self.rank(target) > Self.rank(record.state) else { return [] }
        record.state = target
        state = target.isOpen ? .open(record) : .normal
        return [.update(record)]
    }

    private static func rank(_ state: AlertState) -> Int {
        switch state {
        case .pending: 0
        case .raised: 1
        case .delivered: 2
        case .acknowledged: 3
        case .resolved, .cancelled: 4
        }
    }

    static func advance(_ t: ReadingTimestamp, by duration: Duration) -> ReadingTimestamp {
        var result = t
        let nanos = max(0, duration.nanoseconds)
        result.monotonicNanoseconds = t.monotonicNanoseconds &+ UInt64(nanos)
        if let wall = t.wallClockMilliseconds { result.wallClockMilliseconds = wall + nanos / 1_000_000 }
        return result
    }
}

extension Duration {
    /// The whole milliseconds in this duration (truncated toward zero): for wire fields, poll
    /// timeouts and virtual-clock offsets alike.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The whole nanoseconds in this duration, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }
}
