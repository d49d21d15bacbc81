import ArgumentParser
import Foundation
import TrackMeCore
import TrackMeSimulation

/// `trackme-sim bench sos-latency [--samples N] [--profile P] [--without-rhythm-signals] [--json]`.
struct BenchSOSLatencyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sos-latency",
        abstract: "Critical reading bytes to alert journaled and queued for dispatch: p50/p99/max against the 500 ms budget."
    )

    @Option(help: "Critical readings (alerts) to measure.") var samples = 10_000
    @Option(help: "Care profile the rules run with: wearable or bedside.") var profile = "wearable"
    @Flag(help: "Run without the rhythm signals (the rules before them), for a before/after pair in one session.")
    var withoutRhythmSignals = false
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-sos-latency-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        guard let care = CareProfile(rawValue: profile) else {
            throw ValidationError("unknown care profile \(profile); known: \(CareProfile.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let settings = RuleEvaluation.settings(care, withoutRhythmSignals: withoutRhythmSignals)
        let result = try await SOSLatencyBenchmark.run(samples: samples, directory: directory, settings: settings)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("samples:  \(result.samples) alerts raised by a flat line, decode -> rules -> journal (fsync) -> dispatch queue")
            print(
                "latency:  p50 \(result.p50Milliseconds) ms, p99 \(result.p99Milliseconds) ms, max \(result.maxMilliseconds) ms (budget \(Int(result.budgetMilliseconds)) ms)"
            )
            print("baseline: p50 \(result.baselineP50Milliseconds) ms, p99 \(result.baselineP99Milliseconds) ms (\(result.baseline))")
            print("ratio:    \(result.ratio) (p50 / baseline p50)")
        }
    }
}
