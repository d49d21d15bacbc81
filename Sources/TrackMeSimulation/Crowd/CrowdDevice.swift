import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import Logging
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// One device of a crowd scenario, built by the agent's composition root (`AgentCore`) as the
/// daemon builds itself: the store and group commit, `AgentPipeline` with the profile's sampling
/// and rules, the readings lane and the dispatch lane (so a runner who collapses raises an alert
/// that reaches the console), plus `PipelineControl` for the runner's `run-join`/`run-check-in`
/// and the taxi's commands. `CrowdRunner` steps it one trace second at a time on the crowd's
/// virtual clock.
actor CrowdDevice {
    let deviceID: String
    let profile: DeviceProfile
    let core: AgentCore
    let control: PipelineControl
    let faults = FaultState()
    private let clock: VirtualClock
    /// Where the crowd's trace time sits on the wall clock (the server's too).
    private let anchor: WallAnchor
    /// What the dispatch lane did, as the single-device harness collects it.
    private let inbox = SimulatedDevice.DispatchInbox()
    private var nextVisit: Int64
    private var strapConnected = false
    private(set) var committed: [Int64] = []
    private(set) var batchesSent = 0
    /// Alerts raised on this device, with the trace ms the dispatch lane delivered each.
    private(set) var raised: [String: AlertKind] = [:]
    private(set) var delivered: [String: Int64] = [:]
    /// Ride notices of the batch replies, handed to the terminal (`PipelineControl`) after each
    /// readings visit, as the daemon's sync service does with every reply's orders.
    private let rideNotices = RideNoticeInbox()

    init(
        deviceID: String,
        token: String,
        person: PersonProfile,
        profile: DeviceProfile,
        transport: any HTTPTransport,
        storePath: String,
        startMilliseconds: Int64,
        seed: UInt64,
        clock: VirtualClock,
        anchor: WallAnchor,
        wearsStrap: Bool = false,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil,
        logger: Logger
    ) throws {
        self.deviceID = deviceID
        self.profile = profile
        self.clock = clock
        self.anchor = anchor
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 10_000_000, durability: .processCrash),
            logger: logger
        )
        var (settings, person) = profile.applied(to: SOSSettings(), profile: person)
        // A device carried without a strap: the strap's silence says nothing about its wearer.
        if !wearsStrap { settings.disableStrapRules() }
        var inputs = AgentCore.Inputs(
            store: store,
            sync: SyncConfiguration(
                deviceID: deviceID,
                token: token,
                maxBatchReadings: 500,
                heartbeatInterval: profile.heartbeatInterval,
                sendInterval: profile.sendInterval
            ),
            profile: person,
            settings: settings,
            positionSampling: PositionSamplingPolicy(configuration: profile.sampling),
            clock: clock,
            transport: FaultInjectingTransport(base: transport, faults: faults),
            ids: SequentialAlertIDs(prefix: "\(deviceID)-alert"),
            timestamp: { anchor.timestamp(clock.now.offset.milliseconds) },
            logger: logger
        )
        // The runner flushes every trace second, as the agent's one-second group commit does.
        inputs.commitInterval = .seconds(3600)
        inputs.seed = seed
        let inbox = inbox
        inputs.onLaneEvent = { inbox.noteLaneEvent($0) }
        let rideNotices = rideNotices
        inputs.onSyncEvent = { event in
            if case .orders(let orders) = event, let ride = orders.ride { rideNotices.notices.withLock { $0.append(ride) } }
        }
        core = AgentCore(inputs)
        core.state.update { state, _ in state.gpsd = .fix }
        // The runner's and driver's commands (check-in, taxi state) are stamped on the crowd's
        // virtual clock, as everything else the device does: the system clock would put a
        // check-in days after the race it belongs to.
        let timestamps = AgentTimestamps(bootID: ScenarioRunner.bootID) { anchor.timestamp(clock.now.offset.milliseconds) }
        control = PipelineControl(
            pipeline: core.pipeline,
            timestamps: timestamps,
            profile: profile,
            rideAnswers: RideAnswerSender(transport: FaultInjectingTransport(base: transport, faults: faults), token: token),
            onRideOffer: onRideOffer
        )
        nextVisit = startMilliseconds
    }

    /// gpsd's report at trace time `ms`.
    func position(_ fix: PositionFix, at ms: Int64) async {
        await core.pipeline.position(fix, at: anchor.timestamp(ms))
    }

    /// A strap notification at trace time `ms` (the first one connects the strap's link).
    func heartRate(_ reading: HeartRateReading, at ms: Int64) async {
        if !strapConnected {
            strapConnected = true
            await core.pipeline.receive(.strapLink(.connected), at: anchor.timestamp(ms))
        }
        await core.pipeline.heartRate(reading, at: anchor.timestamp(ms))
    }

    func networkDown(_ down: Bool) {
        faults.update { $0.networkDown = down }
    }

    /// The group commit's flush (the agent's one-second commit).
    func commit() async {
        committed += core.committer.flush()
    }

    /// The second's work after its inputs: time passes for the rules (the daemon's ticker), the
    /// dispatch lane does what is due (`DispatchLane.step`, as the daemon's `DispatchService`,
    /// telling the rules of each delivery), and the readings lane visits when due
    /// (`SyncEngine.readingsVisit`, the lane's own policy on the crowd's virtual clock).
    func syncStep(at ms: Int64) async {
        await core.pipeline.receive(.tick, at: anchor.timestamp(ms))
        await dispatchStep(at: ms)
        guard ms >= nextVisit else { return }
        let before = await core.sync.readingsSent
        let wait = await core.sync.readingsVisit()
        if await core.sync.readingsSent > before { batchesSent += 1 }
        nextVisit = ms + max(1, Int64(ScenarioRunner.milliseconds(wait).rounded(.up)))
        for notice in rideNotices.notices.withLock({ notices in
            defer { notices.removeAll() }
            return notices
        }) {
            await control.rideNotice(notice)
        }
    }

    private func dispatchStep(at ms: Int64) async {
        for event in await core.stepDispatchLane(inbox: inbox, at: anchor.timestamp(ms)) {
            switch event {
            case .sent(let update):
                if raised[update.alert.id] == nil { raised[update.alert.id] = update.alert.kind }
            case .delivered(let id):
                if delivered[id] == nil { delivered[id] = ms }
            case .showAcknowledgement, .sendFailed, .fallbackSucceeded, .fallbackFailed:
                break
            }
        }
    }

    func drain() async {
        faults.update { $0.networkDown = false }
        await core.lane.step()
        try? await core.sync.drain(maxFailures: 20)
    }

    func close() {
        core.store.close()
    }
}

/// The ride notices a device's batch replies carried, until its terminal takes them.
final class RideNoticeInbox: Sendable {
    let notices = Mutex<[RideNotice]>([])
}
