import EdgeStore
import EdgeSync
import Foundation
import Logging
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// One device of a crowd scenario: the agent's own parts for its profile (the store and group
/// commit, `AgentPipeline` with the profile's sampling and rules, `PipelineControl` for the
/// runner's `run-join`/`run-check-in` and the taxi's commands, the heartbeat the profile fills,
/// and the sync engine's readings lane), stepped one trace second at a time by `CrowdRunner`.
actor CrowdDevice {
    let deviceID: String
    let profile: DeviceProfile
    let store: ReadingStore
    let committer: GroupCommitter
    let sync: SyncEngine
    let pipeline: AgentPipeline
    let control: PipelineControl
    let faults = FaultState()
    private var nextVisit: Int64
    private(set) var committed: [Int64] = []
    private(set) var batchesSent = 0

    init(
        deviceID: String, token: String, person: PersonProfile, profile: DeviceProfile, transport: any HTTPTransport, storePath: String,
        startMilliseconds: Int64, seed: UInt64, clock: VirtualClock, logger: Logger
    ) throws {
        self.deviceID = deviceID
        self.profile = profile
        store = try ReadingStore(
            configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 10_000_000, durability: .processCrash), logger: logger)
        committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600))
        let heartbeat = HeartbeatState()
        heartbeat.gpsd("fix")
        sync = SyncEngine(
            store: store, transport: FaultInjectingTransport(base: transport, faults: faults),
            configuration: SyncConfiguration(deviceID: deviceID, token: token, maxBatchReadings: 500, sendInterval: profile.sendInterval),
            clock: clock, heartbeat: { heartbeat.heartbeat() }, logger: logger, seed: seed)
        let (settings, person) = profile.applied(to: SOSSettings(), profile: person)
        pipeline = AgentPipeline(
            configuration: AgentPipeline.Configuration(
                deviceID: deviceID, profile: person, settings: settings, positionSampling: PositionSamplingPolicy(configuration: profile.sampling)),
            store: store, committer: committer, ids: SequentialAlertIDs(prefix: "\(deviceID)-alert"), now: ScenarioRunner.timestamp(startMilliseconds),
            dispatch: { _ in }, logger: logger)
        control = PipelineControl(
            pipeline: pipeline, deviceID: deviceID, storeBudgetBytes: 10_000_000, timestamps: AgentTimestamps(), heartbeat: heartbeat,
            profile: profile)
        nextVisit = startMilliseconds
    }

    /// gpsd's report at trace time `ms`.
    func position(_ fix: PositionFix, at ms: Int64) async {
        await pipeline.position(fix, at: ScenarioRunner.timestamp(ms))
    }

    func networkDown(_ down: Bool) {
        faults.update { $0.networkDown = down }
    }

    /// The group commit's flush (the agent's one-second commit).
    func commit() async {
        committed += await committer.flush()
    }

    /// The readings lane's visit when due (`SyncEngine.readingsVisit`, the lane's own policy on
    /// the crowd's virtual clock): it sends what is due and says when to come back.
    func syncStep(at ms: Int64) async {
        guard ms >= nextVisit else { return }
        let before = await sync.readingsSent
        let wait = await sync.readingsVisit()
        if await sync.readingsSent > before { batchesSent += 1 }
        nextVisit = ms + max(1, Int64(ScenarioRunner.milliseconds(wait).rounded(.up)))
    }

    func drain() async {
        faults.update { $0.networkDown = false }
        try? await sync.drain(maxFailures: 20)
    }

    func close() {
        store.close()
    }
}
