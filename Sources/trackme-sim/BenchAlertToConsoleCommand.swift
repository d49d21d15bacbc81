// Data path, step 6 (simulation): the `trackme-sim` executable, scenarios and benchmarks.

import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench alert-to-console [--samples N] [--json]`.
struct BenchAlertToConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "alert-to-console",
        abstract: "Raising reading's bytes to the alert event at a dispatcher's SSE client, over real HTTP: p50/p99 against a /health round trip."
    )

    @Option(help: "Alerts to measure (at least 100 for a p99).") var samples = 200
    @Flag(help: "Print one JSON object.") var json = false
    @Flag(help: "Measure the console's detail request (GET /v1/alerts/{id}) instead, over --devices and --open-alerts of --alert-age-minutes.")
    var detail = false
    @Option(help: "With --detail: enrolled devices.") var devices = 1000
    @Option(help: "With --detail: open alerts.") var openAlerts = 20
    @Option(help: "With --detail: minutes of 1 Hz position updates each open alert has.") var alertAgeMinutes = 1

    func run() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-alert-to-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        if detail {
            let result = try await AlertDetailBenchmark.run(
                devices: devices,
                openAlerts: openAlerts,
                ageMinutes: alertAgeMinutes,
                samples: samples,
                directory: directory
            )
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(result), as: UTF8.self))
            } else {
                print("fleet:    \(result.devices) devices, \(result.openAlerts) open alerts of \(result.ageMinutes) min at 1 Hz")
                print("seeded:   in \(result.seedSeconds) s")
                print("detail:   p50 \(result.p50Milliseconds) ms, p99 \(result.p99Milliseconds) ms over \(result.samples) requests")
                print(
                    "baseline: p50 \(result.baselineP50Milliseconds) ms, p99 \(result.baselineP99Milliseconds) ms (GET /health, same server, client)"
                )
                print("ratio:    p50 \(result.ratioP50), p99 \(result.ratioP99)")
            }
            return
        }
        let result = try await AlertToConsoleBenchmark.run(samples: samples, directory: directory)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("samples:  \(result.samples) alerts: reading bytes -> rules -> journal -> dispatch lane -> HTTP -> server -> SSE")
            print(
                "latency:  p50 \(result.p50Milliseconds) ms, p99 \(result.p99Milliseconds) ms, max \(result.maxMilliseconds) ms (goal p99 <= 1000 ms)"
            )
            print("baseline: p50 \(result.baselineP50Milliseconds) ms, p99 \(result.baselineP99Milliseconds) ms (\(result.baseline))")
            print("ratio:    p50 \(result.ratioP50), p99 \(result.ratioP99)")
        }
    }
}
