import TrackMeCore

/// Turns connection outcomes and gpsd reports into the reader's events. Pure: time comes in as
/// `now` (the reader's clock, from the start of `events()`), actions go out as return values.
struct GPSDStateMachine: Sendable {
    enum Input: Sendable {
        case connected
        case report(GPSDReport)
        case connectionEnded(GPSDError)
    }

    private(set) var state: GPSDState?
    private var backoff: Backoff
    private let reconnects: Bool
    /// Whether the current connection has delivered a report; only then does the backoff reset,
    /// so something that accepts and drops connections is not hammered at the initial delay.
    private var connectionProductive = false

    init(backoff: Backoff, reconnects: Bool) {
        self.backoff = backoff
        self.reconnects = reconnects
    }

    /// The events to publish, and, after `connectionEnded`, how long to wait before reconnecting
    /// (nil: do not reconnect).
    mutating func receive(_ input: Input, now: Duration) -> (events: [GPSDEvent], retryIn: Duration?) {
        switch input {
        case .connected:
            connectionProductive = false
            return (transition(to: .connected), nil)
        case .report(let report):
            if !connectionProductive {
                connectionProductive = true
                backoff.reset()
            }
            return (receive(report, now: now), nil)
        case .connectionEnded(let error):
            let delay = reconnects ? backoff.nextDelay() : nil
            // Always published, even when unchanged, so each failed attempt is visible.
            let next = GPSDState.disconnected(error, retryIn: delay)
            state = next
            return ([.state(next)], delay)
        }
    }

    private mutating func receive(_ report: GPSDReport, now: Duration) -> [GPSDEvent] {
        switch report {
        case .tpv(let fix):
            if fix.mode >= .twoDimensional {
                return transition(to: .fix(fix.mode)) + [.fix(fix)]
            }
            return lostFix(now: now)
        case .device(let activated):
            return activated ? receiverWithoutFix(now: now) : transition(to: .noDevice)
        case .devices(let count):
            return count == 0 ? transition(to: .noDevice) : receiverWithoutFix(now: now)
        case .other:
            return []
        }
    }

    /// A TPV without a fix: the no-fix period starts now unless one is already running.
    private mutating func lostFix(now: Duration) -> [GPSDEvent] {
        if case .noFix = state { return [] }
        return transition(to: .noFix(since: now))
    }

    /// A receiver is there (DEVICE, DEVICES): it has no fix until a TPV says otherwise. A DEVICE
    /// or DEVICES message while fixed does not end the fix.
    private mutating func receiverWithoutFix(now: Duration) -> [GPSDEvent] {
        switch state {
        case .noFix:
            return []
        case .fix:
            return []
        case .connected, .noDevice, .disconnected, .none:
            return transition(to: .noFix(since: now))
        }
    }

    private mutating func transition(to next: GPSDState) -> [GPSDEvent] {
        guard state != next else { return [] }
        state = next
        return [.state(next)]
    }
}
