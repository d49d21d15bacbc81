import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import GPSDPosition
import Logging
import SimulatedStrap
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// One simulated device: the agent itself, built by the agent's composition root (`AgentCore`:
/// the store's group commit, the sync engine, the dispatch lane, the pipeline) on a
/// `VirtualClock` that the scenario's event loop advances, with the agent's own heart-rate link
/// to the simulated strap. What is the simulation's own is only the strap, the faults and the
/// report. The event loop steps the agent's lanes as their clocks would wake them: the readings
/// lane's visits (`SyncEngine.readingsVisit`) and the dispatch lane's due work
/// (`DispatchLane.step`). A crash throws all of it away but the files and builds it again from
/// the store.
final class SimulatedDevice {
    /// What the pipeline hands to dispatch, with the real time it did so (decision latency).
    final class DispatchInbox: Sendable {
        struct State {
            var actions: [SOSAction] = []
            /// When the input being processed entered the pipeline (for a heart-rate reading:
            /// when the strap sent its bytes).
            var inputAt = ContinuousClock.now
            /// Real time from the input to the alert journaled and handed to dispatch.
            var decisionLatency: [String: Duration] = [:]
            var acknowledged: [String] = []
            /// What the dispatch lane did, read after each step.
            var laneEvents: [DispatchLaneEvent] = []
        }

        let state = Mutex(State())

        /// Marks the start of the input whose processing may raise an alert. `transit` is the
        /// real time the input already spent on its way in (a notification's trip from the
        /// strap's socket through the link), counted in the decision latency; time it then
        /// waited only because the event loop hands the link a stretch of trace at once is not.
        func begin(transit: Duration = .zero) {
            let now = ContinuousClock.now
            state.withLock { $0.inputAt = now - transit }
        }

        func hand(_ action: SOSAction) {
            let now = ContinuousClock.now
            state.withLock { s in
                if case .raise(let record) = action { s.decisionLatency[record.id] = now - s.inputAt }
                s.actions.append(action)
            }
        }

        func takeActions() -> [SOSAction] {
            state.withLock { s in
                defer { s.actions.removeAll() }
                return s.actions
            }
        }

        func noteAcknowledged(_ ids: [String]) {
            state.withLock { $0.acknowledged.append(contentsOf: ids) }
        }

        func noteLaneEvent(_ event: DispatchLaneEvent) {
            state.withLock { $0.laneEvents.append(event) }
        }

        func takeLaneEvents() -> [DispatchLaneEvent] {
            state.withLock { s in
                defer { s.laneEvents.removeAll() }
                return s.laneEvents
            }
        }

        func takeAcknowledged() -> [String] {
            state.withLock { s in
                defer { s.acknowledged.removeAll() }
                return s.acknowledged
            }
        }
    }

    /// When the power watch sent its last heartbeat alone (trace milliseconds), across restarts.
    final class LastHeartbeats: Sendable {
        let sent = Mutex<[Int64]>([])
    }

    struct AlertTrack {
        var record: AlertRecord
        var raisedMilliseconds: Int64?
        var decisionLatencyMilliseconds: Double?
        var deliveredMilliseconds: Int64?
    }

    let scenario: Scenario
    let storePath: String
    let durability: CommitDurability
    let credentials: DeviceCredentials
    let transport: any HTTPTransport
    let connector: StrapConnector
    let logger: Logger
    let inbox = DispatchInbox()
    let committed = Mutex<[Int64]>([])
    /// The agent's clock: trace milliseconds, moved by the event loop.
    let clock: VirtualClock
    /// The board's wall clock: right, or 1970 and untrusted (`wall_clock_unset`).
    let wall: SimulatedWallClock
    /// The agent's timestamps over `clock` and `wall`: what trusted times teach corrects what
    /// was stamped before, as in the daemon (a new one per run of the agent).
    private(set) var timestamps: AgentTimestamps

    /// The agent's parts around the pipeline that a run of it builds anew, as the daemon's
    /// assembly does: the wearer's feedback, and the power reader over the run's supply
    /// directory with its watch.
    struct Surroundings {
        var feedback: FeedbackDriver
        var power: PowerService?
    }

    private(set) var core: AgentCore
    private(set) var surroundings: Surroundings
    /// The device's own battery as the report tells it.
    private(set) var powerReport = SimulationReport.Power()
    private let lastHeartbeats = LastHeartbeats()
    private var lastPowerChange: SimulationReport.Power.Change?
    var store: ReadingStore { core.store }
    var committer: GroupCommitter { core.committer }
    var sync: SyncEngine { core.sync }
    var pipeline: AgentPipeline { core.pipeline }
    private var linkInbox = LinkInbox()
    /// gpsd's reports as the agent's reader handles them (fast mode).
    private var gpsReports = GPSDReportPath()
    private var linkTask: Task<Void, Never>?
    /// When the readings lane next looks for work: the wait its last visit returned (the poll
    /// interval, or the backoff after a failure).
    private(set) var nextSyncVisit: Int64
    private var alerts: [String: AlertTrack] = [:]
    private var alertOrder: [String] = []
    private var restarts = 0
    private var producedBeforeCrash = 0
    private var uncommittedAtCrash = 0

    init(
        scenario: Scenario,
        storePath: String,
        durability: CommitDurability,
        credentials: DeviceCredentials,
        transport: any HTTPTransport,
        connector: StrapConnector,
        clock: VirtualClock,
        wall: SimulatedWallClock,
        baseline: RestingHeartRateEstimator? = nil,
        logger: Logger
    ) async throws {
        self.scenario = scenario
        self.storePath = storePath
        self.durability = durability
        self.credentials = credentials
        self.transport = transport
        self.connector = connector
        self.logger = logger
        nextSyncVisit = clock.now.offset.milliseconds + Self.sendIntervalMilliseconds
        self.clock = clock
        self.wall = wall
        let timestamps = wall.timestamps(clock: clock)
        self.timestamps = timestamps
        (core, surroundings) = try Self.build(
            scenario: scenario,
            storePath: storePath,
            durability: durability,
            credentials: credentials,
            transport: transport,
            inbox: inbox,
            clock: clock,
            timestamps: timestamps,
            ids: SequentialAlertIDs(prefix: "\(scenario.name)-alert"),
            baseline: baseline,
            lastHeartbeats: lastHeartbeats,
            logger: logger
        )
    }

    /// Where the run writes the board's `power_supply` class (beside the store).
    static func powerSupplyPath(storePath: String) -> String {
        (storePath as NSString).deletingLastPathComponent + "/power_supply"
    }

    /// Time passes for the agent up to trace time `ms` (never back).
    func advance(to ms: Int64) {
        clock.advance(to: VirtualClock.Instant(offset: .milliseconds(ms)))
    }

    private static func build(
        scenario: Scenario,
        storePath: String,
        durability: CommitDurability,
        credentials: DeviceCredentials,
        transport: any HTTPTransport,
        inbox: DispatchInbox,
        clock: VirtualClock,
        timestamps: AgentTimestamps,
        ids: SequentialAlertIDs,
        baseline: RestingHeartRateEstimator? = nil,
        lastHeartbeats: LastHeartbeats,
        logger: Logger
    ) throws -> (AgentCore, Surroundings) {
        let store = try ReadingStore(
            configuration: StoreConfiguration(
                path: storePath,
                diskBudgetBytes: scenario.diskBudgetBytes ?? 10_000_000,
                durability: durability
            ),
            logger: logger
        )
        // What earlier runs of the agent learned (`baseline_history`: the nights before the
        // scenario), kept in the store as the agent keeps it.
        if let baseline {
            try store.setDeviceState(try JSONEncoder().encode(baseline), for: ReadingStore.DeviceStateKey.restingHeartRate)
        }
        // As the daemon starts: the learned baseline and pause, and the wall-clock anchors, from the store.
        let deviceState = AgentPipeline.deviceState(in: store, logger: logger)
        timestamps.restoreAnchors(from: store, deviceID: credentials.deviceID, logger: logger)
        var inputs = AgentCore.Inputs(
            store: store,
            sync: syncConfiguration(credentials),
            profile: scenario.person,
            clock: clock,
            transport: transport,
            ids: ids,
            timestamp: { timestamps.now() },
            deviceState: deviceState,
            logger: logger
        )
        inputs.correctTimes = { timestamps.corrected($1, batchSequence: $0) }
        // The event loop flushes every trace second, as the agent's one-second group commit does.
        inputs.commitInterval = .seconds(3600)
        inputs.seed = scenario.seed ?? 1
        inputs.onAlertsAcknowledged = { inbox.noteAcknowledged($0) }
        inputs.onDispatch = { inbox.hand($0) }
        inputs.onLaneEvent = { inbox.noteLaneEvent($0) }
        let feedback = FeedbackDriver(clock: clock)
        inputs.feedback = feedback
        let core = AgentCore(inputs)
        var power: PowerService?
        if let source = scenario.power {
            let configuration = PowerConfiguration()
            let sync = core.sync
            power = PowerService(
                directory: PowerSupplyDirectory(path: powerSupplyPath(storePath: storePath)),
                interval: .milliseconds(Int64((source.pollSeconds ?? configuration.pollSeconds) * 1000)),
                monitor: PowerMonitor(
                    settings: PowerWatch.Settings(lowPercent: configuration.lowPercent, criticalPercent: configuration.criticalPercent),
                    state: core.state,
                    feedback: feedback,
                    sendHeartbeat: {
                        let at = clock.now.offset.milliseconds
                        await sync.sendHeartbeatAlone()
                        lastHeartbeats.sent.withLock { $0.append(at) }
                    },
                    logger: logger
                ),
                clock: clock
            )
        }
        return (core, Surroundings(feedback: feedback, power: power))
    }

    // MARK: Strap

    /// Connects the link to the strap and waits until it is subscribed.
    func connectStrap(at ms: Int64) async throws {
        if linkTask == nil {
            let link = HeartRateLink(
                connector: connector,
                configuration: HeartRateLink.Configuration(backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(50))),
                clock: ContinuousClock(),
                logger: logger
            )
            let inbox = linkInbox
            linkTask = Task {
                for await event in link.events() { await inbox.put(event) }
            }
        }
        while true {
            guard let arrival = await linkInbox.next(limit: .seconds(30)) else {
                throw ScenarioError(message: "the heart-rate link did not connect to the simulated strap within 30 s")
            }
            if case .linkState(.connected) = arrival.event {
                core.state.update { state, _ in state.record(strapLink: .connected) }
                await receive(.strapLink(.connected), at: ms)
                return
            }
        }
    }

    /// The strap goes out of range: the link sees the loss; reconnecting fails until the window
    /// ends.
    func dropStrapLink(strap: SimulatedStrap, at ms: Int64) async {
        await strap.dropLink()
        while let arrival = await linkInbox.next(limit: .seconds(10)) {
            if case .linkState(.lost) = arrival.event { break }
        }
        core.state.update { state, _ in state.record(strapLink: .disconnected) }
        await receive(.strapLink(.disconnected), at: ms)
    }

    /// A measurement as the link decoded it, with the real time it took from the strap's socket
    /// to the link's output.
    struct DecodedReading {
        var reading: HeartRateReading
        var transit: Duration
    }

    /// Sends a stretch of measurements from the strap back to back and waits for the link to
    /// decode each; the result lines up with `readings` (nil where nothing came through: the
    /// strap not notifying, a malformed PDU, the link lost). The event loop hands these to the
    /// pipeline one trace second at a time with `heartRate(_:at:)`; sending a stretch at once
    /// saves two thread wake-ups per trace second without changing what the pipeline sees.
    func deliver(_ readings: [HeartRateReading], strap: SimulatedStrap, at ms: Int64) async throws -> [DecodedReading?] {
        let sentAt = await strap.notify(contentsOf: readings)
        var decoded: [DecodedReading?] = []
        decoded.reserveCapacity(readings.count)
        var lost = false
        while decoded.count < sentAt.count, !lost {
            guard let arrival = await linkInbox.next(limit: .seconds(10)) else {
                throw ScenarioError(message: "a measurement sent at \(ms) ms never reached the pipeline")
            }
            switch arrival.event {
            case .reading(let reading, _):
                decoded.append(DecodedReading(reading: reading, transit: arrival.at - sentAt[decoded.count]))
            case .malformed:
                decoded.append(nil)
            case .linkState(.lost):
                lost = true
            case .linkState, .battery, .bodySensorLocation:
                continue
            }
        }
        if lost { await receive(.strapLink(.disconnected), at: ms) }
        decoded += Array(repeating: nil, count: readings.count - decoded.count)
        return decoded
    }

    /// A decoded measurement reaches the rules at its trace time.
    func heartRate(_ decoded: DecodedReading, at ms: Int64) async {
        advance(to: ms)
        inbox.begin(transit: decoded.transit)
        await pipeline.heartRate(decoded.reading, at: stamp(ms))
        await dispatchStep(at: ms)
    }

    // MARK: Steps

    /// A position report as gpsd gives it (a TPV), through the reader's report handling
    /// (`GPSDReportPath`): the pipeline sees the fixes the agent's `GPSDReader` delivers, a TPV
    /// without a fix only as the reader's state.
    func position(_ fix: PositionFix, at ms: Int64) async {
        advance(to: ms)
        for event in gpsReports.receive(tpv: fix, now: .milliseconds(ms)) {
            guard case .fix(let delivered) = event else { continue }
            inbox.begin()
            await pipeline.position(delivered, at: stamp(ms))
        }
    }

    /// A fix the field mode's real `GPSDReader` already delivered.
    func deliveredFix(_ fix: PositionFix, at ms: Int64) async {
        advance(to: ms)
        inbox.begin()
        await pipeline.position(fix, at: stamp(ms))
    }

    /// A wearer's action (SOS, cancel) or any other event for the rules.
    func receive(_ event: SOSEvent, at ms: Int64) async {
        advance(to: ms)
        inbox.begin()
        await pipeline.receive(event, at: stamp(ms))
    }

    /// Time passes for the rules and the dispatch policy.
    func tick(at ms: Int64) async {
        advance(to: ms)
        inbox.begin()
        await pipeline.receive(.tick, at: stamp(ms))
        await dispatchStep(at: ms)
        // The daemon's ticker saves what the timestamps learned.
        timestamps.saveAnchors(to: store, logger: logger)
    }

    /// The agent's timestamp of trace millisecond `ms` (the event loop hands a second's
    /// readings over after the clock passed it).
    func stamp(_ ms: Int64) -> ReadingTimestamp {
        timestamps.taken(wall.reading(ms))
    }

    /// The dispatch lane's work due now (`DispatchLane.step`: the agent's policy, sends through
    /// the real HTTP alert path, send timeout, fallback; after a restart, what the journal held
    /// undelivered first), and what it did back to the rules, as the daemon's `DispatchService`.
    func dispatchStep(at ms: Int64) async {
        advance(to: ms)
        let now = stamp(ms)
        for action in inbox.takeActions() { note(action, at: ms) }
        for case .delivered(let id) in await core.stepDispatchLane(inbox: inbox, at: now)
        where alerts[id]?.deliveredMilliseconds == nil {
            alerts[id]?.deliveredMilliseconds = ms
        }
        // What the rules did on hearing of the deliveries.
        for action in inbox.takeActions() { note(action, at: ms) }
    }

    private func note(_ action: SOSAction, at ms: Int64) {
        let record: AlertRecord
        switch action {
        case .raise(let r), .update(let r), .positionUpdate(let r), .cancelled(let r), .kindChanged(let r): record = r
        case .startCountdown, .withdrawn, .logMonitoringPaused, .logMonitoringResumed: return
        }
        if alerts[record.id] == nil {
            alerts[record.id] = AlertTrack(record: record)
            alertOrder.append(record.id)
        }
        // The report keeps the position the alert was raised with; later updates (a position
        // every second while open) change its state, not where the wearer was found.
        let raisedPosition = alerts[record.id]?.record.position
        alerts[record.id]?.record = record
        if case .positionUpdate = action { alerts[record.id]?.record.position = raisedPosition }
        if case .raise = action {
            alerts[record.id]?.raisedMilliseconds = ms
            if let latency = inbox.state.withLock({ $0.decisionLatency[record.id] }) {
                alerts[record.id]?.decisionLatencyMilliseconds = ScenarioRunner.milliseconds(latency)
            }
        }
    }

    func commit() async {
        let seqs = committer.flush()
        if !seqs.isEmpty { committed.withLock { $0.append(contentsOf: seqs) } }
    }

    /// The sync engine's settings: the agent's, with smaller batches.
    static func syncConfiguration(_ credentials: DeviceCredentials) -> SyncConfiguration {
        SyncConfiguration(deviceID: credentials.deviceID, token: credentials.token, maxBatchReadings: 500)
    }

    /// The agent's send interval: a partly filled batch waits this long, so the lane is visited
    /// this often.
    static let sendIntervalMilliseconds = Int64(
        ScenarioRunner.milliseconds(SyncConfiguration(deviceID: "", token: "").sendInterval).rounded()
    )

    /// One visit of the agent's readings lane (`SyncEngine.readingsVisit`, due at
    /// `nextSyncVisit`): it sends what its policy says is due at this trace time and says when it
    /// looks again, as the agent's lane sleeps on its clock for that long.
    func syncStep(at ms: Int64) async {
        guard ms >= nextSyncVisit else { return }
        advance(to: ms)
        let wait = await sync.readingsVisit()
        nextSyncVisit = ms + max(1, Int64(ScenarioRunner.milliseconds(wait).rounded(.up)))
        await takeAcknowledgements(at: ms)
    }

    /// Dispatcher acknowledgements that came back with batches reach the rules.
    private func takeAcknowledgements(at ms: Int64) async {
        for id in inbox.takeAcknowledged() {
            await pipeline.receive(.acknowledged(alertID: id), at: stamp(ms))
        }
    }

    /// The end of the run: the readings lane sends what is left, partly filled batches too,
    /// its backoff waits passing on the virtual clock, for at most 20 visits.
    func finalDrain(at ms: Int64) async {
        await dispatchStep(at: ms)
        var drained = false
        for _ in 0..<20 {
            let wait = await sync.readingsVisit(drain: true)
            let stats = store.statistics()
            if stats.unsyncedReadings == 0, stats.inFlightBatches == 0 {
                drained = true
                break
            }
            clock.advance(by: wait)
        }
        if !drained { logger.warning("final drain failed", metadata: ["sync.unsynced": "\(store.statistics().unsyncedReadings)"]) }
        await takeAcknowledgements(at: ms)
        await tick(at: ms)
    }

    // MARK: Power

    /// The agent reads its supplies (`PowerService.poll`, as its service does every
    /// `poll_s`) after the run wrote them; what it decided and what the wearer is shown go
    /// into the report when they change.
    func pollPower(at ms: Int64) async {
        guard let power = surroundings.power else { return }
        advance(to: ms)
        await power.poll()
        let beat = core.state.heartbeat()
        let change = SimulationReport.Power.Change(
            atMilliseconds: ms,
            percent: beat.deviceBatteryPercent,
            source: beat.devicePower,
            level: beat.devicePowerLevel ?? .normal,
            wearerShown: surroundings.feedback.shown.rawValue
        )
        if change.level != lastPowerChange?.level || change.wearerShown != lastPowerChange?.wearerShown
            || change.source != lastPowerChange?.source
        {
            powerReport.changes.append(change)
        }
        lastPowerChange = change
        powerReport.lastHeartbeatMilliseconds = lastHeartbeats.sent.withLock { $0 }
    }

    /// What the server holds of the device's battery now (its last heartbeat), noted when the
    /// level it shows changes.
    func notePowerAtServer(_ server: TrackMeServer, at ms: Int64) async throws {
        guard surroundings.power != nil, let beat = try await server.deviceContact(deviceID: credentials.deviceID).heartbeat else { return }
        let seen = SimulationReport.Power.AtServer(
            atMilliseconds: ms,
            percent: beat.deviceBatteryPercent,
            source: beat.devicePower,
            level: beat.devicePowerLevel,
            lowForSeconds: beat.conditionSeconds?["device_battery_low"]
        )
        guard let last = powerReport.atServer.last else {
            if seen.source != nil { powerReport.atServer.append(seen) }
            return
        }
        if seen.level != last.level || seen.source != last.source { powerReport.atServer.append(seen) }
    }

    // MARK: Faults

    /// Kills the agent: what is only in memory (the group commit's buffer, the rules' state,
    /// the dispatch queue) is gone; the store, the journal and the strap remain.
    func crashAndRestart(at ms: Int64) async throws {
        advance(to: ms)
        uncommittedAtCrash += committer.bufferedCount
        _ = inbox.takeActions()
        linkTask?.cancel()
        linkTask = nil
        store.close()
        await linkInbox.close()
        linkInbox = LinkInbox()
        producedBeforeCrash += pipeline.current.readingsProduced
        restarts += 1
        _ = inbox.takeLaneEvents()
        // A restarted agent must never reuse an alert id. The composition root restores the
        // open alert from the journal and the lane adopts it, as in the agent.
        // A new process: new timestamps, which take up the anchors the store kept.
        timestamps = wall.timestamps(clock: clock)
        (core, surroundings) = try Self.build(
            scenario: scenario,
            storePath: storePath,
            durability: durability,
            credentials: credentials,
            transport: transport,
            inbox: inbox,
            clock: clock,
            timestamps: timestamps,
            ids: SequentialAlertIDs(prefix: "\(scenario.name)-r\(restarts)-alert"),
            lastHeartbeats: lastHeartbeats,
            logger: logger
        )
        // The restarted agent's readings lane starts at once (the newest readings first).
        nextSyncVisit = ms
        try await connectStrap(at: ms)
    }

    /// A dispatcher acknowledges the open alert at the server (through `http`, the run's way to
    /// the server, outside the device's network faults); the device learns of it on its next sync.
    func acknowledgeOpenAlert(server: TrackMeServer, http: any HTTPTransport) async throws {
        guard let alert = pipeline.current.openAlert else { return }
        let dispatcher = try await server.createDispatcher(name: "sim-dispatcher")
        let response = try await http.post(
            path: "v1/alerts/\(alert.id)/ack",
            headers: ["Authorization": "Bearer \(dispatcher.token)", "Content-Type": "application/json"],
            body: Array("{}".utf8)
        )
        guard (200..<300).contains(response.status) else {
            throw ScenarioError(message: "the server refused the acknowledgement of \(alert.id): HTTP \(response.status)")
        }
    }

    // MARK: Report

    func alertReport() async -> [SimulationReport.Alert] {
        // Alerts that were raised: a countdown the wearer cancelled never reached anyone.
        alertOrder.compactMap { id in
            guard let track = alerts[id], track.raisedMilliseconds != nil || track.record.raised != nil else { return nil }
            let record = track.record
            let firstMs = Int64(record.firstCritical.monotonicNanoseconds / 1_000_000) - 10_000
            let position = record.position.flatMap { p -> SimulationReport.Alert.Position? in
                guard let lat = p.fix.latitude, let lon = p.fix.longitude else { return nil }
                return .init(lat: lat, lon: lon, ageMilliseconds: p.ageMilliseconds)
            }
            return SimulationReport.Alert(
                alertID: id,
                kind: record.kind,
                state: record.state,
                firstCriticalMilliseconds: firstMs,
                raisedMilliseconds: track.raisedMilliseconds,
                decisionLatencyMilliseconds: track.decisionLatencyMilliseconds,
                deliveredMilliseconds: track.deliveredMilliseconds,
                position: position
            )
        }
    }

    func readingCounts(server: TrackMeServer) async throws -> SimulationReport.Readings {
        let committed = Set(committed.withLock { $0 })
        let atServer = try await server.storedReadingTimes(deviceID: credentials.deviceID)
        let distinct = Set(atServer.map(\.sequence))
        let stats = store.statistics()
        let synced = stats.readings - stats.unsyncedReadings
        let dropped = Int(stats.droppedByBudgetTotal)
        let missing = committed.subtracting(distinct).count
        // A reading's true time is the trace's, which its monotonic time carries.
        let offTrueTime = atServer.filter {
            abs($0.placedMilliseconds - wall.anchor.trueWallMilliseconds($0.timestamp)) > 1000
        }.count
        return SimulationReport.Readings(
            produced: pipeline.current.readingsProduced + producedBeforeCrash,
            stored: committed.count,
            synced: synced,
            receivedByServer: distinct.count,
            duplicatesAtServer: atServer.count - distinct.count,
            droppedByBudget: dropped,
            lost: max(0, missing - dropped),
            uncommittedAtCrash: uncommittedAtCrash,
            offTrueTime: offTrueTime,
            correctedByDevice: atServer.filter(\.timestamp.wallClockCorrected).count
        )
    }

    func shutdown() async {
        await linkInbox.close()
        linkTask?.cancel()
        store.close()
    }
}

/// The simulated board's wall clock. Right by default (`WallAnchor.timestamp`); while a
/// `wall_clock_unset` window is in force it reads as a board without a real-time clock does
/// before NTP or GPS set it: 1970 plus the time since boot, untrusted.
final class SimulatedWallClock: Sendable {
    private let unset = Mutex(false)
    /// Where trace time sits on the wall clock when the board's clock is right.
    let anchor: WallAnchor

    init(anchor: WallAnchor) { self.anchor = anchor }

    func set(unset value: Bool) { unset.withLock { $0 = value } }

    /// Both clocks at trace millisecond `ms`, as the board reads them.
    func reading(_ ms: Int64) -> ReadingTimestamp {
        var timestamp = anchor.timestamp(ms)
        if unset.withLock({ $0 }) {
            timestamp.wallClockMilliseconds = Int64(timestamp.monotonicNanoseconds / 1_000_000)
            timestamp.wallClockTrusted = false
        }
        return timestamp
    }

    /// The agent's timestamps over this board's clocks, now being `clock`'s time.
    func timestamps(clock: VirtualClock) -> AgentTimestamps {
        AgentTimestamps(bootID: ScenarioRunner.bootID) { [self] in
            reading(clock.now.offset.milliseconds)
        }
    }
}
