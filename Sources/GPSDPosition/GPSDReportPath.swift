public import TrackMeCore

/// The reader's handling of the reports libgps gives it (`GPSDStateMachine`: a TPV with a 2D or
/// 3D fix becomes a `.fix`, one without becomes a `.noFix` state), without the connection, for a
/// source that has the TPVs already: the simulation's fast mode, which reads a position log
/// without gpsd and hands each epoch here, so what reaches the pipeline is what the agent's
/// `GPSDReader` would deliver for it. `now` is the source's clock.
public struct GPSDReportPath: Sendable {
    private var machine = GPSDStateMachine(backoff: .gpsdReconnect, reconnects: false)

    /// Connected to a gpsd with a receiver, as the reader is once gpsd answers.
    public init() {
        _ = machine.receive(.connected, now: .zero)
        _ = machine.receive(.report(.device(activated: true)), now: .zero)
    }

    /// The reader's events for one TPV report.
    public mutating func receive(tpv fix: PositionFix, now: Duration) -> [GPSDEvent] {
        machine.receive(.report(.tpv(fix)), now: now).events
    }
}
