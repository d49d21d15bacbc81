import EdgeStore
import Foundation
import ServiceLifecycle
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// Issue 19: what the wearer's device promised and did not wire, through the daemon's own
/// composition root (`AgentAssembly`) over a real store file.
@Suite("wearer's device", .serialized)
struct WearerDeviceTests {
    /// A configuration with the simulated strap (nothing is started until the services run).
    static func configuration(
        _ directory: borrowing TemporaryDirectory,
        extra: String = "",
        person: String = "{name: Ada, age: 67}"
    ) throws
        -> AgentConfiguration
    {
        try "token-1".write(toFile: directory.file("token"), atomically: true, encoding: .utf8)
        return try ConfigurationLoader.parse(
            yaml: """
                person: \(person)
                server: {url: "http://127.0.0.1:9", device_id: pi-wearer, token_file: token}
                strap:
                  transport: socketpair
                  trace: \(Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv"))
                  pace: 20
                \(extra)
                store: {path: data/agent.sqlite}
                status: {socket: agent.sock}
                """,
            baseDirectory: directory.path
        )
    }

    static func seedBaseline(_ storePath: String, bpm: Int) throws {
        try FileManager.default.createDirectory(atPath: (storePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: storePath), logger: quietLogger)
        defer { store.close() }
        var estimator = RestingHeartRateEstimator(minimumSamples: 3)
        for _ in 0..<3 { estimator.add(HeartRateReading(bpm: bpm, contact: .detected)) }
        try store.setDeviceState(try JSONEncoder().encode(estimator), for: ReadingStore.DeviceStateKey.restingHeartRate)
    }

    @Test("a resting rate learned before the restart shapes the limits when the profile has none; status says why")
    func learnedBaselineShapesLimits() async throws {
        let directory = try TemporaryDirectory()
        let configuration = try Self.configuration(directory)
        try Self.seedBaseline(configuration.store.path, bpm: 52)
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let limits = try #require(await parts.control.status().limits)
        #expect(limits.minimumSource == "resting_rate")
        #expect(limits.minimumBPM == 32, "52 - 20")
        #expect(limits.learnedRestingBPM == 52)
        #expect(limits.maximumSource == "tanaka_age_predicted")
        #expect(limits.why.contains("learned"))
        #expect(StatusReport.render(await parts.control.status()).contains("32-161 bpm"))
    }

    @Test("the profile's own resting rate wins over the learned one")
    func profileWins() async throws {
        let directory = try TemporaryDirectory()
        let configuration = try Self.configuration(directory, person: "{name: Ada, age: 67, resting_hr: 70}")
        try Self.seedBaseline(configuration.store.path, bpm: 52)
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let limits = try #require(await parts.control.status().limits)
        #expect(limits.minimumBPM == 40)
        #expect(limits.why.contains("profile's resting rate 70"))
    }

    @Test("learning goes on while running: the estimate reshapes the limits and is saved for the next start")
    func learningWhileRunning() async throws {
        let directory = try TemporaryDirectory()
        let configuration = try Self.configuration(directory)
        // An estimator that needs 5 readings, saved with none: the next start learns from zero.
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        do {
            let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: configuration.store.path), logger: quietLogger)
            try store.setDeviceState(
                try JSONEncoder().encode(RestingHeartRateEstimator(minimumSamples: 5)),
                for: ReadingStore.DeviceStateKey.restingHeartRate
            )
            store.close()
        }
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(try #require(await parts.control.status().limits).minimumSource == "extreme_bradycardia")
        let pipeline = parts.control.pipeline
        let base = ReadingTimestamp(monotonicNanoseconds: 5_000_000_000, bootID: "learn", wallClockMilliseconds: nil, wallClockTrusted: false)
        for _ in 0..<5 { await pipeline.heartRate(HeartRateReading(bpm: 48, contact: .detected), at: base) }
        #expect(await pipeline.limits.minimum == 30, "48 - 20 is below 30: kept at 30")
        let limits = try #require(await parts.control.status().limits)
        #expect(limits.learnedRestingBPM == 48)
        // The next start reads it back.
        let again = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(try #require(await again.control.status().limits).learnedRestingBPM == 48)
    }

    @Test("pause survives a restart, shows in status and goes to the server in the heartbeat")
    func pausePersisted() async throws {
        let directory = try TemporaryDirectory()
        let configuration = try Self.configuration(directory)
        let first = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(first.state.heartbeat().monitoringPaused == false)
        _ = await first.control.pauseMonitoring()
        #expect(first.state.heartbeat().monitoringPaused == true)

        let second = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(await second.control.status().monitoringPaused)
        #expect(second.state.heartbeat().monitoringPaused == true)
        _ = await second.control.resumeMonitoring()

        let third = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(await third.control.status().monitoringPaused == false)
        #expect(third.state.heartbeat().monitoringPaused == false)
    }

    @Test("fallback.after_seconds reaches the dispatch lane")
    func fallbackDelay() throws {
        let directory = try TemporaryDirectory()
        let configuration = try Self.configuration(directory, extra: "fallback: {command: [/bin/true], after_seconds: 45}")
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        #expect(parts.dispatchSettings.fallbackAfter == .seconds(45))
        #expect(AgentAssembly.dispatchSettings(FallbackConfiguration()).fallbackAfter == .seconds(30), "the documented default")
    }

    @Test("the heartbeat carries battery low below the configured level and the body location, with snake_case keys")
    func heartbeatFields() throws {
        let state = AgentStateCell.testing(batteryWarningPercent: 15)
        #expect(state.heartbeat().batteryLow == nil, "unknown until the strap reports")
        #expect(state.update { $0.record(strapBattery: 15, at: $1) } == false)
        #expect(state.update { $0.record(strapBattery: 14, at: $1) } == true)
        state.update { state, _ in state.strapBodyLocation = "ear_lobe" }
        let json = String(decoding: try WireCodec.encode(state.heartbeat()), as: UTF8.self)
        #expect(json.contains("\"battery_low\":true"))
        #expect(json.contains("\"body_location\":\"ear_lobe\""))
        #expect(json.contains("\"monitoring_paused\":false"))
    }

    @Test("running: the strap's battery below the level warns the wearer (feedback) and the server; its location goes along")
    func runningStrapBatteryAndLocation() async throws {
        let directory = try TemporaryDirectory()
        // The simulated strap reports 87 %: below a 90 % warning level.
        let configuration = try Self.configuration(directory, extra: "  battery_warning_percent: 90")
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let group = ServiceGroup(services: parts.services, logger: quietLogger)
        let running = Task { try await group.run() }
        defer { running.cancel() }
        var status = await parts.control.status()
        try await eventually("the strap's location and battery, and the battery warning", within: .seconds(60), every: .milliseconds(100)) {
            status = await parts.control.status()
            return status.strap.bodyLocation != nil && status.strap.batteryLow != nil && status.feedback == .batteryLow
        }
        await group.triggerGracefulShutdown()
        #expect(status.strap.batteryPercent == 87)
        #expect(status.strap.batteryLow == true)
        #expect(status.strap.bodyLocation == "chest")
        #expect(status.feedback == .batteryLow)
        let table = StatusReport.render(status)
        #expect(table.contains("battery 87% LOW, on the chest"), "\(table)")
        #expect(table.contains("battery_low"), "the feedback row")
        let heartbeat = parts.state.heartbeat()
        #expect(heartbeat.batteryLow == true)
        #expect(heartbeat.bodySensorLocation == "chest")
    }
}

/// The agent's wall-clock anchors: taught by trusted timestamps, saved when changed, restored.
@Suite("wall clock anchors")
struct WallClockAnchorsTests {
    static func stamp(_ seconds: UInt64, boot: String, wall: Int64, trusted: Bool) -> ReadingTimestamp {
        ReadingTimestamp(monotonicNanoseconds: seconds * 1_000_000_000, bootID: boot, wallClockMilliseconds: wall, wallClockTrusted: trusted)
    }

    @Test("a trusted time is learned once and saved once; saved anchors come back after a restart; batches are corrected")
    func learnSaveRestore() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: directory.file("data/agent.sqlite")), logger: quietLogger)
        defer { store.close() }
        let next = Mutex(Self.stamp(100, boot: "b", wall: 1_795_000_100_000, trusted: true))
        let timestamps = AgentTimestamps(bootID: "b") { next.withLock { $0 } }
        _ = timestamps.now()
        next.withLock { $0 = Self.stamp(101, boot: "b", wall: 1_795_000_101_005, trusted: true) }
        _ = timestamps.now()
        timestamps.saveAnchors(to: store, logger: quietLogger)
        #expect(timestamps.corrections.takeChanged() == nil, "saved: nothing more to save")

        let restarted = AgentTimestamps(bootID: "b") { next.withLock { $0 } }
        restarted.restoreAnchors(from: store, deviceID: "dev", logger: quietLogger)
        #expect(restarted.corrections.current.offset(bootID: "b") == 1_795_000_000_000)
        let early = WireReading(
            sequence: 1,
            timestamp: Self.stamp(7, boot: "b", wall: 7000, trusted: false),
            payload: .heartRate(HeartRateReading(bpm: 70, contact: .detected))
        )
        let fixed = try #require(restarted.corrected([early], batchSequence: 1).first)
        #expect(fixed.timestamp.wallClockMilliseconds == 1_795_000_007_000)
        #expect(fixed.timestamp.wallClockCorrected)
    }
}
