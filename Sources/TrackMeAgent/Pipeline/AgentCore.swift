public import EdgeDispatch
public import EdgeStore
public import EdgeSync
public import Logging
public import TrackMeCore

/// The agent's one composition root: from an open store, a clock, a transport to the server and
/// the settings, it builds the group commit, the readings lane (`SyncEngine`), the dispatch lane
/// (the one sender of alert updates) and the `AgentPipeline` between them, wired as the agent
/// runs them. The daemon
/// (`AgentAssembly.make`) passes the real clock and its HTTP transport, and runs the parts as
/// services with the sources (the strap's link, gpsd) feeding the pipeline; the simulation passes
/// the virtual clock its event loop advances and a fault-injecting transport to the in-process
/// server, and steps the same parts (`SyncEngine.readingsVisit`, `DispatchLane.step`). Nothing
/// here is global: one process may build any number of agents against one server.
public struct AgentCore: Sendable {
    public let store: ReadingStore
    public let committer: GroupCommitter
    public let sync: SyncEngine
    public let lane: DispatchLane
    public let pipeline: AgentPipeline
    /// What the agent knows now (the pipeline's); the heartbeat each batch carries comes from it.
    public var state: AgentStateCell { pipeline.state }
    /// The alert the journal said was open at start (it stays open; its updates go on).
    public let restored: AlertRecord?

    public struct Inputs: Sendable {
        public var store: ReadingStore
        /// Device id and token are the sync configuration's.
        public var sync: SyncConfiguration
        public var profile: PersonProfile
        public var settings: SOSSettings
        public var positionSampling: PositionSamplingPolicy
        public var dispatch: DispatchSettings
        /// Schedules the group commit, the readings lane's waits and the dispatch lane's retries,
        /// positions, escalation and send timeouts.
        public var clock: any Clock<Duration>
        /// The way to the server, for batches and alerts.
        public var transport: any HTTPTransport
        public var fallback: (any LocalFallback)?
        public var ids: any AlertIDGenerator
        /// The agent's time for data (monotonic with boot id, wall time): stamps readings at
        /// start and each alert update as it is sent.
        public var timestamp: @Sendable () -> ReadingTimestamp
        /// The learned baseline and pause kept across restarts; nil keeps nothing.
        public var deviceState: AgentPipeline.DeviceState?
        public var commitInterval: Duration = .seconds(1)
        public var onCommit: @Sendable ([Int64]) -> Void = { _ in }
        /// The strap's battery below this many percent is low (`strap.battery_warning_percent`).
        public var batteryWarningPercent = StrapConfiguration.defaultBatteryWarningPercent
        /// The wearer's LED and hook, told of every action the rules take; nil where none are wired.
        public var feedback: FeedbackDriver?
        public var onAlertsAcknowledged: @Sendable ([String]) -> Void = { _ in }
        public var onAlertsResolved: @Sendable ([String]) -> Void = { _ in }
        public var onSyncEvent: @Sendable (SyncEvent) -> Void = { _ in }
        public var correctTimes: @Sendable (Int64, [WireReading]) -> [WireReading] = { $1 }
        /// Sees each alert action after the dispatch lane has it (metrics; the simulation's report).
        public var onDispatch: @Sendable (SOSAction) async -> Void = { _ in }
        /// Sees each dispatch lane event as it happens (besides `lane.events`).
        public var onLaneEvent: (@Sendable (DispatchLaneEvent) -> Void)?
        /// The readings lane's jitter; random unless given (the simulation's scenario seed).
        public var seed: UInt64 = UInt64.random(in: 0...UInt64.max)
        public var logger: Logger

        public init(
            store: ReadingStore,
            sync: SyncConfiguration,
            profile: PersonProfile,
            settings: SOSSettings = SOSSettings(),
            positionSampling: PositionSamplingPolicy = PositionSamplingPolicy(),
            dispatch: DispatchSettings = DispatchSettings(),
            clock: any Clock<Duration>,
            transport: any HTTPTransport,
            fallback: (any LocalFallback)? = nil,
            ids: any AlertIDGenerator,
            timestamp: @escaping @Sendable () -> ReadingTimestamp,
            deviceState: AgentPipeline.DeviceState? = nil,
            logger: Logger
        ) {
            self.store = store
            self.sync = sync
            self.profile = profile
            self.settings = settings
            self.positionSampling = positionSampling
            self.dispatch = dispatch
            self.clock = clock
            self.transport = transport
            self.fallback = fallback
            self.ids = ids
            self.timestamp = timestamp
            self.deviceState = deviceState
            self.logger = logger
        }
    }

    public init(_ inputs: Inputs) {
        let store = inputs.store
        let logger = inputs.logger
        self.store = store
        let state = AgentStateCell(
            AgentState(
                deviceID: inputs.sync.deviceID,
                started: inputs.timestamp(),
                storeBudgetBytes: Int(clamping: store.configuration.diskBudgetBytes),
                batteryWarningPercent: inputs.batteryWarningPercent,
                rulesProfile: inputs.profile
            ),
            clock: inputs.clock
        )
        state.update { state, now in state.record(store: store.statistics(), at: now) }
        committer = GroupCommitter(store: store, clock: inputs.clock, interval: inputs.commitInterval, onCommit: inputs.onCommit)
        let restored = AgentPipeline.openAlert(in: store, logger: logger)
        self.restored = restored
        // The restored alert's position updates go on, numbered above what the server has.
        var adopted: (alert: AlertRecord, nextUpdateSequence: Int, contactsTold: [ContactTold])?
        if let restored {
            do {
                adopted = (restored, try store.nextAlertUpdateSequence(alertID: restored.id), [])
            } catch {
                logger.error("alert journal unreadable; the restored alert gets no position updates", metadata: ["store.error": "\(error)"])
            }
            do {
                adopted?.contactsTold = try store.contactsTold(alertID: restored.id)
            } catch {
                logger.error(
                    "contacts told unreadable; the server may tell them again",
                    metadata: ["sos.alert_id": "\(restored.id)", "store.error": "\(error)"]
                )
            }
        }
        // Updates journaled before a restart and never delivered go out through the lane first;
        // the lane records each delivery, so the next start does not send it again.
        let lane = DispatchLane(
            transport: HTTPAlertTransport(transport: inputs.transport, token: inputs.sync.token),
            fallback: inputs.fallback,
            clock: inputs.clock,
            settings: inputs.dispatch,
            timestamp: inputs.timestamp,
            restored: adopted,
            undelivered: store.pendingAlertUpdates(),
            delivered: { store.markAlertUpdateDelivered(alertID: $0.alert.id, updateSequence: $0.updateSequence) },
            contactsTold: { id, told in
                do {
                    try store.setContactsTold(told, alertID: id)
                } catch {
                    logger.error(
                        "contacts told not kept; after a restart the server may tell them again",
                        metadata: ["sos.alert_id": "\(id)", "store.error": "\(error)"]
                    )
                }
            },
            observe: inputs.onLaneEvent,
            logger: logger
        )
        self.lane = lane
        sync = SyncEngine(
            store: store,
            transport: inputs.transport,
            configuration: inputs.sync,
            clock: inputs.clock,
            heartbeat: { state.heartbeat(store: $0) },
            onAlertsAcknowledged: inputs.onAlertsAcknowledged,
            onAlertsResolved: inputs.onAlertsResolved,
            onEvent: inputs.onSyncEvent,
            logger: logger,
            seed: inputs.seed,
            correctTimes: inputs.correctTimes,
            alertsFirst: { await lane.alertsFirst() }
        )
        let onDispatch = inputs.onDispatch
        pipeline = AgentPipeline(
            configuration: AgentPipeline.Configuration(
                deviceID: inputs.sync.deviceID,
                profile: inputs.profile,
                settings: inputs.settings,
                positionSampling: inputs.positionSampling
            ),
            store: store,
            committer: committer,
            ids: inputs.ids,
            now: inputs.timestamp(),
            restoring: restored,
            deviceState: inputs.deviceState,
            state: state,
            feedback: inputs.feedback,
            dispatch: { action in
                await lane.submit(action)
                await onDispatch(action)
            },
            logger: logger
        )
    }
}
