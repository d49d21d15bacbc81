import BlueZHeartRate
import EdgeDispatch
package import EdgeStore
import EdgeSync
import GPSDPosition
import Logging
import Metrics
public import ServiceLifecycle
import SimulatedStrap
import Synchronization
package import TrackMeCore

/// The group commit: started first, so it stops last and commits what the sources handed it
/// before they stopped; then the store is closed.
public struct StoreService: Service {
    let committer: GroupCommitter
    let store: ReadingStore
    /// Its learned baseline is saved before the store closes.
    let pipeline: AgentPipeline
    let logger: Logger
    /// While the store runs from memory, how often to try it on disk again.
    var reopenInterval: Duration = .seconds(30)
    var clock: any Clock<Duration> = ContinuousClock()

    public func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await committer.run() }
                group.addTask { await reopenWhileMemoryOnly() }
            }
        }
        await pipeline.saveBaseline()
        // `run()` committed the rest when it was cancelled; anything still buffered failed to commit.
        let left = await committer.bufferedCount
        if left > 0 { logger.error("readings not committed at shutdown", metadata: ["store.buffered": "\(left)"]) }
        store.close()
        logger.info("store closed")
    }
}

extension StoreService {
    /// A store that fell back to memory at start is tried on disk again every `reopenInterval`
    /// until the disk takes it (`ReadingStore.reopenIfMemoryOnly`).
    func reopenWhileMemoryOnly() async {
        while !Task.isCancelled, store.statistics().memoryOnlyReason != nil {
            do { try await clock.sleep(for: reopenInterval) } catch { return }
            if store.reopenIfMemoryOnly() {
                logger.info("store back on disk")
                return
            }
        }
    }
}

/// What the sources tell the sync heartbeat (read from the sync engine's synchronous closure).
package final class HeartbeatState: Sendable {
    private struct State {
        var strap = "searching"
        var gpsd = "no_device"
        var battery: Int?
        var paused = false
        var bodyLocation: String?
        var profile: DeviceProfile?
        var taxiState: TaxiAvailability?
        var run: RunParticipation?
        var care = CareStatus(version: nil, conflicts: [])
        var power: DevicePower?
        var powerLevel = PowerWatch.Level.normal
        /// Since when (the stopwatch's time) each condition of `conditions_for_s` has held.
        var since: [String: Duration] = [:]
    }

    private let state = Mutex(State())
    private let elapsed: @Sendable () -> Duration
    /// The strap's battery below this many percent is low (`strap.battery_warning_percent`).
    let batteryWarningPercent: Int

    package convenience init(batteryWarningPercent: Int = StrapConfiguration.defaultBatteryWarningPercent) {
        self.init(batteryWarningPercent: batteryWarningPercent, clock: ContinuousClock())
    }

    /// - Parameter clock: times how long each condition has held (`conditions_for_s`).
    package init(batteryWarningPercent: Int, clock: any Clock<Duration>) {
        self.batteryWarningPercent = batteryWarningPercent
        elapsed = Self.stopwatch(clock)
    }

    private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// Starts or ends the timing of a condition: a condition that goes on holding keeps its start.
    private static func mark(_ condition: String, _ holds: Bool, at now: Duration, in state: inout State) {
        if !holds {
            state.since[condition] = nil
        } else if state.since[condition] == nil {
            state.since[condition] = now
        }
    }

    package func strap(_ value: String) { state.withLock { $0.strap = value } }
    package func gpsd(_ value: String) { state.withLock { $0.gpsd = value } }
    /// Records the level; returns whether it is low.
    @discardableResult
    func battery(_ value: Int) -> Bool {
        let now = elapsed()
        let low = value < batteryWarningPercent
        state.withLock {
            $0.battery = value
            Self.mark("strap_battery_low", low, at: now, in: &$0)
        }
        return low
    }
    func paused(_ value: Bool) {
        let now = elapsed()
        state.withLock {
            $0.paused = value
            Self.mark("monitoring_paused", value, at: now, in: &$0)
        }
    }
    func bodyLocation(_ value: String) { state.withLock { $0.bodyLocation = value } }
    /// The device's profile, and a taxi's availability or a runner's run, sent with every batch.
    func profile(_ value: DeviceProfile) { state.withLock { $0.profile = value } }
    func taxiState(_ value: TaxiAvailability?) { state.withLock { $0.taxiState = value } }
    func run(_ value: RunParticipation?) { state.withLock { $0.run = value } }
    /// The care settings version in force and the local overrides that conflict with it.
    func care(_ value: CareStatus) { state.withLock { $0.care = value } }
    func careStatus() -> CareStatus { state.withLock { $0.care } }
    /// The device's own power as last read, and the level `PowerWatch` gave it.
    func power(_ value: DevicePower?, level: PowerWatch.Level) {
        let now = elapsed()
        state.withLock {
            $0.power = value
            $0.powerLevel = level
            Self.mark("device_battery_low", level != .normal, at: now, in: &$0)
            Self.mark("charging", value?.source == .charging, at: now, in: &$0)
        }
    }

    /// The heartbeat as the sources last told it. With `store` (the store's statistics now) the
    /// store's own conditions are timed too: running from memory (`store_memory_only`) and
    /// holding readings that failed their check (`quarantined`, since this run of the agent first
    /// saw them).
    package func heartbeat(store: StoreStatistics? = nil) -> DeviceHeartbeat {
        let threshold = batteryWarningPercent
        let now = elapsed()
        return state.withLock {
            if let store {
                Self.mark("store_memory_only", store.memoryOnlyReason != nil, at: now, in: &$0)
                Self.mark("quarantined", store.quarantinedReadings > 0, at: now, in: &$0)
            }
            var heartbeat = DeviceHeartbeat(
                strap: $0.strap,
                gpsd: $0.gpsd,
                storeDepth: 0,
                storeBytes: 0,
                batteryPercent: $0.battery,
                batteryLow: $0.battery.map { $0 < threshold },
                monitoringPaused: $0.paused,
                bodySensorLocation: $0.bodyLocation
            )
            heartbeat.profile = $0.profile
            heartbeat.taxiState = $0.taxiState
            heartbeat.run = $0.run
            heartbeat.careVersion = $0.care.version
            heartbeat.careConflicts = $0.care.conflicts.isEmpty ? nil : $0.care.conflicts
            heartbeat.careOverrides = $0.care.overrides.isEmpty ? nil : $0.care.overrides
            heartbeat.deviceBatteryPercent = $0.power?.percent
            heartbeat.devicePower = $0.power?.source
            heartbeat.devicePowerLevel = $0.powerLevel == .normal ? nil : $0.powerLevel
            let since = $0.since
            heartbeat.conditionSeconds = since.isEmpty ? nil : since.mapValues { (now - $0).components.seconds }
            return heartbeat
        }
    }
}

extension BodySensorLocation {
    /// The heartbeat's and status's spelling (WIRE.md).
    var wireName: String {
        switch self {
        case .other: "other"
        case .chest: "chest"
        case .wrist: "wrist"
        case .finger: "finger"
        case .hand: "hand"
        case .earLobe: "ear_lobe"
        case .foot: "foot"
        }
    }
}

/// The heart-rate source: keeps the strap connected (`HeartRateLink`) and feeds every reading
/// and link change to the pipeline. With the socket-pair transport it also plays the simulated
/// strap's trace, in a loop.
public struct HeartRateService: Service {
    let link: HeartRateLink
    let simulated: SimulatedStrap?
    let pipeline: AgentPipeline
    let control: PipelineControl
    let heartbeat: HeartbeatState
    let timestamps: AgentTimestamps
    let logger: Logger

    public func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let simulated {
                    group.addTask {
                        while !Task.isCancelled {
                            do { try await simulated.play() } catch { return }
                        }
                    }
                }
                await consume()
                group.cancelAll()
            }
        }
    }

    private func consume() async {
        let readings = Counter(label: AgentMetricNames.heartRateReadings)
        let bpm = Gauge(label: AgentMetricNames.heartRate)
        let connected = Gauge(label: AgentMetricNames.strapConnected)
        let battery = Gauge(label: AgentMetricNames.strapBattery)
        await control.strapLink(.scanning)
        for await event in link.events() {
            switch event {
            case .reading(let reading, _):
                let now = timestamps.now()
                readings.increment()
                bpm.record(reading.bpm)
                await control.heartRate(reading, at: now)
                await control.observe(await pipeline.heartRate(reading, at: now))
            case .linkState(.connected(let address, _)):
                connected.record(1)
                heartbeat.strap("connected")
                await control.strapLink(.connected, address: address.map { "\($0)" })
                await control.observe(await pipeline.receive(.strapLink(.connected), at: timestamps.now()))
            case .linkState(.searching(let attempt)):
                await control.strapLink(attempt > 1 ? .connecting : .scanning)
            case .linkState(.lost(_, let reason)):
                connected.record(0)
                heartbeat.strap("lost")
                logger.warning("strap link lost", metadata: ["ble.reason": "\(reason)"])
                await control.strapLink(.disconnected)
                await control.observe(await pipeline.receive(.strapLink(.disconnected), at: timestamps.now()))
            case .linkState(.unreachable(let reason, _, let retryIn)):
                logger.info("strap unreachable", metadata: ["ble.reason": "\(reason)", "ble.retry_in": "\(retryIn)"])
                await control.strapLink(.disconnected)
            case .battery(let percent):
                battery.record(percent)
                let low = heartbeat.battery(percent)
                await control.strapBattery(percent, low: low)
            case .bodySensorLocation(let location):
                heartbeat.bodyLocation(location.wireName)
                await control.strapBodyLocation(location.wireName)
            case .malformed(let raw, let error):
                logger.info("malformed heart rate notification ignored", metadata: ["ble.error": "\(error)", "ble.bytes": "\(raw.count)"])
            }
        }
    }
}

/// The position source: gpsd through libgps, every fix to the pipeline.
public struct GPSService: Service {
    let reader: GPSDReader
    let pipeline: AgentPipeline
    let control: PipelineControl
    let heartbeat: HeartbeatState
    let timestamps: AgentTimestamps
    let logger: Logger

    public func run() async {
        let fixMode = Gauge(label: AgentMetricNames.gpsFixMode)
        let fixes = Counter(label: AgentMetricNames.gpsFixes)
        await control.gpsd(.connecting)
        await cancelWhenGracefulShutdown {
            for await event in reader.events() {
                switch event {
                case .fix(let fix):
                    let now = timestamps.now()
                    fixes.increment()
                    await control.fix(fix, at: now)
                    await control.observe(await pipeline.position(fix, at: now))
                case .state(let state):
                    switch state {
                    case .disconnected:
                        // The reader logs each failed attempt with its error and backoff.
                        heartbeat.gpsd("no_device")
                        await control.gpsd(.disconnected)
                    case .connected:
                        heartbeat.gpsd("connected")
                        await control.gpsd(.connected)
                    case .noDevice:
                        fixMode.record(1)
                        heartbeat.gpsd("no_device")
                        await control.gpsd(.connected)
                    case .noFix:
                        fixMode.record(1)
                        heartbeat.gpsd("no_fix")
                        await control.gpsd(.connected)
                    case .fix(let mode):
                        fixMode.record(mode == .threeDimensional ? 3 : 2)
                        heartbeat.gpsd("fix")
                        await control.gpsd(.connected)
                    }
                }
            }
        }
    }
}

/// Time for the SOS engine (countdowns, strap silent, contact lost): a tick every 250 ms, and
/// the store's depth and size for `status` and the gauges every second, and the wall-clock
/// anchors saved when a trusted time taught a new one.
public struct TickerService: Service {
    let pipeline: AgentPipeline
    let control: PipelineControl
    let timestamps: AgentTimestamps
    let logger: Logger

    public func run() async {
        await cancelWhenGracefulShutdown {
            let clock = ContinuousClock()
            var deadline = clock.now
            var count = 0
            while !Task.isCancelled {
                deadline = deadline.advanced(by: .milliseconds(250))
                do { try await clock.sleep(until: deadline, tolerance: .milliseconds(20)) } catch { return }
                await control.observe(await pipeline.receive(.tick, at: timestamps.now()))
                await control.rideTick()
                count += 1
                if count % 4 == 0 {
                    await control.refreshStore(pipeline.store.statistics())
                    timestamps.saveAnchors(to: pipeline.store, logger: logger)
                }
            }
        }
    }
}

/// The dispatch lane: sends alerts at once (those left undelivered before a restart first),
/// retries, runs the local fallback; its deliveries go back into the SOS engine.
public struct DispatchService: Service {
    let lane: DispatchLane
    let pipeline: AgentPipeline
    let control: PipelineControl
    let timestamps: AgentTimestamps
    let logger: Logger

    public func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await lane.run() }
                for await event in lane.events {
                    switch event {
                    case .delivered(let id):
                        await control.observe(await pipeline.receive(.delivered(alertID: id), at: timestamps.now()))
                    case .sendFailed(let update, let error):
                        logger.warning("alert send failed", metadata: ["sos.alert_id": "\(update.alert.id)", "dispatch.error": "\(error)"])
                    case .fallbackFailed(let id, _, let error):
                        logger.error("local fallback failed", metadata: ["sos.alert_id": "\(id)", "dispatch.error": "\(error)"])
                    case .fallbackSucceeded(let id, _):
                        logger.notice("local fallback ran", metadata: ["sos.alert_id": "\(id)"])
                    case .showAcknowledgement(let id, let acknowledged):
                        await control.feedback(.acknowledgement(alertID: id, acknowledged: acknowledged))
                    case .sent(let update):
                        await control.feedback(.sent(update))
                    }
                    if Task.isCancelled { break }
                }
                group.cancelAll()
            }
        }
    }
}

/// Sync: the readings lane's batches to the server; acknowledgements and resolutions from
/// dispatchers, which come back with them, go back into the SOS engine.
public struct SyncService: Service {
    let engine: SyncEngine
    let events: AsyncStream<SyncEvent>
    /// `.acknowledged` and `.resolved` as the batch acknowledgements report them.
    let fromDispatchers: AsyncStream<SOSEvent>
    let pipeline: AgentPipeline
    let control: PipelineControl
    let timestamps: AgentTimestamps
    /// Carries out what the server's replies order (care settings, a wipe).
    let replyOrders: SyncReplyOrders

    public func run() async {
        let batchesOK = Counter(label: AgentMetricNames.syncBatches, dimensions: [("result", "ok")])
        let batchesFailed = Counter(label: AgentMetricNames.syncBatches, dimensions: [("result", "failed")])
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await engine.run() }
                group.addTask {
                    for await event in fromDispatchers {
                        await control.observe(await pipeline.receive(event, at: timestamps.now()))
                    }
                }
                for await event in events {
                    switch event {
                    case .batchAcknowledged:
                        batchesOK.increment()
                        await control.syncSucceeded(at: timestamps.now())
                    case .sendFailed(let error, _), .rejected(let error):
                        batchesFailed.increment()
                        await control.syncFailed("\(error)")
                    case .heartbeatSentAlone:
                        break
                    case .orders(let orders):
                        await replyOrders.handle(orders)
                        if let ride = orders.ride { await control.rideNotice(ride) }
                    }
                    if Task.isCancelled { break }
                }
                group.cancelAll()
            }
        }
    }
}
