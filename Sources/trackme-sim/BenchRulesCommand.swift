import ArgumentParser
import Foundation
import TrackMeCore
import TrackMeSimulation

/// `trackme-sim bench rules [--trace FILE] [--hours H] [--profile P] [--json]`: the SOS rules
/// alone (`SOSTraceReplay`, as `evaluate` runs them) over a recorded trace laid end to end to
/// `--hours` of 1 Hz notifications, with the rhythm signals and, as the baseline in the same run,
/// without them.
struct BenchRulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "A day of trace through the SOS rules alone: wall time with the rhythm signals vs without (same run)."
    )

    @Option(help: "Trace to repeat (t_ms,bpm,rr_ms,contact).") var trace = "simulations/traces/hr/mitdb100_normal_sinus.csv"
    @Option(help: "Hours of trace to replay.") var hours = 24.0
    @Option(help: "Care profile the rules run with: wearable or bedside.") var profile = "wearable"
    @Option(help: "Runs of each variant; the fastest counts.") var runs = 3
    @Flag(help: "Print one JSON object.") var json = false

    struct Result: Codable {
        var trace: String
        var profile: String
        var traceHours: Double
        var notifications: Int
        var rulesSeconds: Double
        var baselineSeconds: Double
        /// rules / baseline.
        var ratio: Double
        var alerts: Int
        var baselineAlerts: Int
        var baseline: String
    }

    func run() throws {
        guard let care = CareProfile(rawValue: profile) else {
            throw ValidationError("unknown care profile \(profile); known: \(CareProfile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard hours > 0, hours <= 24 * 31 else { throw ValidationError("--hours must be in (0, 744]") }
        guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
        let recorded = try HeartRateTrace(csv: String(decoding: try Data(contentsOf: URL(fileURLWithPath: trace)), as: UTF8.self))
        guard let first = recorded.rows.first else { throw ValidationError("\(trace) has no rows") }
        let end = first.timeMilliseconds + Int64(hours * 3_600_000) - 1000
        let day = recorded.repeated(untilMilliseconds: end)
        let rows = day.rows
        let person = PersonProfile(name: "bench", age: 60)
        let clock = ContinuousClock()
        func fastest(_ settings: SOSSettings) -> (seconds: Double, alerts: Int) {
            var best = Double.infinity
            var alerts = 0
            for _ in 0..<runs {
                var raised: [RuleEvaluation.RaisedAlert] = []
                let elapsed = clock.measure { raised = RuleEvaluation.alerts(in: day, profile: person, settings: settings) }
                let (seconds, attoseconds) = elapsed.components
                best = min(best, Double(seconds) + Double(attoseconds) / 1e18)
                alerts = raised.count
            }
            return (best, alerts)
        }
        let baseline = fastest(RuleEvaluation.settings(care, withoutRhythmSignals: true))
        let rules = fastest(RuleEvaluation.settings(care, withoutRhythmSignals: false))
        let result = Result(
            trace: trace,
            profile: care.rawValue,
            traceHours: Double(rows.count) / 3600,
            notifications: rows.count,
            rulesSeconds: rules.seconds,
            baselineSeconds: baseline.seconds,
            ratio: rules.seconds / max(baseline.seconds, 1e-9),
            alerts: rules.alerts,
            baselineAlerts: baseline.alerts,
            baseline: "the same replay with every rhythm signal off (--without-rhythm-signals)"
        )
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("trace:    \(result.notifications) notifications, \(result.traceHours) h of \(trace) end to end, profile \(care.rawValue)")
            print("rules:    \(String(format: "%.3f", result.rulesSeconds)) s for the day (\(result.alerts) alerts raised), fastest of \(runs)")
            print("baseline: \(String(format: "%.3f", result.baselineSeconds)) s (\(result.baseline); \(result.baselineAlerts) alerts)")
            print("ratio:    \(String(format: "%.2f", result.ratio)) (rules / baseline)")
        }
    }
}
