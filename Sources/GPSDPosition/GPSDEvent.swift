public import TrackMeCore

/// What the reader delivers: position fixes and changes of its state, in one ordered stream, so
/// a consumer sees a state change exactly between the fixes it separates.
public enum GPSDEvent: Hashable, Sendable {
    /// A TPV with mode 2D or 3D. Fields gpsd did not send are nil.
    case fix(PositionFix)
    /// The reader's state changed (emitted on transitions only, not per report).
    case state(GPSDState)
}

/// The reader's view of gpsd and the receiver behind it, for the SOS rules and `status`.
public enum GPSDState: Hashable, Sendable {
    /// Not connected to gpsd: the last attempt failed or the connection dropped. The next
    /// attempt is after `retryIn` on the reader's clock; nil when the reader does not reconnect
    /// (the stream then finishes).
    case disconnected(GPSDError, retryIn: Duration?)
    /// Connected and watching; gpsd has not yet said whether a receiver is active.
    case connected
    /// gpsd runs but has no active receiver (none configured, or it was unplugged / closed).
    case noDevice
    /// A receiver is active but reports no 2D/3D fix. `since` is the time on the reader's clock,
    /// measured from the start of `events()`, when the fix was lost or the receiver appeared.
    case noFix(since: Duration)
    /// The receiver reports a fix of this mode.
    case fix(FixMode)
}
