import EdgeStore
import Metrics
public import TrackMeCore

/// The running pipeline's `AgentControl`: answers the control socket from a `StatusBoard` the
/// services feed, and turns `sos`, `safe`, `pause` and `resume` into SOS engine events through
/// the shared `AgentPipeline`.
public actor PipelineControl: AgentControl {
    private var board: StatusBoard
    nonisolated let pipeline: AgentPipeline
    private let timestamps: AgentTimestamps
    private let storeDepth = Gauge(label: AgentMetricNames.storeDepth)
    private let storeBytes = Gauge(label: AgentMetricNames.storeBytes)
    private let storeMemoryOnly = Gauge(label: AgentMetricNames.storeMemoryOnly)
    private let storeQuarantined = Gauge(label: AgentMetricNames.storeQuarantined)
    /// The wearer's LED and hook; nil when none is wired (tests of the control alone).
    private let feedback: FeedbackDriver?
    /// The sync heartbeat's view of pause (the server learns the wearer paused).
    private let heartbeat: HeartbeatState?
    /// The device's profile, a taxi's availability and a runner's run.
    private let profile: DeviceProfile
    private var taxiMachine = TaxiStateMachine()
    private var run: RunParticipation?
    /// A taxi's ride offer or ride, and the way its driver's answers go to the server (nil
    /// where nothing can be answered: other profiles, tests of the control alone).
    private var rideTerminal = RideTerminal()
    private var rideAnswers: RideAnswerSender?
    /// Told when a new offer is shown (the simulation's offer-to-terminal figure).
    private var onRideOffer: (@Sendable (RideNotice) -> Void)?

    public init(pipeline: AgentPipeline, deviceID: String, storeBudgetBytes: Int, timestamps: AgentTimestamps) {
        self.init(pipeline: pipeline, deviceID: deviceID, storeBudgetBytes: storeBudgetBytes, timestamps: timestamps, feedback: nil, heartbeat: nil)
    }

    /// A device of the simulation's crowd: its profile and heartbeat, no feedback.
    package init(
        pipeline: AgentPipeline,
        deviceID: String,
        storeBudgetBytes: Int,
        timestamps: AgentTimestamps,
        heartbeat: HeartbeatState,
        profile: DeviceProfile,
        rideAnswers: RideAnswerSender? = nil,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil
    ) {
        self.init(
            pipeline: pipeline,
            deviceID: deviceID,
            storeBudgetBytes: storeBudgetBytes,
            timestamps: timestamps,
            feedback: nil,
            heartbeat: heartbeat,
            profile: profile,
            rideAnswers: rideAnswers,
            onRideOffer: onRideOffer
        )
    }

    init(
        pipeline: AgentPipeline,
        deviceID: String,
        storeBudgetBytes: Int,
        timestamps: AgentTimestamps,
        feedback: FeedbackDriver?,
        heartbeat: HeartbeatState?,
        profile: DeviceProfile = .wearer,
        run: RunParticipation? = nil,
        rideAnswers: RideAnswerSender? = nil,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil
    ) {
        self.rideAnswers = profile == .taxi ? rideAnswers : nil
        self.onRideOffer = onRideOffer
        let joined = profile == .runner ? run : nil
        self.profile = profile
        self.run = joined
        heartbeat?.profile(profile)
        heartbeat?.taxiState(profile == .taxi ? TaxiStateMachine().state : nil)
        heartbeat?.run(joined)
        self.pipeline = pipeline
        self.timestamps = timestamps
        self.feedback = feedback
        self.heartbeat = heartbeat
        board = StatusBoard(deviceID: deviceID, started: timestamps.now(), storeBudgetBytes: storeBudgetBytes)
    }

    // MARK: Observations from the services

    func strapLink(_ state: StrapStatus.LinkState, address: String? = nil) {
        board.strapLink = state
        if let address { board.strapAddress = address }
    }

    func strapBattery(_ percent: Int, low: Bool) {
        board.strapBatteryPercent = percent
        if board.strapBatteryLow != low { feedback?.receive(.batteryLow(low)) }
        board.strapBatteryLow = low
    }

    func strapBodyLocation(_ location: String) { board.strapBodyLocation = location }

    /// Something the dispatch lane or the server said about the alert, for the wearer's feedback.
    func feedback(_ event: FeedbackMachine.Event) { feedback?.receive(event) }

    func heartRate(_ reading: HeartRateReading, at time: ReadingTimestamp) { board.record(heartRate: reading, at: time) }

    func gpsd(_ state: GPSDStatus.ConnectionState) { board.gpsdConnection = state }

    func fix(_ fix: PositionFix, at time: ReadingTimestamp) { board.record(fix: fix, at: time) }

    func syncSucceeded(at time: ReadingTimestamp) { board.recordSyncSuccess(at: time) }

    func syncFailed(_ message: String) { board.recordSyncFailure(message) }

    /// Notes countdown deadlines from the actions the engine returned (the only place they appear).
    func observe(_ actions: [SOSAction]) {
        for action in actions {
            feedback?.receive(.engine(action))
            switch action {
            case .startCountdown(let record, let deadline): board.record(alert: record, countdownDeadline: deadline)
            case .raise(let record), .update(let record), .positionUpdate(let record), .cancelled(let record), .withdrawn(let record),
                .kindChanged(let record):
                board.record(alert: record)
            case .logMonitoringPaused:
                heartbeat?.paused(true)
            case .logMonitoringResumed:
                heartbeat?.paused(false)
            }
        }
    }

    /// Reads the store's depth and size into the board and the gauges.
    func refreshStore(_ statistics: StoreStatistics) {
        board.store.depth = statistics.unsyncedReadings
        board.store.bytes = Int(max(0, statistics.usedBytes))
        board.store.state = statistics.storeState
        board.store.problem = statistics.memoryOnlyReason ?? (statistics.health == .healthy ? nil : statistics.health.rawValue)
        board.store.quarantined = statistics.quarantinedReadings
        board.store.unsalvageable = statistics.unsalvageableRows
        board.store.keyID = statistics.encryptionKeyID
        storeDepth.record(statistics.unsyncedReadings)
        storeBytes.record(max(0, statistics.usedBytes))
        storeMemoryOnly.record(statistics.memoryOnlyReason == nil ? 0 : 1)
        storeQuarantined.record(statistics.quarantinedReadings)
    }

    // MARK: AgentControl

    public func status() async -> AgentStatus {
        refreshStore(pipeline.store.statistics())
        let current = await pipeline.current
        board.monitoringPaused = !current.monitoring
        board.limits = LimitsStatus(
            limits: current.limits,
            profile: await pipeline.rulesInForce.profile,
            learnedRestingRate: current.learnedRestingRate,
            learnedSamples: current.baselineSamples,
            learnedSamplesNeeded: current.baselineSamplesNeeded
        )
        board.feedback = feedback?.shown
        board.profile = profileState
        if let open = current.openAlert {
            board.record(alert: open, countdownDeadline: board.openAlert?.id == open.id ? board.countdownDeadline : nil)
        } else {
            board.openAlert = nil
            board.countdownDeadline = nil
        }
        var status = board.snapshot(now: timestamps.now())
        status.care = heartbeat?.careStatus()
        return status
    }

    public func triggerSOS(discreet: Bool) async throws -> AlertStatus {
        let actions = await pipeline.receive(discreet ? .discreetSOS : .manualSOS, at: timestamps.now())
        observe(actions)
        guard let open = await pipeline.current.openAlert else {
            throw AgentControlError(code: .internal, message: "the SOS engine opened no alert")
        }
        return await alertStatus(open)
    }

    public func markSafe(reason: CancelReason) async throws -> AlertStatus {
        guard let open = await pipeline.current.openAlert, open.state.isOpen else {
            throw AgentControlError(code: .noOpenAlert, message: "there is no open alert to cancel")
        }
        let actions = await pipeline.receive(.cancel(reason), at: timestamps.now())
        observe(actions)
        for action in actions {
            if case .cancelled(let record) = action { return AlertStatus(record) }
        }
        // The engine kept it open (for example a resolved race): report what it holds now.
        return AlertStatus(await pipeline.current.openAlert ?? open)
    }

    public func pauseMonitoring() async -> MonitoringState {
        observe(await pipeline.receive(.pause, at: timestamps.now()))
        board.monitoringPaused = true
        return MonitoringState(paused: true)
    }

    public func resumeMonitoring() async -> MonitoringState {
        observe(await pipeline.receive(.resume, at: timestamps.now()))
        board.monitoringPaused = false
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

    var profileState: ProfileState {
        ProfileState(profile: profile, taxi: profile == .taxi ? taxiMachine.state : nil, run: run)
    }

    public func taxi(_ event: TaxiStateMachine.Event) async throws -> ProfileState {
        guard profile == .taxi else {
            throw AgentControlError(code: .unavailable, message: "this agent's profile is \(profile.rawValue), not taxi")
        }
        let changed: Bool
        do {
            changed = try taxiMachine.receive(event)
        } catch {
            throw AgentControlError(code: .refused, message: error.message)
        }
        heartbeat?.taxiState(taxiMachine.state)
        // A change goes out with the next fix, at once rather than at the next 30 s report.
        if changed { await pipeline.forceNextPosition() }
        return profileState
    }

    public func joinRun(code: String, show: Bool, shareHealth: Bool) async throws -> ProfileState {
        guard profile == .runner else {
            throw AgentControlError(code: .unavailable, message: "this agent's profile is \(profile.rawValue), not runner")
        }
        run = RunParticipation(code: code, showToSpectators: show, shareHealth: shareHealth)
        heartbeat?.run(run)
        return profileState
    }

    public func checkInToRun() async throws -> ProfileState {
        guard profile == .runner, var joined = run else {
            throw AgentControlError(code: .refused, message: "join a run first (trackme-agent run-join CODE)")
        }
        if joined.checkedInMilliseconds == nil {
            joined.checkedInMilliseconds = timestamps.now().wallClockMilliseconds
            run = joined
            heartbeat?.run(joined)
            await pipeline.forceNextPosition()
        }
        return profileState
    }

    private func alertStatus(_ record: AlertRecord) async -> AlertStatus {
        let now = timestamps.now()
        let deadline = board.openAlert?.id == record.id ? board.countdownDeadline : nil
        let remaining = deadline.flatMap { $0.milliseconds(since: now) }.map { Double(max(0, $0)) / 1000 }
        return AlertStatus(record, countdownRemainingSeconds: record.state == .pending ? remaining : nil)
    }
}
