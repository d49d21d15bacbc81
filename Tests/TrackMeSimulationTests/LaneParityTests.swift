import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import Logging
import Testing
import TrackMeAgent
import TrackMeCore
import TrackMeServer

@testable import TrackMeSimulation

/// The same fault timeline through the agent's lanes as the daemon runs them (their own loops on
/// the real clock, with short intervals) and as the simulation steps them (on the virtual clock
/// its event loop advances) gives the same deliveries: every reading once at the server, the same
/// alert updates. Both are built by the one composition root (`AgentCore`); the history of the
/// simulation's own copies of the lanes ("... as the agent does") is what this guards against.
@Suite struct LaneParityTests {
    /// 40 steps: a reading each; a manual SOS at step 12 inside a network outage (steps 10-19),
    /// so the raise is retried until the network is back; the wearer cancels at step 30.
    static let steps = 40
    static let outage = 10..<20
    static let sosAt = 12
    static let cancelAt = 30

    struct Deliveries: Equatable {
        var sequences: [Int64]
        var duplicates: Int
        var alertUpdates: [String]
    }

    /// Short intervals for the real-clock run; the simulation uses the same ones on virtual time.
    static func syncConfiguration(_ credentials: DeviceCredentials) -> SyncConfiguration {
        SyncConfiguration(
            deviceID: credentials.deviceID, token: credentials.token, maxBatchReadings: 8, heartbeatInterval: .seconds(2),
            pollInterval: .milliseconds(10), sendInterval: .milliseconds(40),
            backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(80), jitter: 1, retryAfterCap: .milliseconds(80)))
    }

    static func dispatchSettings() -> DispatchSettings {
        var settings = DispatchSettings()
        settings.retryInterval = .milliseconds(20)
        settings.positionInterval = .milliseconds(20)
        return settings
    }

    /// What the server holds for the device after the run.
    static func deliveries(server: TrackMeServer, deviceID: String, alertIDs: [String]) async throws -> Deliveries {
        let stored = try await server.storedSequences(deviceID: deviceID)
        var updates: [String] = []
        for id in alertIDs {
            updates += try await server.alertUpdates(alertID: id).map { "\($0.alert.id)#\($0.updateSequence):\($0.type.rawValue)" }
        }
        return Deliveries(sequences: Array(Set(stored)).sorted(), duplicates: stored.count - Set(stored).count, alertUpdates: updates.sorted())
    }

    struct Rig {
        let work: URL
        let server: TrackMeServer
        let serverTask: Task<Void, any Error>
        let credentials: DeviceCredentials
        let faults = FaultState()
        let transport: FaultInjectingTransport
        let store: ReadingStore

        init(_ name: String) async throws {
            work = FileManager.default.temporaryDirectory.appendingPathComponent("lane-parity-\(name)-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let server = try await TrackMeServer(
                configuration: ServerConfiguration(
                    host: "127.0.0.1", port: 0, storage: .sqlite(path: work.appendingPathComponent("server.sqlite").path),
                    durability: .processCrash, adminToken: "parity-admin", limits: .withoutRateLimits),
                logger: logger)
            self.server = server
            serverTask = Task { try await server.run() }
            let port = try await server.boundPort()
            credentials = try await server.enrolDevice(deviceID: "parity-\(name)", person: PersonProfile(name: "P", age: 40))
            let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
            transport = FaultInjectingTransport(base: CurlTransport(baseURL: baseURL), faults: faults)
            store = try ReadingStore(
                configuration: StoreConfiguration(path: work.appendingPathComponent("agent.sqlite").path, durability: .processCrash),
                logger: logger)
        }

        func inputs(clock: any Clock<Duration>) -> AgentCore.Inputs {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            var inputs = AgentCore.Inputs(
                store: store, sync: LaneParityTests.syncConfiguration(credentials), profile: PersonProfile(name: "P", age: 40),
                dispatch: LaneParityTests.dispatchSettings(), clock: clock, transport: transport,
                ids: SequentialAlertIDs(prefix: "parity"), timestamp: { ScenarioRunner.timestamp(0) }, logger: logger)
            inputs.seed = 7
            return inputs
        }

        func close() {
            store.close()
            serverTask.cancel()
            try? FileManager.default.removeItem(at: work)
        }
    }

    /// Step `i` of the timeline, for the pipeline (its data time is the same in both runs).
    static func feed(_ pipeline: AgentPipeline, step i: Int) async {
        let at = ScenarioRunner.timestamp(Int64(i) * 1000)
        await pipeline.heartRate(HeartRateReading(bpm: 70, contact: .detected), at: at)
        if i == sosAt { await pipeline.receive(.manualSOS, at: at) }
        if i == cancelAt { await pipeline.receive(.cancel(.falseAlarm), at: at) }
        await pipeline.receive(.tick, at: at)
    }

    @Test func theDaemonsLanesAndTheSimulationDeliverTheSame() async throws {
        let daemon = try await runDaemonLanes()
        let simulated = try await runSimulated()
        #expect(daemon.sequences.count >= Self.steps)
        #expect(daemon.duplicates == 0 && simulated.duplicates == 0)
        #expect(daemon.alertUpdates.contains { $0.hasSuffix(":raised") } && daemon.alertUpdates.contains { $0.hasSuffix(":cancelled") })
        #expect(daemon == simulated)
    }

    /// The daemon's way: `SyncEngine.run()` and `DispatchLane.run()` on the real clock, the lane's
    /// deliveries fed back to the rules as `DispatchService` does.
    func runDaemonLanes() async throws -> Deliveries {
        let rig = try await Rig("daemon")
        defer { rig.close() }
        let core = AgentCore(rig.inputs(clock: ContinuousClock()))
        let syncTask = Task { await core.sync.run() }
        let laneTask = Task { await core.lane.run() }
        let feedback = Task {
            for await event in core.lane.events {
                switch event {
                case .delivered(alertID: let id): await core.pipeline.receive(.delivered(alertID: id), at: ScenarioRunner.timestamp(0))
                case .sent(let update) where update.type == .cancelled: return
                default: continue
                }
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for i in 0..<Self.steps {
            // The timeline's pace: one step every 30 ms of real time.
            try await clock.sleep(until: start.advanced(by: .milliseconds(30 * i)))
            rig.faults.update { $0.networkDown = Self.outage.contains(i) }
            await Self.feed(core.pipeline, step: i)
            await core.committer.flush()
        }
        // The cancellation is delivered (the lane retries until it is), then the readings drain.
        await feedback.value
        laneTask.cancel()
        syncTask.cancel()
        await laneTask.value
        await syncTask.value
        try await core.sync.drain()
        return try await Self.deliveries(server: rig.server, deviceID: rig.credentials.deviceID, alertIDs: ["parity-1"])
    }

    /// The simulation's way: the same parts stepped by an event loop on a `VirtualClock`.
    func runSimulated() async throws -> Deliveries {
        let rig = try await Rig("simulated")
        defer { rig.close() }
        let clock = VirtualClock()
        let events = SimulatedDevice.DispatchInbox()
        var inputs = rig.inputs(clock: clock)
        inputs.onLaneEvent = { events.noteLaneEvent($0) }
        let core = AgentCore(inputs)
        var nextVisit = Duration.zero
        func step() async {
            await core.lane.step()
            for event in events.takeLaneEvents() {
                if case .delivered(alertID: let id) = event { await core.pipeline.receive(.delivered(alertID: id), at: ScenarioRunner.timestamp(0)) }
            }
            if clock.now.offset >= nextVisit { nextVisit = clock.now.offset + (await core.sync.readingsVisit()) }
        }
        for i in 0..<Self.steps {
            rig.faults.update { $0.networkDown = Self.outage.contains(i) }
            await Self.feed(core.pipeline, step: i)
            await core.committer.flush()
            // 30 ms of the lanes' time per step, in 10 ms ticks.
            for _ in 0..<3 {
                await step()
                clock.advance(by: .milliseconds(10))
            }
        }
        for _ in 0..<100 {
            if await core.lane.queuedUpdates.isEmpty { break }
            await step()
            clock.advance(by: .milliseconds(10))
        }
        _ = await core.sync.readingsVisit(drain: true)
        return try await Self.deliveries(server: rig.server, deviceID: rig.credentials.deviceID, alertIDs: ["parity-1"])
    }
}
