public import TrackMeCore

/// The SOS button's press-length rules, pure: key down and up (the kernel's `EV_KEY` values 1
/// and 0) and ticks, each with the caller's clock offset `now`, and the alert state the pipeline
/// reports; it answers with what to ask of the SOS engine, if anything.
///
/// - Held for `longPress` (default 2 s) with no alert open: a manual SOS, sent as soon as the
///   hold reaches it (the wearer need not let go).
/// - A short press while a countdown runs: cancel it, reason `accidental`.
/// - `discreetPresses` short presses (default 3) within `discreetWindow` (3 s) with no alert open:
///   a discreet SOS (`SOSEvent.discreetSOS`), for a wearer who cannot be seen calling for help.
///   With `discreetLongPress` the long hold is discreet too.
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
        case discreetSOS
        case cancel(CancelReason)
    }

    public let longPress: Duration
    /// Short presses that make a discreet SOS; 0 turns the pattern off.
    public let discreetPresses: Int
    public let discreetWindow: Duration
    public let discreetLongPress: Bool
    private var pressedAt: Duration?
    /// This hold already counted as long (it fired, or was ignored): its release is nothing.
    private var holdHandled = false
    /// When each recent short press with no alert open began, oldest first.
    private var shortPresses: [Duration] = []

    public init(longPress: Duration = .seconds(2), discreetPresses: Int = 3, discreetWindow: Duration = .seconds(3), discreetLongPress: Bool = false)
    {
        self.longPress = longPress
        self.discreetPresses = max(0, discreetPresses)
        self.discreetWindow = discreetWindow
        self.discreetLongPress = discreetLongPress
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
            guard let start = pressedAt else { return nil }
            // A release with no tick since the hold passed `longPress` still counts as long.
            let long = longHold(now: now, alert: alert)
            pressedAt = nil
            if holdHandled {
                shortPresses = []
                return long
            }
            if alert == .pending {
                shortPresses = []
                return .cancel(.accidental)
            }
            return shortPress(startedAt: start, alert: alert)
        }
    }

    private mutating func shortPress(startedAt start: Duration, alert: AlertState?) -> Action? {
        guard discreetPresses > 0, alert == nil else {
            shortPresses = []
            return nil
        }
        shortPresses.append(start)
        shortPresses.removeAll { start - $0 > discreetWindow }
        guard shortPresses.count >= discreetPresses else { return nil }
        shortPresses = []
        return .discreetSOS
    }

    private mutating func longHold(now: Duration, alert: AlertState?) -> Action? {
        guard let start = pressedAt, !holdHandled, now - start >= longPress else { return nil }
        holdHandled = true
        guard alert == nil else { return nil }
        return discreetLongPress ? .discreetSOS : .manualSOS
    }
}
