import ArgumentParser
import Foundation
import Logging
import TrackMeSimulation

/// `trackme-sim bench population`: many wearers at 1 Hz on one server, each through the agent's
/// own code (the population scenario, larger): wall time and readings per second, with the
/// scenario's checks (every reading once, each episode's alert, no other).
struct BenchPopulationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "population",
        abstract: "Wearers at 1 Hz through their agents into one server: wall time and readings/s, every reading and alert once."
    )

    @Option(help: "Wearers.")
    var wearers = 1000

    @Option(help: "Seconds of trace.")
    var seconds = 3600

    @Option(help: "The population scenario (its recordings and episodes).")
    var scenario = "simulations/scenarios/population.json"

    @Flag(help: "Hand requests to the server's router in process (fast mode), not over loopback.")
    var fast = false

    @Flag(help: "Print the figures as one JSON object.")
    var json = false

    func run() async throws {
        let url = URL(fileURLWithPath: scenario)
        let loaded = try CrowdScenario.load(from: url)
        var logger = Logger(label: "trackme.sim")
        logger.logLevel = .critical
        var options = CrowdRunner.Options(simulationsDirectory: url.deletingLastPathComponent().deletingLastPathComponent(), logger: logger)
        options.scenarioDirectory = url.deletingLastPathComponent()
        options.runners = wearers
        options.durationSeconds = seconds
        options.inProcess = fast
        let outcome = try await CrowdRunner(options: options).run(loaded)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(outcome.figures), as: UTF8.self))
        } else {
            for line in outcome.lines { print(line) }
        }
        if !outcome.passed { throw ExitCode(1) }
    }
}
