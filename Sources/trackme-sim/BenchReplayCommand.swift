import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench replay [--seconds N] [--fast] [--json]`.
struct BenchReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Readings/s through the whole event-loop pipeline vs the SOS rules alone (same run)."
    )

    @Option(help: "Seconds of trace to replay (MIT-BIH 100 repeated, with GPS).") var seconds = 3600
    @Option(help: "The simulations/ folder.") var simulations = "simulations"
    @Flag(help: "Fsync at every commit, as the agent and server do (see `trackme-sim run --fsync`).") var fsync = false
    @Flag(help: "Fast mode: the device's requests to the server's router in process, no socket (see `trackme-sim run --fast`).")
    var fast = false
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let result = try await ReplayBenchmark.run(
            traceSeconds: seconds,
            simulationsDirectory: URL(fileURLWithPath: simulations),
            fsync: fsync,
            io: fast ? .inProcess : .sockets
        )
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print(
                "pipeline: \(Int(result.readingsPerSecond)) readings/s (\(result.readings) readings, \(result.traceSeconds) s of trace in \(result.wallSeconds) s, \(result.mode)\(result.fsync ? ", fsync at every commit" : ""))"
            )
            print("baseline: \(Int(result.baselineReadingsPerSecond)) readings/s (\(result.baseline))")
            print("ratio:    \(result.ratio) (pipeline / baseline)")
        }
    }
}
