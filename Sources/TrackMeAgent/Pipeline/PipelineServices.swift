import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
import GPSDPosition
import Logging
import Metrics
public import ServiceLifecycle
import SimulatedStrap
import Synchronization
import TrackMeCore

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
        let left = committer.bufferedCount
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
        let state = pipeline.state
        state.update { state, _ in state.record(strapLink: .scanning) }
        for await event in link.events() {
            switch event {
            case .reading(let reading, _):
                readings.increment()
                bpm.record(reading.bpm)
                await pipeline.heartRate(reading, at: timestamps.now())
            case .linkState(.connected(let address, _)):
                connected.record(1)
                state.update { state, _ in state.record(strapLink: .connected, address: address.map { "\($0)" }) }
                await pipeline.receive(.strapLink(.connected), at: timestamps.now())
            case .linkState(.searching(let attempt)):
                state.update { state, _ in state.record(strapLink: attempt > 1 ? .connecting : .scanning) }
            case .linkState(.lost(_, let reason)):
                connected.record(0)
                logger.warning("strap link lost", metadata: ["ble.reason": "\(reason)"])
                state.update { state, _ in state.record(strapLink: .disconnected) }
                await pipeline.receive(.strapLink(.disconnected), at: timestamps.now())
            case .linkState(.unreachable(let reason, _, let retryIn)):
                logger.info("strap unreachable", metadata: ["ble.reason": "\(reason)", "ble.retry_in": "\(retryIn)"])
                state.update { state, _ in state.record(strapLink: .disconnected) }
            case .battery(let percent):
                battery.record(percent)
                control.strapBattery(percent)
            case .bodySensorLocation(let location):
                state.update { state, _ in state.strapBodyLocation = location.wireName }
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
    let timestamps: AgentTimestamps
    let logger: Logger

    public func run() async {
        let fixMode = Gauge(label: AgentMetricNames.gpsFixMode)
        let fixes = Counter(label: AgentMetricNames.gpsFixes)
        let agent = pipeline.state
        agent.update { state, _ in state.gpsd = .connecting }
        await cancelWhenGracefulShutdown {
            for await event in reader.events() {
                switch event {
                case .fix(let fix):
                    fixes.increment()
                    await pipeline.position(fix, at: timestamps.now())
                case .state(let state):
                    let gpsd: AgentState.GPSDState
                    switch state {
                    case .disconnected:
                        // The reader logs each failed attempt with its error and backoff.
                        gpsd = .disconnected
                    case .connected:
                        gpsd = .connected
                    case .noDevice:
                        fixMode.record(1)
                        gpsd = .noDevice
                    case .noFix:
                        fixMode.record(1)
                        gpsd = .noFix
                    case .fix(let mode):
                        fixMode.record(mode == .threeDimensional ? 3 : 2)
                        gpsd = .fix
                    }
                    agent.update { state, _ in state.gpsd = gpsd }
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
                await pipeline.receive(.tick, at: timestamps.now())
                await control.rideTick()
                count += 1
                if count % 4 == 0 {
                    control.refreshStore(pipeline.store.statistics())
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
                        await pipeline.receive(.delivered(alertID: id), at: timestamps.now())
                    case .sendFailed(let update, let error):
                        logger.warning("alert send failed", metadata: ["sos.alert_id": "\(update.alert.id)", "dispatch.error": "\(error)"])
                    case .fallbackFailed(let id, _, let error):
                        logger.error("local fallback failed", metadata: ["sos.alert_id": "\(id)", "dispatch.error": "\(error)"])
                    case .fallbackSucceeded(let id, _):
                        logger.notice("local fallback ran", metadata: ["sos.alert_id": "\(id)"])
                    case .showAcknowledgement(let id, let acknowledged):
                        control.feedback(.acknowledgement(alertID: id, acknowledged: acknowledged))
                    case .sent(let update):
                        control.feedback(.sent(update))
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
                        await pipeline.receive(event, at: timestamps.now())
                    }
                }
                for await event in events {
                    switch event {
                    case .batchAcknowledged:
                        batchesOK.increment()
                        let now = timestamps.now()
                        pipeline.state.update { state, _ in state.recordSyncSuccess(at: now) }
                    case .sendFailed(let error, _), .rejected(let error):
                        batchesFailed.increment()
                        pipeline.state.update { state, _ in state.recordSyncFailure("\(error)") }
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
