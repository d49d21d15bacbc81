public import Foundation
import Logging
import TrackMeCore

/// `trackme-sim bench replay`: readings per second through the whole event-loop pipeline (strap
/// over a socket pair, link, decoder, rules, store with group commit, sync to the in-process
/// server over loopback HTTP, or with `--fast` through its router without a socket), next to the
/// same trace's readings through the SOS rules alone in memory, measured in the same run.
public enum ReplayBenchmark {
    public struct Result: Codable, Sendable {
        public var traceSeconds: Int
        public var readings: Int
        public var wallSeconds: Double
        public var readingsPerSecond: Double
        public var baselineReadingsPerSecond: Double
        public var ratio: Double
        public var baseline: String
        /// The stores fsynced at every commit (`--fsync`); by default fast mode does not.
        public var fsync: Bool
        /// The report's mode: `sockets` or `fast` (`--fast`).
        public var mode: String

        enum CodingKeys: String, CodingKey {
            case traceSeconds = "trace_s"
            case readings
            case wallSeconds = "wall_s"
            case readingsPerSecond = "readings_per_s"
            case baselineReadingsPerSecond = "baseline_readings_per_s"
            case ratio, baseline, fsync, mode
        }
    }

    public static func run(
        traceSeconds: Int,
        simulationsDirectory: URL,
        fsync: Bool = false,
        io: ScenarioRunner.IO = .sockets
    ) async throws -> Result {
        let scenario = Scenario(
            name: "bench-replay",
            description: nil,
            seed: 1,
            person: PersonProfile(name: "Bench", age: 69),
            heartRate: .init(
                trace: "traces/hr/mitdb100_normal_sinus.csv",
                fromSeconds: nil,
                toSeconds: nil,
                repeatUntilSeconds: Double(traceSeconds)
            ),
            gps: .init(log: "traces/gpsd/haicom-305N.log", loop: true),
            pace: .fast,
            diskBudgetBytes: nil,
            faults: [],
            expectations: [.init(type: .noReadingsLost), .init(type: .allSynced)]
        )
        let logger = Logger(label: "trackme.bench.replay", factory: { _ in SwiftLogNoOpLogHandler() })
        var options = ScenarioRunner.Options(simulationsDirectory: simulationsDirectory, fsync: fsync, logger: logger)
        options.io = io
        let outcome = try await ScenarioRunner(options: options).run(scenario)
        guard outcome.report.passed else {
            throw ScenarioError(message: "the replay lost readings: \(outcome.report.expectations.filter { !$0.passed }.map(\.message))")
        }
        let wall = outcome.report.wallMilliseconds / 1000
        let readings = outcome.report.readings.produced

        // Baseline: the same heart-rate rows through the rules alone, in memory.
        let text = try String(contentsOf: simulationsDirectory.appendingPathComponent(scenario.heartRate.trace), encoding: .utf8)
        let trace = try HeartRateTrace(csv: text).repeated(untilMilliseconds: Int64(traceSeconds) * 1000)
        var engine = SOSEngine(deviceID: "bench", profile: scenario.person, ids: SequentialAlertIDs(), now: ScenarioRunner.timestamp(0))
        let start = ContinuousClock.now
        for row in trace.rows {
            _ = engine.receive(.heartRate(row.reading), now: ScenarioRunner.timestamp(row.timeMilliseconds))
        }
        let count = trace.rows.count
        let baselineSeconds = max(1e-9, ScenarioRunner.milliseconds(ContinuousClock.now - start) / 1000)
        let perSecond = Double(readings) / wall
        let baselinePerSecond = Double(count) / baselineSeconds
        return Result(
            traceSeconds: traceSeconds,
            readings: readings,
            wallSeconds: wall,
            readingsPerSecond: perSecond,
            baselineReadingsPerSecond: baselinePerSecond,
            ratio: perSecond / baselinePerSecond,
            baseline: "the same heart-rate rows through the SOS rules alone, in memory",
            fsync: fsync,
            mode: outcome.report.mode
        )
    }
}
