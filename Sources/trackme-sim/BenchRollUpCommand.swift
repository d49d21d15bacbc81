import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench rollup [--devices 100] [--readings 3600] [--json]`.
struct BenchRollUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollup",
        abstract: "The group figures' daily roll-up over N wearers' readings, sealed under per-person keys vs in clear (same run)."
    )

    @Option(help: "Wearers, one device each.") var devices = 100
    @Option(help: "Readings per device on the day rolled up (one a second; one in five a position fix).") var readings = 3600
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard devices >= 1, readings >= 1 else { throw ValidationError("--devices and --readings must be at least 1") }
        let result = try await RollUpBenchmark.run(devices: devices, readingsPerDevice: readings)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
            return
        }
        for phase in [result.clear, result.sealed] {
            print(
                String(
                    format: "%@: %9d readings rolled up in %7.2f s = %6.2f us a reading (sent in %6.1f s)",
                    phase.sealed ? "sealed" : "clear ",
                    phase.readings,
                    phase.rollUpSeconds,
                    phase.microsecondsPerReading,
                    phase.seedSeconds
                )
            )
        }
        print(String(format: "ratio: sealed / clear roll-up time = %.2f", result.ratio))
    }
}
