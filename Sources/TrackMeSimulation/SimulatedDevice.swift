import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import Logging
import SimulatedStrap
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// The agent's parts as the simulation runs them: the store, the group commit, the sync engine,
/// the heart-rate link, the pipeline and the dispatch policy, stepped by the scenario's event
/// loop. A crash throws all of it away but the files and builds it again from the store.
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

        func takeAcknowledged() -> [String] {
            state.withLock { s in
                defer { s.acknowledged.removeAll() }
                return s.acknowledged
            }
        }
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

    private(set) var store: ReadingStore
    private(set) var committer: GroupCommitter
    private(set) var sync: SyncEngine
    private(set) var pipeline: AgentPipeline
    private var policy = DispatchPolicy()
    private var alertTransport: HTTPAlertTransport
    private var linkInbox = LinkInbox()
    private var linkTask: Task<Void, Never>?
    /// The readings lane's last batch, on its way to the server while the loop goes on, and
    /// the trace time it left.
    private var syncInFlight: (task: Task<ReadingsStepOutcome, Never>, sentAt: Int64)?
    /// When the readings lane next looks for work: the agent's send interval after a visit,
    /// the engine's own backoff after a failure.
    private(set) var nextSyncVisit: Int64
    /// The trace time the lane's clock has been told of (see `SyncEngine.timePassed`).
    private var syncClock: Int64
    private var alerts: [String: AlertTrack] = [:]
    private var alertOrder: [String] = []
    private var restarts = 0
    private var producedBeforeCrash = 0
    private var uncommittedAtCrash = 0

    init(
        scenario: Scenario, storePath: String, durability: CommitDurability, credentials: DeviceCredentials, transport: any HTTPTransport,
        connector: StrapConnector, startMilliseconds: Int64, logger: Logger
    ) async throws {
        self.scenario = scenario
        self.storePath = storePath
        self.durability = durability
        self.credentials = credentials
        self.transport = transport
        self.connector = connector
        self.logger = logger
        nextSyncVisit = startMilliseconds + Self.sendIntervalMilliseconds
        syncClock = startMilliseconds
        (store, committer, sync, pipeline, alertTransport) = try Self.build(
            scenario: scenario, storePath: storePath, durability: durability, credentials: credentials, transport: transport, inbox: inbox,
            ids: SequentialAlertIDs(prefix: "\(scenario.name)-alert"), at: startMilliseconds, logger: logger)
    }

    private static func build(
        scenario: Scenario, storePath: String, durability: CommitDurability, credentials: DeviceCredentials, transport: any HTTPTransport,
        inbox: DispatchInbox, ids: SequentialAlertIDs, at ms: Int64, logger: Logger
    ) throws -> (ReadingStore, GroupCommitter, SyncEngine, AgentPipeline, HTTPAlertTransport) {
        let store = try ReadingStore(
            configuration: StoreConfiguration(
                path: storePath, diskBudgetBytes: scenario.diskBudgetBytes ?? 10_000_000, durability: durability), logger: logger)
        // The event loop flushes every trace second, as the agent's one-second group commit does.
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600))
        let sync = SyncEngine(
            store: store, transport: transport,
            configuration: syncConfiguration(credentials),
            clock: ContinuousClock(), onAlertsAcknowledged: { inbox.noteAcknowledged($0) }, logger: logger,
            seed: scenario.seed ?? 1)
        let pipeline = AgentPipeline(
            configuration: AgentPipeline.Configuration(deviceID: credentials.deviceID, profile: scenario.person),
            store: store, committer: committer, ids: ids, now: ScenarioRunner.timestamp(ms),
            // As the agent does at start: an alert the journal says is open stays open.
            restoring: AgentPipeline.openAlert(in: store, logger: logger),
            dispatch: { inbox.hand($0) }, logger: logger)
        let alertTransport = HTTPAlertTransport(transport: transport, token: credentials.token, store: store)
        return (store, committer, sync, pipeline, alertTransport)
    }

    // MARK: Strap

    /// Connects the link to the strap and waits until it is subscribed.
    func connectStrap(at ms: Int64) async throws {
        if linkTask == nil {
            let link = HeartRateLink(
                connector: connector,
                configuration: HeartRateLink.Configuration(backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(50))),
                clock: ContinuousClock(), logger: logger)
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
        inbox.begin(transit: decoded.transit)
        await pipeline.heartRate(decoded.reading, at: ScenarioRunner.timestamp(ms))
        await dispatchStep(at: ms)
    }

    // MARK: Steps

    /// A position report from gpsd.
    func position(_ fix: PositionFix, at ms: Int64) async {
        inbox.begin()
        await pipeline.position(fix, at: ScenarioRunner.timestamp(ms))
    }

    /// A wearer's action (SOS, cancel) or any other event for the rules.
    func receive(_ event: SOSEvent, at ms: Int64) async {
        inbox.begin()
        await pipeline.receive(event, at: ScenarioRunner.timestamp(ms))
    }

    /// Time passes for the rules and the dispatch policy. `pollJournal`: also look for
    /// journaled alert updates no one is sending (once a trace second, as the agent's alert
    /// lane polls).
    func tick(at ms: Int64, pollJournal: Bool = false) async {
        inbox.begin()
        await pipeline.receive(.tick, at: ScenarioRunner.timestamp(ms))
        await dispatchStep(at: ms, pollJournal: pollJournal)
    }

    /// Performs the dispatch policy's work due now, sending through the real HTTP alert path.
    func dispatchStep(at ms: Int64, pollJournal: Bool = false) async {
        let now = Duration.milliseconds(ms)
        let stamp = ScenarioRunner.timestamp(ms)
        var work: [DispatchPolicy.Action] = []
        for action in inbox.takeActions() {
            note(action, at: ms)
            work += policy.receive(.engine(action), now: now, timestamp: stamp)
        }
        work += policy.receive(.tick, now: now, timestamp: stamp)
        while !work.isEmpty {
            let action = work.removeFirst()
            switch action {
            case .send(let update):
                do {
                    let receipt = try await alertTransport.send(update)
                    work += policy.receive(
                        .sendSucceeded(alertID: update.alert.id, updateSequence: update.updateSequence, acknowledged: receipt.acknowledged),
                        now: now, timestamp: stamp)
                } catch {
                    work += policy.receive(.sendFailed(alertID: update.alert.id, updateSequence: update.updateSequence), now: now, timestamp: stamp)
                }
            case .delivered(let id):
                if alerts[id]?.deliveredMilliseconds == nil { alerts[id]?.deliveredMilliseconds = ms }
                await pipeline.receive(.delivered(alertID: id), at: stamp)
                for action in inbox.takeActions() { note(action, at: ms) }
            case .acknowledged(let id):
                await pipeline.receive(.acknowledged(alertID: id), at: stamp)
                for action in inbox.takeActions() { note(action, at: ms) }
            case .runFallback, .showAcknowledgement:
                break
            }
        }
        // Alerts journaled before a crash go out through the sync engine's alert path, as the
        // agent's alert lane sends them after a restart.
        guard pollJournal, store.hasPendingAlertUpdates() else { return }
        let pending = store.pendingAlertUpdates().filter { update in !policy.queuedUpdates.contains(update) }
        if !pending.isEmpty, await sync.sendAlertUpdates(pending) == nil {
            for update in pending where update.updateSequence == 0 {
                if alerts[update.alert.id]?.deliveredMilliseconds == nil { alerts[update.alert.id]?.deliveredMilliseconds = ms }
                // As the agent's sync service tells the rules.
                await pipeline.receive(.delivered(alertID: update.alert.id), at: ScenarioRunner.timestamp(ms))
                for action in inbox.takeActions() { note(action, at: ms) }
            }
        }
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
        let seqs = await committer.flush()
        if !seqs.isEmpty { committed.withLock { $0.append(contentsOf: seqs) } }
    }

    /// The sync engine's settings: the agent's, with smaller batches.
    static func syncConfiguration(_ credentials: DeviceCredentials) -> SyncConfiguration {
        SyncConfiguration(deviceID: credentials.deviceID, token: credentials.token, maxBatchReadings: 500)
    }

    /// The agent's send interval: a partly filled batch waits this long, so the lane is visited
    /// this often.
    static let sendIntervalMilliseconds = Int64(
        ScenarioRunner.milliseconds(SyncConfiguration(deviceID: "", token: "").sendInterval).rounded())

    /// One visit of the readings lane (due at `nextSyncVisit`), deciding as the agent's lane
    /// does what is due: full batches (a backlog) go at once, one after another; the last,
    /// partly filled batch (the steady state: the readings of the last 5 s, or a heartbeat) is
    /// reserved now and sent while the loop goes on, and settled at the next visit or before the
    /// next fault, whichever comes first. What each batch holds is fixed when it is reserved,
    /// at a trace time the loop decides, so the run stays deterministic. After a failure the
    /// next visit comes when the engine's backoff says, as in the agent.
    func syncStep(at ms: Int64) async {
        await settleSync(at: ms)
        guard ms >= nextSyncVisit else { return }
        nextSyncVisit = ms + Self.sendIntervalMilliseconds
        await sync.timePassed(.milliseconds(ms - syncClock))
        syncClock = ms
        lane: while true {
            let batch: ReadingsBatch
            switch await sync.prepareReadingsBatch() {
            case .idle: break lane
            case .failed(let error):
                await scheduleRetry(after: error, from: ms)
                break lane
            case .batch(let prepared): batch = prepared
            }
            if batch.filled || batch.isLatest {
                if case .failed(let error) = await sync.send(batch) {
                    if error.status == 413 { continue }  // split smaller: go again at once
                    await scheduleRetry(after: error, from: ms)
                    break lane
                }
            } else {
                let sync = sync
                syncInFlight = (Task { await sync.send(batch) }, ms)
                break lane
            }
        }
        await takeAcknowledgements(at: ms)
    }

    /// Waits for the batch in flight, if any, and hands the rules what its answer said.
    func settleSync(at ms: Int64) async {
        guard let (task, sentAt) = syncInFlight else { return }
        syncInFlight = nil
        if case .failed(let error) = await task.value, error.status != 413 {
            await scheduleRetry(after: error, from: sentAt)
        }
        await takeAcknowledgements(at: ms)
    }

    private func scheduleRetry(after error: SyncError, from ms: Int64) async {
        let delay = await sync.retryDelay(after: error)
        nextSyncVisit = ms + max(1, Int64(ScenarioRunner.milliseconds(delay).rounded(.up)))
    }

    /// Dispatcher acknowledgements that came back with batches reach the rules.
    private func takeAcknowledgements(at ms: Int64) async {
        for id in inbox.takeAcknowledged() {
            await pipeline.receive(.acknowledged(alertID: id), at: ScenarioRunner.timestamp(ms))
        }
    }

    func finalDrain(at ms: Int64) async {
        await settleSync(at: ms)
        await dispatchStep(at: ms, pollJournal: true)
        do {
            try await sync.drain(maxFailures: 20)
        } catch {
            logger.warning("final drain failed", metadata: ["sync.error": "\(error)"])
        }
        await takeAcknowledgements(at: ms)
        await tick(at: ms, pollJournal: true)
    }

    // MARK: Faults

    /// Kills the agent: what is only in memory (the group commit's buffer, the rules' state,
    /// the dispatch queue) is gone; the store, the journal and the strap remain.
    func crashAndRestart(at ms: Int64) async throws {
        await settleSync(at: ms)
        uncommittedAtCrash += await committer.bufferedCount
        _ = inbox.takeActions()
        linkTask?.cancel()
        linkTask = nil
        store.close()
        await linkInbox.close()
        linkInbox = LinkInbox()
        producedBeforeCrash += await pipeline.current.readingsProduced
        restarts += 1
        policy = DispatchPolicy()
        // A restarted agent must never reuse an alert id.
        (store, committer, sync, pipeline, alertTransport) = try Self.build(
            scenario: scenario, storePath: storePath, durability: durability, credentials: credentials, transport: transport, inbox: inbox,
            ids: SequentialAlertIDs(prefix: "\(scenario.name)-r\(restarts)-alert"), at: ms,
            logger: logger)
        // The restarted agent's readings lane starts at once (the newest readings first).
        nextSyncVisit = ms
        syncClock = ms
        // As the agent does: the restored alert's position updates go on.
        if let open = await pipeline.current.openAlert, let next = try? store.nextAlertUpdateSequence(alertID: open.id) {
            policy.adopt(open, nextUpdateSequence: next, now: .milliseconds(ms))
        }
        try await connectStrap(at: ms)
    }

    /// A dispatcher acknowledges the open alert at the server; the device learns of it on its
    /// next sync.
    func acknowledgeOpenAlert(server: TrackMeServer, baseURL: URL) async throws {
        guard let alert = await pipeline.current.openAlert else { return }
        let dispatcher = try await server.createDispatcher(name: "sim-dispatcher")
        let response = try await URLSessionTransport(baseURL: baseURL).post(
            path: "v1/alerts/\(alert.id)/ack", headers: ["Authorization": "Bearer \(dispatcher.token)", "Content-Type": "application/json"],
            body: Array("{}".utf8))
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
                alertID: id, kind: record.kind, state: record.state, firstCriticalMilliseconds: firstMs,
                raisedMilliseconds: track.raisedMilliseconds, decisionLatencyMilliseconds: track.decisionLatencyMilliseconds,
                deliveredMilliseconds: track.deliveredMilliseconds, position: position)
        }
    }

    func readingCounts(server: TrackMeServer) async throws -> SimulationReport.Readings {
        let committed = Set(committed.withLock { $0 })
        let atServer = try await server.storedSequences(deviceID: credentials.deviceID)
        let distinct = Set(atServer)
        let stats = store.statistics()
        let synced = stats.readings - stats.unsyncedReadings
        let dropped = Int(stats.droppedByBudgetTotal)
        let missing = committed.subtracting(distinct).count
        return SimulationReport.Readings(
            produced: await pipeline.current.readingsProduced + producedBeforeCrash,
            stored: committed.count, synced: synced, receivedByServer: distinct.count,
            duplicatesAtServer: atServer.count - distinct.count, droppedByBudget: dropped, lost: max(0, missing - dropped),
            uncommittedAtCrash: uncommittedAtCrash)
    }

    func shutdown() async {
        _ = await syncInFlight?.task.value
        syncInFlight = nil
        await linkInbox.close()
        linkTask?.cancel()
        store.close()
    }
}
