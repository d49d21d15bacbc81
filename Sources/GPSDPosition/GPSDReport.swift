import TrackMeCore

/// One report read from gpsd, already turned into Swift values (sans-I/O input of
/// `GPSDStateMachine`).
enum GPSDReport: Hashable, Sendable {
    /// A TPV, whatever its mode.
    case tpv(PositionFix)
    /// A DEVICE message: the receiver was opened (`true`) or closed (`false`).
    case device(activated: Bool)
    /// A DEVICES list with this many active receivers.
    case devices(count: Int)
    /// Anything else (VERSION, WATCH, SKY, ERROR, ...).
    case other
}
