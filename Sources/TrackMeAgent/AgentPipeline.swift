// Data path, step 3 (decide) and the agent's wiring of steps 1-5: readings in, rules, journal, dispatch and sync lanes.

import BlueZHeartRate
public import EdgeStore
import Foundation
public import Logging
public import TrackMeCore

/// The agent's decision path, shared by the daemon and the simulation: readings in, SOS rules
/// evaluated, readings and alerts journaled, alert actions handed to the dispatch lane.
///
/// It owns no clock and no I/O of its own beyond the store: every input comes with its
/// timestamp, and the caller performs dispatch and sync (the daemon through `DispatchLane` and
/// `SyncEngine.run()`, the simulation through the same types stepped on virtual time).
/// Raising an alert journals it durably (`ReadingStore.appendAlert`, its own fsync) before
/// `dispatch` is called, so an alert handed to the lane is never one the disk does not know of,
/// unless the disk itself failed, in which case it goes out from memory at once.
public actor AgentPipeline {
    public struct Configuration: Sendable {
        public var deviceID: String
        public var profile: PersonProfile
        public var settings: SOSSettings
        public var positionSampling: PositionSamplingPolicy

        public init(
            deviceID: String,
            profile: PersonProfile,
            settings: SOSSettings = SOSSettings(),
            positionSampling: PositionSamplingPolicy = PositionSamplingPolicy()
        ) {
            self.deviceID = deviceID
            self.profile = profile
            self.settings = settings
            self.positionSampling = positionSampling
        }
    }

    /// What the agent keeps across restarts beside the journal: the learned resting rate and
    /// whether the wearer paused monitoring (the store's `device_state`).
    public struct DeviceState: Sendable {
        public var baseline: RestingHeartRateEstimator
        public var monitoringPaused: Bool

        public init(baseline: RestingHeartRateEstimator = RestingHeartRateEstimator(), monitoringPaused: Bool = false) {
            self.baseline = baseline
            self.monitoringPaused = monitoringPaused
        }
    }

    public nonisolated let configuration: Configuration
    public nonisolated let store: ReadingStore
    public nonisolated let committer: GroupCommitter
    private var engine: SOSEngine
    private var sampling: PositionSamplingPolicy
    private let dispatch: @Sendable (SOSAction) async -> Void
    private let logger: Logger
    /// What the agent knows now: the pipeline records each reading, fix and what the rules
    /// decided in it, so a reading is one hop into the agent.
    public nonisolated let state: AgentStateCell
    /// The wearer's outputs, told of every action the rules take; nil where none are wired.
    private let feedback: FeedbackDriver?
    /// Learns the resting rate from every reading with contact; nil: not learning (the simulation).
    private var baseline: RestingHeartRateEstimator?
    private var readingsSinceBaselineSaved = 0
    /// Whether the learned baseline and pause are kept in the store (the daemon) or not (the simulation).
    private let keepsDeviceState: Bool
    /// The learned baseline is written to the store after this many readings (5 minutes at
    /// 1 Hz): a crash loses at most that much learning, which changes nothing that matters.
    static let baselineSaveInterval = 300

    /// - Parameters:
    ///   - dispatch: hands an alert action to the dispatch lane (`raise`, `update`,
    ///     `positionUpdate`, `cancelled`); called after the action is journaled.
    ///   - restoring: the open alert found in the journal after a restart: it stays open.
    ///   - deviceState: the learned baseline and pause kept across restarts (`deviceState(in:)`);
    ///     nil neither learns nor keeps anything (the simulation's devices).
    ///   - state: the agent's state the pipeline records into; nil: one of its own (benchmarks).
    public init(
        configuration: Configuration,
        store: ReadingStore,
        committer: GroupCommitter,
        ids: any AlertIDGenerator,
        now: ReadingTimestamp,
        restoring openAlert: AlertRecord? = nil,
        deviceState: DeviceState? = nil,
        state: AgentStateCell? = nil,
        feedback: FeedbackDriver? = nil,
        dispatch: @escaping @Sendable (SOSAction) async -> Void,
        logger: Logger
    ) {
        self.configuration = configuration
        self.store = store
        self.committer = committer
        var engine = SOSEngine(
            deviceID: configuration.deviceID,
            profile: configuration.profile,
            settings: configuration.settings,
            learnedRestingRate: deviceState?.baseline.estimate,
            ids: ids,
            openAlert: openAlert,
            now: now
        )
        // Paused before the restart: still paused (the engine only logs it, nothing to journal).
        if deviceState?.monitoringPaused == true { _ = engine.receive(.pause, now: now) }
        self.engine = engine
        self.baseline = deviceState?.baseline
        self.keepsDeviceState = deviceState != nil
        self.sampling = configuration.positionSampling
        self.dispatch = dispatch
        self.logger = logger
        self.feedback = feedback
        let cell =
            state
            ?? AgentStateCell(
                AgentState(
                    deviceID: configuration.deviceID,
                    started: now,
                    storeBudgetBytes: Int(clamping: store.configuration.diskBudgetBytes),
                    batteryWarningPercent: StrapConfiguration.defaultBatteryWarningPercent,
                    rulesProfile: engine.profile
                ),
                clock: ContinuousClock()
            )
        self.state = cell
        let rules = RulesInForce(engine, deviceState?.baseline)
        let (open, monitoring) = (engine.openAlert, engine.isMonitoring)
        cell.update { state, elapsed in
            state.record(openAlert: open, monitoring: monitoring, actions: [], at: elapsed)
            rules.record(into: &state)
        }
    }

    /// The learned baseline and pause the store kept; defaults (nothing learned, monitoring on)
    /// when it holds none or cannot be read (logged: learning starts over, which is safe).
    public static func deviceState(in store: ReadingStore, logger: Logger) -> DeviceState {
        var state = DeviceState()
        do {
            if let data = try store.deviceState(ReadingStore.DeviceStateKey.restingHeartRate) {
                state.baseline = try JSONDecoder().decode(RestingHeartRateEstimator.self, from: data)
            }
            state.monitoringPaused = try store.deviceState(ReadingStore.DeviceStateKey.monitoringPaused) == Data("1".utf8)
        } catch {
            logger.error("device state unreadable; the learned baseline starts over", metadata: ["store.error": "\(error)"])
        }
        return state
    }

    /// What the agent knows now.
    public nonisolated var current: AgentState { state.current }

    /// The limits in force, the profile the rules use and the learned baseline, as the state shows them.
    private struct RulesInForce: Sendable {
        var limits: HeartRateLimits
        var profile: PersonProfile
        var learnedRestingRate: Int?
        var samples: Int
        var samplesNeeded: Int

        init(_ engine: SOSEngine, _ baseline: RestingHeartRateEstimator?) {
            limits = engine.limits
            profile = engine.profile
            learnedRestingRate = baseline?.estimate
            samples = baseline?.sampleCount ?? 0
            samplesNeeded = baseline?.minimumSamples ?? 0
        }

        func record(into state: inout AgentState) {
            state.limits = limits
            state.rulesProfile = profile
            state.learnedRestingRate = learnedRestingRate
            state.baselineSamples = samples
            state.baselineSamplesNeeded = samplesNeeded
        }
    }

    /// Records what the rules hold after an event (and `change`, the event's own observation)
    /// in the state, in one lock, and tells the wearer's outputs of each action.
    private func record(_ actions: [SOSAction], _ change: (inout AgentState) -> Void = { _ in }) {
        let open = engine.openAlert
        let monitoring = engine.isMonitoring
        state.update { state, now in
            change(&state)
            state.record(openAlert: open, monitoring: monitoring, actions: actions, at: now)
        }
        if let feedback { for action in actions { feedback.receive(.engine(action)) } }
    }

    public var limits: HeartRateLimits { engine.limits }

    /// The profile and rule settings in force (the configuration's, or the server's care
    /// settings over them: `CareSettingsResolution`).
    public var rulesInForce: (profile: PersonProfile, settings: SOSSettings) { (engine.profile, engine.settings) }

    /// New care settings (`SyncReplyOrders`): the rules use them from the next event on.
    public func reconfigure(profile: PersonProfile, settings: SOSSettings) {
        engine.reconfigure(profile: profile, settings: settings)
        let rules = RulesInForce(engine, baseline)
        state.update { state, _ in rules.record(into: &state) }
    }

    /// A Heart Rate Measurement notification as it came off the air: decoded here, so the
    /// decision latency measured from this call covers decode, rules, journal and hand-off.
    @discardableResult
    public func heartRateNotification(_ raw: [UInt8], at timestamp: ReadingTimestamp) async -> [SOSAction] {
        do {
            let reading = try HeartRateMeasurement.decode(raw)
            return await heartRate(reading, at: timestamp)
        } catch {
            state.update { state, _ in state.malformedNotifications += 1 }
            logger.info("malformed heart rate measurement ignored", metadata: ["ble.error": "\(error)", "ble.bytes": "\(raw.count)"])
            return []
        }
    }

    /// A decoded reading: stored (group commit) and evaluated.
    @discardableResult
    public func heartRate(_ reading: HeartRateReading, at timestamp: ReadingTimestamp) async -> [SOSAction] {
        // The rules first: an alert must not wait behind the store.
        let actions = engine.receive(.heartRate(reading), now: timestamp)
        let learned = learn(reading)
        let samples = baseline?.sampleCount
        let rules = learned ? RulesInForce(engine, baseline) : nil
        record(actions) { state in
            state.record(heartRate: reading, at: timestamp)
            state.readingsProduced += 1
            if let samples { state.baselineSamples = samples }
            rules?.record(into: &state)
        }
        await perform(actions, at: timestamp)
        committer.append(.heartRate(reading), at: timestamp)
        saveBaselineIfDue(learned: learned)
        return actions
    }

    /// Counts the reading into the learned baseline; a new estimate reshapes the limits (returns
    /// whether it did).
    private func learn(_ reading: HeartRateReading) -> Bool {
        guard baseline != nil else { return false }
        // Mutated in place (no copy of its histogram per reading).
        let before = baseline?.estimate
        baseline?.add(reading)
        let after = baseline?.estimate
        if after != before {
            engine.learnRestingRate(after)
            logger.notice(
                "learned resting heart rate",
                metadata: ["sos.resting_bpm": "\(after.map(String.init) ?? "none")", "sos.minimum_bpm": "\(engine.limits.minimum)"]
            )
        }
        return after != before
    }

    /// After the alert and the reading are handed on: the baseline is written every
    /// `baselineSaveInterval` readings and whenever its estimate changed.
    private func saveBaselineIfDue(learned: Bool) {
        guard baseline != nil else { return }
        readingsSinceBaselineSaved += 1
        if readingsSinceBaselineSaved >= Self.baselineSaveInterval || learned { saveBaseline() }
    }

    /// Writes the learned baseline to the store now (also at shutdown).
    public func saveBaseline() {
        guard keepsDeviceState, let baseline else { return }
        readingsSinceBaselineSaved = 0
        do {
            try store.setDeviceState(try JSONEncoder().encode(baseline), for: ReadingStore.DeviceStateKey.restingHeartRate)
        } catch {
            logger.warning("learned baseline not saved", metadata: ["store.error": "\(error)"])
        }
    }

    private func savePaused(_ paused: Bool) {
        guard keepsDeviceState else { return }
        do {
            try store.setDeviceState(Data((paused ? "1" : "0").utf8), for: ReadingStore.DeviceStateKey.monitoringPaused)
        } catch {
            logger.error("pause not saved; a restart would resume monitoring", metadata: ["store.error": "\(error)"])
        }
    }

    /// A gpsd report: the rules always see the latest fix; the sampling policy decides what is
    /// stored and synced.
    @discardableResult
    public func position(_ fix: PositionFix, at timestamp: ReadingTimestamp) async -> [SOSAction] {
        let actions = engine.receive(.position(fix), now: timestamp)
        let stored = fix.hasPosition && sampling.shouldStore(fix, at: timestamp, alertOpen: engine.openAlert?.state.isOpen == true)
        record(actions) { state in
            if fix.hasPosition { state.record(fix: fix, at: timestamp) }
            if stored { state.readingsProduced += 1 }
        }
        await perform(actions, at: timestamp)
        if stored { committer.append(.position(fix), at: timestamp) }
        return actions
    }

    /// The next fix with a position is stored whatever the sampling interval (a taxi's
    /// availability changed, a runner checked in).
    public func forceNextPosition() { sampling.forceNext() }

    /// Anything else the engine learns: link state, manual SOS, cancel, pause and resume,
    /// delivery and acknowledgement, and the periodic tick.
    @discardableResult
    public func receive(_ event: SOSEvent, at timestamp: ReadingTimestamp) async -> [SOSAction] {
        let actions = engine.receive(event, now: timestamp)
        record(actions)
        await perform(actions, at: timestamp)
        return actions
    }

    private func perform(_ actions: [SOSAction], at timestamp: ReadingTimestamp) async {
        for action in actions {
            switch action {
            case .raise(let record):
                journal(AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: timestamp))
                logger.warning("alert raised", metadata: ["sos.alert_id": "\(record.id)", "sos.kind": "\(record.kind.rawValue)"])
                await dispatch(action)
            case .update(let record), .cancelled(let record):
                if record.raised != nil { journalState(record) }
                await dispatch(action)
            case .positionUpdate:
                await dispatch(action)
            case .kindChanged(let record):
                logger.warning("alert kind raised", metadata: ["sos.alert_id": "\(record.id)", "sos.kind": "\(record.kind.rawValue)"])
                await dispatch(action)
            case .startCountdown(let record, _):
                logger.notice("alert countdown started", metadata: ["sos.alert_id": "\(record.id)", "sos.kind": "\(record.kind.rawValue)"])
            case .withdrawn(let record):
                logger.info("alert countdown withdrawn", metadata: ["sos.alert_id": "\(record.id)"])
            case .logMonitoringPaused:
                logger.notice("monitoring paused")
                savePaused(true)
            case .logMonitoringResumed:
                logger.notice("monitoring resumed")
                savePaused(false)
            }
        }
    }

    /// The alert the journal says is still open (raised and neither cancelled nor resolved):
    /// it stays open across the restart. The rules hold one open alert at a time, so only the
    /// last alert raised can be open: its latest journal record decides, or the later state
    /// `journalState` kept for it. A pending one (countdown) was never raised and is not
    /// restored, as in the simulation's crash-restart.
    public static func openAlert(in store: ReadingStore, logger: Logger) -> AlertRecord? {
        let updates: [AlertUpdate]
        do {
            updates = try store.alertStates()
        } catch {
            logger.error("alert journal unreadable; no open alert restored", metadata: ["store.error": "\(error)"])
            return nil
        }
        // The journal's latest record of each alert, in the order they were written: the last
        // is the last alert raised (monotonic times do not order alerts across reboots).
        guard var last = updates.last?.alert else { return nil }
        do {
            if let data = try store.deviceState(ReadingStore.DeviceStateKey.alertState) {
                let state = try WireCodec.decode(AlertRecord.self, from: data)
                if state.id == last.id { last = state }
            }
        } catch {
            logger.error("alert state unreadable; the alert is restored as the journal has it", metadata: ["store.error": "\(error)"])
        }
        guard last.state.isOpen, last.state != .pending else { return nil }
        return last
    }

    /// Keeps a raised alert's later state (delivered, acknowledged, resolved, cancelled) beside
    /// the journal (`device_state`), so a restart restores what is still open and not what the
    /// wearer already cancelled. Never sent: the updates the server sees are the dispatch
    /// lane's, numbered by its policy, and the journal holds only those.
    private func journalState(_ record: AlertRecord) {
        switch record.state {
        case .pending, .raised: return
        case .delivered, .acknowledged, .resolved, .cancelled: break
        }
        do {
            try store.setDeviceState(try WireCodec.encode(record), for: ReadingStore.DeviceStateKey.alertState)
        } catch {
            logger.error(
                "alert state not kept; a restart would restore the alert as raised",
                metadata: ["sos.alert_id": "\(record.id)", "store.error": "\(error)"]
            )
        }
    }

    private func journal(_ update: AlertUpdate) {
        switch store.appendAlert(update) {
        case .durable:
            break
        case .memoryOnly(let error):
            state.update { state, _ in state.alertsJournaledInMemoryOnly += 1 }
            logger.error("alert not journaled on disk, dispatching from memory", metadata: ["store.error": "\(error)"])
        }
    }
}
