import EdgeStore
import Metrics
public import TrackMeCore

/// The running pipeline's `AgentControl`: answers the control socket from the agent's one
/// state (`AgentState`, which the pipeline and the sources record into), and turns `sos`,
/// `safe`, `pause` and `resume` into SOS engine events through the shared `AgentPipeline`.
public actor PipelineControl: AgentControl {
    nonisolated let pipeline: AgentPipeline
    private nonisolated var state: AgentStateCell { pipeline.state }
    private let timestamps: AgentTimestamps
    private let storeDepth = Gauge(label: AgentMetricNames.storeDepth)
    private let storeBytes = Gauge(label: AgentMetricNames.storeBytes)
    private let storeMemoryOnly = Gauge(label: AgentMetricNames.storeMemoryOnly)
    private let storeQuarantined = Gauge(label: AgentMetricNames.storeQuarantined)
    /// The wearer's LED and hook; nil when none is wired (tests of the control alone).
    private let feedback: FeedbackDriver?
    /// A taxi's ride offer or ride, and the way its driver's answers go to the server (nil
    /// where nothing can be answered: other profiles, tests of the control alone).
    private var rideTerminal = RideTerminal()
    private var rideAnswers: RideAnswerSender?
    /// Told when a new offer is shown (the simulation's offer-to-terminal figure).
    private var onRideOffer: (@Sendable (RideNotice) -> Void)?

    public init(pipeline: AgentPipeline, timestamps: AgentTimestamps) {
        self.init(pipeline: pipeline, timestamps: timestamps, feedback: nil)
    }

    /// A device of the simulation's crowd: its profile, no feedback.
    package init(
        pipeline: AgentPipeline,
        timestamps: AgentTimestamps,
        profile: DeviceProfile,
        rideAnswers: RideAnswerSender? = nil,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil
    ) {
        self.init(
            pipeline: pipeline,
            timestamps: timestamps,
            feedback: nil,
            profile: profile,
            rideAnswers: rideAnswers,
            onRideOffer: onRideOffer
        )
    }

    init(
        pipeline: AgentPipeline,
        timestamps: AgentTimestamps,
        feedback: FeedbackDriver?,
        profile: DeviceProfile = .wearer,
        run: RunParticipation? = nil,
        rideAnswers: RideAnswerSender? = nil,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil
    ) {
        self.rideAnswers = profile == .taxi ? rideAnswers : nil
        self.onRideOffer = onRideOffer
        self.pipeline = pipeline
        self.timestamps = timestamps
        self.feedback = feedback
        pipeline.state.update { state, _ in
            state.profile = profile
            state.run = profile == .runner ? run : nil
        }
    }

    // MARK: Observations from the services

    /// The strap's battery level: recorded, and a change of "low" shown to the wearer.
    nonisolated func strapBattery(_ percent: Int) {
        let (was, low) = state.update { state, now in (state.strapBatteryLow, state.record(strapBattery: percent, at: now)) }
        if was != low { feedback?.receive(.batteryLow(low)) }
    }

    /// Something the dispatch lane or the server said about the alert, for the wearer's feedback.
    nonisolated func feedback(_ event: FeedbackMachine.Event) { feedback?.receive(event) }

    /// Reads the store's depth and size into the state and the gauges.
    nonisolated func refreshStore(_ statistics: StoreStatistics) {
        state.update { state, now in state.record(store: statistics, at: now) }
        storeDepth.record(statistics.unsyncedReadings)
        storeBytes.record(max(0, statistics.usedBytes))
        storeMemoryOnly.record(statistics.memoryOnlyReason == nil ? 0 : 1)
        storeQuarantined.record(statistics.quarantinedReadings)
    }

    // MARK: AgentControl

    public func status() async -> AgentStatus {
        refreshStore(pipeline.store.statistics())
        return state.current.status(now: timestamps.now(), feedback: feedback?.shown)
    }

    public func triggerSOS(discreet: Bool) async throws -> AlertStatus {
        let now = timestamps.now()
        await pipeline.receive(discreet ? .discreetSOS : .manualSOS, at: now)
        let current = state.current
        guard let open = current.openAlert else {
            throw AgentControlError(code: .internal, message: "the SOS engine opened no alert")
        }
        return current.alertStatus(open, now: timestamps.now())
    }

    public func markSafe(reason: CancelReason) async throws -> AlertStatus {
        guard let open = state.current.openAlert, open.state.isOpen else {
            throw AgentControlError(code: .noOpenAlert, message: "there is no open alert to cancel")
        }
        let actions = await pipeline.receive(.cancel(reason), at: timestamps.now())
        for action in actions {
            if case .cancelled(let record) = action { return AlertStatus(record) }
        }
        // The engine kept it open (for example a resolved race): report what it holds now.
        return AlertStatus(state.current.openAlert ?? open)
    }

    public func pauseMonitoring() async -> MonitoringState {
        await pipeline.receive(.pause, at: timestamps.now())
        return MonitoringState(paused: true)
    }

    public func resumeMonitoring() async -> MonitoringState {
        await pipeline.receive(.resume, at: timestamps.now())
        return MonitoringState(paused: false)
    }

    // MARK: Taxi rides

    /// The ride notice of a batch reply: a new offer is shown on the feedback outputs at once.
    package func rideNotice(_ notice: RideNotice) {
        guard profile == .taxi else { return }
        if rideTerminal.receive(notice, now: monotonicNow()) { onRideOffer?(notice) }
        feedback?.receive(.rideOffer(rideTerminal.offerWaiting))
    }

    /// An offer whose window passed unanswered is no longer shown (the server counts the
    /// silence as a refusal).
    package func rideTick() {
        if rideTerminal.tick(now: monotonicNow()) { feedback?.receive(.rideOffer(false)) }
    }

    public func ride(_ action: ControlRequest.RideAction) async throws -> RideNotice? {
        guard profile == .taxi else {
            throw AgentControlError(code: .unavailable, message: "this agent's profile is \(profile.rawValue), not taxi")
        }
        rideTick()
        guard let event = action.event else { return rideTerminal.view(now: monotonicNow()) }
        guard let notice = rideTerminal.current else {
            throw AgentControlError(code: .refused, message: "no ride offer or ride to \(action.rawValue)")
        }
        guard let rideAnswers else { throw AgentControlError(code: .unavailable, message: "this agent does not talk to a server") }
        if let refusal = await rideAnswers.send(RideAnswer(offerID: notice.offerID, event: event)) {
            // An offer that lapsed or went to another taxi is gone from the server: no longer
            // shown here either (an accepted ride stays whatever a stray answer was told).
            if notice.stage == .offered, refusal.message.hasPrefix("offer_expired") || refusal.message.hasPrefix("offer_closed") {
                rideTerminal.answered(.refuse)
                feedback?.receive(.rideOffer(false))
            }
            throw refusal
        }
        // The answer may have waited on the network: the terminal may have moved on meanwhile.
        guard rideTerminal.current?.offerID == notice.offerID else { return rideTerminal.view(now: monotonicNow()) }
        rideTerminal.answered(event)
        feedback?.receive(.rideOffer(rideTerminal.offerWaiting))
        switch event {
        case .accept:
            _ = try? await taxi(.rideStart)
        case .complete, .missingClient:
            _ = try? await taxi(.rideEnd)
        case .refuse, .pickup:
            break
        }
        return rideTerminal.view(now: monotonicNow())
    }

    private func monotonicNow() -> Duration { .nanoseconds(Int64(clamping: timestamps.now().monotonicNanoseconds)) }

    // MARK: Profiles

    private nonisolated var profile: DeviceProfile { state.current.profile }

    public func taxi(_ event: TaxiStateMachine.Event) async throws -> ProfileState {
        guard profile == .taxi else {
            throw AgentControlError(code: .unavailable, message: "this agent's profile is \(profile.rawValue), not taxi")
        }
        let outcome: Result<(Bool, ProfileState), TaxiStateMachine.Refusal> = state.update { state, _ in
            do throws(TaxiStateMachine.Refusal) {
                let changed = try state.taxi.receive(event)
                return .success((changed, state.profileState))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .failure(let error):
            throw AgentControlError(code: .refused, message: error.message)
        case .success(let (changed, profileState)):
            // A change goes out with the next fix, at once rather than at the next 30 s report.
            if changed { await pipeline.forceNextPosition() }
            return profileState
        }
    }

    public func joinRun(code: String, show: Bool, shareHealth: Bool) async throws -> ProfileState {
        guard profile == .runner else {
            throw AgentControlError(code: .unavailable, message: "this agent's profile is \(profile.rawValue), not runner")
        }
        let run = RunParticipation(code: code, showToSpectators: show, shareHealth: shareHealth)
        return state.update { state, _ in
            state.run = run
            return state.profileState
        }
    }

    public func checkInToRun() async throws -> ProfileState {
        let wall = timestamps.now().wallClockMilliseconds
        let checkIn: (checkedIn: Bool, state: ProfileState)? = state.update { state, _ in
            guard state.profile == .runner, var joined = state.run else { return nil }
            guard joined.checkedInMilliseconds == nil else { return (false, state.profileState) }
            joined.checkedInMilliseconds = wall
            state.run = joined
            return (true, state.profileState)
        }
        guard let checkIn else {
            throw AgentControlError(code: .refused, message: "join a run first (trackme-agent run-join CODE)")
        }
        if checkIn.checkedIn { await pipeline.forceNextPosition() }
        return checkIn.state
    }
}
