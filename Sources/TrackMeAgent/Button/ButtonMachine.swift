public import TrackMeCore

/// The SOS button's press-length rules, pure: key down and up (the kernel's `EV_KEY` values 1
/// and 0) and ticks, each with the caller's clock offset `now`, and the alert state the pipeline
/// reports; it answers with what to ask of the SOS engine, if anything.
///
/// - Held for `longPress` (default 2 s) with no alert open: a manual SOS, sent as soon as the
///   hold reaches it (the wearer need not let go).
/// - A short press while a countdown runs: cancel it, reason `accidental`.
/// - Anything else does nothing: a long press during a countdown or while an alert is open, a
///   short press with no countdown. A raised alert is never cancelled by the button: a bump
///   against a door must not call off help (the wearer has `trackme-agent safe`).
public struct ButtonMachine: Hashable, Sendable {
    public enum Event: Hashable, Sendable {
        case down
        case up
        case tick
    }

    /// What the button asks of the SOS engine.
    public enum Action: Hashable, Sendable {
        case manualSOS
        case cancel(CancelReason)
    }

    public let longPress: Duration
    private var pressedAt: Duration?
    /// This hold already counted as long (it fired, or was ignored): its release is nothing.
    private var holdHandled = false

    public init(longPress: Duration = .seconds(2)) {
        self.longPress = longPress
    }

    /// Whether the button is held now.
    public var isPressed: Bool { pressedAt != nil }

    /// - Parameter alert: the state of the person's open alert, nil when none is open.
    public mutating func receive(_ event: Event, now: Duration, alert: AlertState?) -> Action? {
        switch event {
        case .down:
            // A second "down" without an "up" (a lost event) keeps the first press's start.
            if pressedAt == nil {
                pressedAt = now
                holdHandled = false
            }
            return nil
        case .tick:
            return longHold(now: now, alert: alert)
        case .up:
            guard pressedAt != nil else { return nil }
            // A release with no tick since the hold passed `longPress` still counts as long.
            let long = longHold(now: now, alert: alert)
            pressedAt = nil
            if holdHandled { return long }
            return alert == .pending ? .cancel(.accidental) : nil
        }
    }

    private mutating func longHold(now: Duration, alert: AlertState?) -> Action? {
        guard let start = pressedAt, !holdHandled, now - start >= longPress else { return nil }
        holdHandled = true
        return alert == nil ? .manualSOS : nil
    }
}
