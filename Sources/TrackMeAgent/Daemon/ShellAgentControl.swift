public import TrackMeCore

/// The control `trackme-agent run` answers with until the pipeline is wired in: it reports the
/// shell's own state truthfully (uptime, pause flag, every pipeline part `not_started`) and
/// refuses `sos` and `safe` with `unavailable`, since there is no SOS engine to act on them.
///
/// The lead replaces it with the pipeline's control; nothing else depends on it.
public actor ShellAgentControl: AgentControl {
    private let deviceID: String
    private let budgetBytes: Int
    private let clock: ContinuousClock
    private let started: ContinuousClock.Instant
    private var paused = false

    public init(configuration: AgentConfiguration, clock: ContinuousClock = ContinuousClock()) {
        deviceID = configuration.server.deviceID
        budgetBytes = configuration.store.diskBudgetBytes
        self.clock = clock
        started = clock.now
    }

    public func status() -> AgentStatus {
        let uptime = started.duration(to: clock.now)
        return AgentStatus(
            deviceID: deviceID,
            uptimeSeconds: Double(uptime.components.seconds) + Double(uptime.components.attoseconds) / 1e18,
            monitoringPaused: paused,
            store: StoreStatus(depth: 0, bytes: 0, budgetBytes: budgetBytes)
        )
    }

    public func triggerSOS() throws -> AlertStatus {
        throw AgentControlError(code: .unavailable, message: "the SOS engine is not running in this build")
    }

    public func markSafe(reason: CancelReason) throws -> AlertStatus {
        throw AgentControlError(code: .unavailable, message: "the SOS engine is not running in this build")
    }

    public func pauseMonitoring() -> MonitoringState {
        paused = true
        return MonitoringState(paused: true)
    }

    public func resumeMonitoring() -> MonitoringState {
        paused = false
        return MonitoringState(paused: false)
    }
}
