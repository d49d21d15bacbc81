import ArgumentParser
import Foundation
import Logging
import TrackMeSimulation

/// `trackme-sim bench race`: runners per second of trace at 1 Hz through the server (each
/// runner its own agent parts, as in the race scenario) and the spectator feed's lag, against
/// the server's `/health` rate in the same run.
struct BenchRaceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "race",
        abstract: "Runners at 1 Hz through the server and the spectator lag, against the /health rate in the same run."
    )

    @Option(help: "Runners in the race.")
    var runners = 200

    @Option(help: "Seconds of race (trace time).")
    var seconds = 60

    @Option(help: "The race scenario (course, paces, tunnel).")
    var scenario = "simulations/scenarios/race-200.json"

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    func run() async throws {
        let url = URL(fileURLWithPath: scenario)
        let loaded = try CrowdScenario.load(from: url)
        var logger = Logger(label: "trackme.sim")
        logger.logLevel = .critical
        var options = CrowdRunner.Options(simulationsDirectory: url.deletingLastPathComponent().deletingLastPathComponent(), logger: logger)
        options.runners = runners
        options.durationSeconds = seconds
        options.measureHealth = true
        let outcome = try await CrowdRunner(options: options).run(loaded)
        let f = outcome.figures
        let health = f["health_per_s"] ?? 0
        let batches = f["race.batches_per_s"] ?? 0
        var figures = f
        figures["batches_over_health"] = health > 0 ? batches / health : 0
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(figures), as: UTF8.self))
            return
        }
        print("bench race: \(runners) runners, \(seconds + 1) s of race at 1 Hz")
        print(
            String(
                format: "  runner-seconds per second      %8.1f  (%.2f x real time for %d runners)",
                f["race.runner_seconds_per_s"] ?? 0,
                (f["race.runner_seconds_per_s"] ?? 0) / Double(runners),
                runners
            )
        )
        print(String(format: "  batches per second             %8.1f", batches))
        print(String(format: "  GET /health per second         %8.1f  (baseline, same server, same run)", health))
        print(String(format: "  batches / health               %8.3f", figures["batches_over_health"] ?? 0))
        print(String(format: "  spectator lag, trace time      p50 %.2f s, p99 %.2f s", f["race.lag_p50_s"] ?? 0, f["race.lag_p99_s"] ?? 0))
        print(
            String(
                format: "  spectator lag, real time       p50 %.1f ms, p99 %.1f ms (fix into the pipeline -> on the page's data)",
                (f["race.real_lag_p50_s"] ?? 0) * 1000,
                (f["race.real_lag_p99_s"] ?? 0) * 1000
            )
        )
        for line in outcome.lines { print("  " + line) }
    }
}
