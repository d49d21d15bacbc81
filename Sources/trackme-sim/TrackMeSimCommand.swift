import ArgumentParser

/// `trackme-sim`: runs scenarios through the agent's own pipeline and runs benchmarks.
@main
struct TrackMeSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trackme-sim",
        abstract: "Replay recorded traces through the TrackMe pipeline, with faults, and benchmark it.",
        subcommands: [
            RunCommand.self,
            EvaluateCommand.self,
            BenchCommand.self,
                // Verbs are registered here, one line each.
        ]
    )
}

/// `trackme-sim bench NAME [--json]`: each benchmark measures its figure next to a baseline in
/// the same run and prints both and their ratio (with `--json`, as one JSON object).
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run a benchmark; figures are ratios against a baseline measured in the same run.",
        subcommands: [
            // Benchmarks are registered here, one line each.
            BenchStoreCommand.self,
            BenchDrainCommand.self,
            ServerBenchCommand.self,
            BenchSOSLatencyCommand.self,
            BenchRulesCommand.self,
            BenchReplayCommand.self,
            BenchAlertToConsoleCommand.self,
            LoadBenchCommand.self,
            BenchGroupQueryCommand.self,
            BenchRollUpCommand.self,
            BenchRaceCommand.self,
            BenchPopulationCommand.self,
            BenchIntakeUnderLoadCommand.self,
            BenchExportMemoryCommand.self,
        ]
    )
}
