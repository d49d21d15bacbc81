import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeAgent
import TrackMeCore
import TrackMeServer

@testable import TrackMeSimulation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The same fault timeline through the agent's lanes as the daemon runs them (their own loops on
/// the real clock, with short intervals) and as the simulation steps them (on the virtual clock
/// its event loop advances) gives the same deliveries: every reading once at the server, the same
/// alert updates, and no alert update POSTed twice (the server's duplicate counter stays 0: with
/// the network down a request never reaches it, and a slow answer is never given up on here, so
/// only a second sender could make one). Both
/// are built by the one composition root (`AgentCore`); the history of the simulation's own
/// copies of the lanes ("... as the agent does") is what this guards against.
@Suite struct LaneParityTests {
    /// 40 steps: a reading each; a manual SOS at step 12, inside a network outage (steps 10-19)
    /// when the timeline has one, so the raise is retried until the network is back; the wearer
    /// cancels at step 30.
    static let steps = 40
    static let sosAt = 12
    static let cancelAt = 30

    struct Deliveries: Equatable {
        var sequences: [Int64]
        var duplicates: Int
        var alertUpdates: [String]
        /// Alert update POSTs the server had already (`trackme_server_alert_updates_duplicate_total`).
        var duplicateAlertPosts: Int
    }

    /// Short intervals for the real-clock run; the simulation uses the same ones on virtual time.
    static func syncConfiguration(_ credentials: DeviceCredentials) -> SyncConfiguration {
        SyncConfiguration(
            deviceID: credentials.deviceID,
            token: credentials.token,
            maxBatchReadings: 8,
            heartbeatInterval: .seconds(2),
            pollInterval: .milliseconds(10),
            sendInterval: .milliseconds(40),
            backoff: Backoff(initial: .milliseconds(10), maximum: .milliseconds(80), jitter: 1, retryAfterCap: .milliseconds(80))
        )
    }

    static func dispatchSettings() -> DispatchSettings {
        var settings = DispatchSettings()
        settings.retryInterval = .milliseconds(20)
        settings.positionInterval = .milliseconds(20)
        // On a busy machine the server may answer after the lane's 3 s: the lane would then
        // rightly send again (and run its fallback), a duplicate the server absorbs that says
        // nothing about how many senders there are. The outage fails sends at once regardless.
        settings.sendTimeout = .seconds(600)
        return settings
    }

    /// What the server holds for the device after the run.
    static func deliveries(_ rig: Rig, alertIDs: [String]) async throws -> Deliveries {
        let stored = try await rig.server.storedSequences(deviceID: rig.credentials.deviceID)
        var updates: [String] = []
        for id in alertIDs {
            updates += try await rig.server.alertUpdates(alertID: id).map { "\($0.alert.id)#\($0.updateSequence):\($0.type.rawValue)" }
        }
        return Deliveries(
            sequences: Array(Set(stored)).sorted(),
            duplicates: stored.count - Set(stored).count,
            alertUpdates: updates.sorted(),
            duplicateAlertPosts: try await rig.counter("trackme_server_alert_updates_duplicate_total")
        )
    }

    struct Rig {
        let work: URL
        let server: TrackMeServer
        let serverTask: Task<Void, any Error>
        let credentials: DeviceCredentials
        let faults = FaultState()
        let transport: FaultInjectingTransport
        let store: ReadingStore
        let baseURL: URL

        init(_ name: String) async throws {
            work = FileManager.default.temporaryDirectory.appendingPathComponent("lane-parity-\(name)-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let server = try await TrackMeServer(
                configuration: ServerConfiguration(
                    host: "127.0.0.1",
                    port: 0,
                    storage: .sqlite(path: work.appendingPathComponent("server.sqlite").path),
                    durability: .processCrash,
                    adminToken: "parity-admin",
                    limits: .withoutRateLimits
                ),
                logger: logger
            )
            self.server = server
            serverTask = Task { try await server.run() }
            let port = try await server.boundPort()
            credentials = try await server.enrolDevice(deviceID: "parity-\(name)", person: PersonProfile(name: "P", age: 40))
            let baseURL = try #require(URL(string: "http://127.0.0.1:\(port)"))
            self.baseURL = baseURL
            // A request slower than the transport's limit is retried, and the retry is a second POST
            // of what the server took: on a machine busy enough for that (a 2-core machine running
            // the whole suite), the test would count a timeout it did not inject. Its faults are the
            // injected ones only.
            transport = FaultInjectingTransport(base: CurlTransport(baseURL: baseURL, timeout: .seconds(600)), faults: faults)
            store = try ReadingStore(
                configuration: StoreConfiguration(path: work.appendingPathComponent("agent.sqlite").path, durability: .processCrash),
                logger: logger
            )
        }

        func inputs(clock: any Clock<Duration>) -> AgentCore.Inputs {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            var inputs = AgentCore.Inputs(
                store: store,
                sync: LaneParityTests.syncConfiguration(credentials),
                profile: PersonProfile(name: "P", age: 40),
                dispatch: LaneParityTests.dispatchSettings(),
                clock: clock,
                transport: transport,
                ids: SequentialAlertIDs(prefix: "parity"),
                timestamp: { ScenarioRunner.timestamp(0) },
                logger: logger
            )
            inputs.seed = 7
            return inputs
        }

        /// A counter from the server's `/metrics` (loopback needs no token).
        func counter(_ name: String) async throws -> Int {
            let (data, _) = try await URLSession.shared.data(from: baseURL.appendingPathComponent("metrics"))
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix(name + " ") {
                if let value = Int(line.dropFirst(name.count + 1)) { return value }
            }
            Issue.record("no \(name) in /metrics")
            return -1
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

    @Test("the daemon's lanes and the simulation deliver the same, each alert update POSTed once", arguments: [false, true])
    func theDaemonsLanesAndTheSimulationDeliverTheSame(outage: Bool) async throws {
        let down = outage ? 10..<20 : 0..<0
        let daemon = try await runDaemonLanes(outage: down)
        let simulated = try await runSimulated(outage: down)
        #expect(daemon.sequences.count >= Self.steps)
        #expect(daemon.duplicates == 0 && simulated.duplicates == 0)
        #expect(daemon.alertUpdates.contains { $0.hasSuffix(":raised") } && daemon.alertUpdates.contains { $0.hasSuffix(":cancelled") })
        #expect(daemon.duplicateAlertPosts == 0, "the daemon's lanes POSTed an alert update the server already had")
        #expect(simulated.duplicateAlertPosts == 0, "the simulation POSTed an alert update the server already had")
        #expect(daemon == simulated)
    }

    /// A raise journaled while the server could not be reached, then a restart: the new agent's
    /// dispatch lane takes it from the journal and sends it once, the rules hear it delivered,
    /// and the journal records the delivery (a third start sends nothing).
    @Test func aRaiseLeftUndeliveredBeforeARestartGoesOutOnceThroughTheDispatchLane() async throws {
        let rig = try await Rig("restart")
        defer { rig.close() }
        let clock = VirtualClock()
        rig.faults.update { $0.networkDown = true }
        let first = AgentCore(rig.inputs(clock: clock))
        await first.pipeline.receive(.manualSOS, at: ScenarioRunner.timestamp(1000))
        let raised = await first.pipeline.receive(.tick, at: ScenarioRunner.timestamp(20_000))
        #expect(raised.contains { if case .raise = $0 { true } else { false } })
        await first.lane.step()
        #expect(rig.store.pendingAlertUpdates().map(\.updateSequence) == [0])

        rig.faults.update { $0.networkDown = false }
        let events = SimulatedDevice.DispatchInbox()
        var inputs = rig.inputs(clock: clock)
        inputs.onLaneEvent = { events.noteLaneEvent($0) }
        let second = AgentCore(inputs)
        #expect(second.restored?.id == "parity-1")
        await second.lane.step()
        for event in events.takeLaneEvents() {
            if case .delivered(alertID: let id) = event {
                await second.pipeline.receive(.delivered(alertID: id), at: ScenarioRunner.timestamp(21_000))
            }
        }
        #expect(second.pipeline.current.openAlert?.state == .delivered)
        #expect(rig.store.pendingAlertUpdates().isEmpty)
        let third = AgentCore(rig.inputs(clock: clock))
        #expect(await third.lane.queuedUpdates.isEmpty)
        #expect(try await rig.server.alertUpdates(alertID: "parity-1").map(\.updateSequence) == [0])
        #expect(try await rig.counter("trackme_server_alert_updates_duplicate_total") == 0)
    }

    /// The transport to the server, keeping every alert update the device POSTed.
    final class RecordingTransport: HTTPTransport {
        let base: any HTTPTransport
        let posted = Mutex<[AlertUpdate]>([])

        init(base: any HTTPTransport) { self.base = base }

        func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
            let response = try await base.post(path: path, headers: headers, body: body)
            if path.hasSuffix("v1/alerts"), let update = try? WireCodec.decode(AlertUpdate.self, from: Data(body)) {
                posted.withLock { $0.append(update) }
            }
            return response
        }
    }

    /// The fallback tells contact 0 while the server cannot be reached; the agent restarts
    /// before the raise gets through: the raise the restarted agent sends still names contact 0
    /// (read back from the store, reopened), so the server does not tell them again.
    @Test func aContactTheFallbackToldBeforeARestartIsNamedByTheRaiseSentAfterIt() async throws {
        let rig = try await Rig("told")
        defer { rig.close() }
        let script = rig.work.appendingPathComponent("fallback.sh")
        try "#!/bin/sh\nexit 0\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        let clock = VirtualClock()
        rig.faults.update { $0.networkDown = true }
        var inputs = rig.inputs(clock: clock)
        inputs.fallback = ExecutableFallback(executable: script)
        let first = AgentCore(inputs)
        await first.pipeline.receive(.manualSOS, at: ScenarioRunner.timestamp(1000))
        _ = await first.pipeline.receive(.tick, at: ScenarioRunner.timestamp(20_000))
        await first.lane.step()
        for _ in 1...181 {
            clock.advance(by: .seconds(1))
            await first.lane.step()
        }
        #expect(rig.store.pendingAlertUpdates().map(\.updateSequence) == [0], "the raise never got through")
        rig.store.close()

        let reopened = try ReadingStore(
            configuration: StoreConfiguration(path: rig.work.appendingPathComponent("agent.sqlite").path, durability: .processCrash),
            logger: Logger(label: "test")
        )
        defer { reopened.close() }
        rig.faults.update { $0.networkDown = false }
        let recording = RecordingTransport(base: rig.transport)
        inputs = rig.inputs(clock: clock)
        inputs.store = reopened
        inputs.transport = recording
        let second = AgentCore(inputs)
        #expect(second.restored?.id == "parity-1")
        await second.lane.step()
        let raise = try #require(recording.posted.withLock { $0.first })
        #expect(raise.updateSequence == 0)
        #expect(raise.contactsTold.map(\.contactIndex) == [0], "the restarted agent forgot whom its fallback told")
        #expect(raise.contactsTold.first?.path == .localFallback)
    }

    /// The care setting `discreet_sos` and a discreet press are one flag on the alert: a rule's
    /// alert raised under the setting, with the server out of reach, runs the local fallback
    /// with `TRACKME_DISCREET=1` (no siren, no sound at the wearer's side).
    @Test func aRuleAlertUnderTheCareSettingDiscreetSOSTellsTheFallbackItIsDiscreet() async throws {
        let rig = try await Rig("discreet")
        defer { rig.close() }
        let script = rig.work.appendingPathComponent("fallback.sh")
        let out = rig.work.appendingPathComponent("discreet.txt")
        try "#!/bin/sh\nprintf '%s %s' \"$TRACKME_DISCREET\" \"$TRACKME_FALLBACK_REASON\" > \"\(out.path)\"\n"
            .write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        var care = CareSettings(version: 1)
        care.discreetSOS = true
        let person = PersonProfile(name: "P", age: 40)
        let resolution = CareSettingsResolution(configured: person, overrides: SOSRuleOverrides(), server: care)
        let clock = VirtualClock()
        rig.faults.update { $0.networkDown = true }
        var inputs = rig.inputs(clock: clock)
        inputs.settings = resolution.settings
        inputs.profile = resolution.profile
        inputs.fallback = ExecutableFallback(executable: script)
        let core = AgentCore(inputs)
        var raised: AlertRecord?
        for second in 0..<40 where raised == nil {
            let at = ScenarioRunner.timestamp(Int64(second) * 1000)
            let actions =
                await core.pipeline.heartRate(HeartRateReading(bpm: 25, contact: .detected, rrIntervals: [2458]), at: at)
                + (await core.pipeline.receive(.tick, at: at))
            for case .raise(let record) in actions { raised = record }
        }
        let alert = try #require(raised, "the low heart rate raised no alert")
        #expect(alert.kind == .heartRateLow && alert.isDiscreet)
        for _ in 0..<3 {
            await core.lane.step()
            clock.advance(by: .seconds(1))
        }
        #expect(try String(contentsOf: out, encoding: .utf8) == "1 server_unreachable", "the fallback was not told the alert is discreet")
    }

    /// The daemon's way: `SyncEngine.run()` and `DispatchLane.run()` on the real clock, the lane's
    /// deliveries fed back to the rules as `DispatchService` does.
    func runDaemonLanes(outage: Range<Int>) async throws -> Deliveries {
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
            rig.faults.update { $0.networkDown = outage.contains(i) }
            await Self.feed(core.pipeline, step: i)
            core.committer.flush()
        }
        // The cancellation is delivered (the lane retries until it is), then the readings drain.
        await feedback.value
        laneTask.cancel()
        syncTask.cancel()
        await laneTask.value
        await syncTask.value
        try await core.sync.drain()
        return try await Self.deliveries(rig, alertIDs: ["parity-1"])
    }

    /// The simulation's way: the same parts stepped by an event loop on a `VirtualClock`.
    func runSimulated(outage: Range<Int>) async throws -> Deliveries {
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
            rig.faults.update { $0.networkDown = outage.contains(i) }
            await Self.feed(core.pipeline, step: i)
            core.committer.flush()
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
        return try await Self.deliveries(rig, alertIDs: ["parity-1"])
    }
}
