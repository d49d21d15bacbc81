import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench rollup [--devices 100] [--readings 3600] [--baseline 1000] [--population 100000] [--json]`.
struct BenchRollUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollup",
        abstract: "The group figures' daily roll-up: through intake for N wearers, then over a seeded population vs a small one (same run)."
    )

    @Option(help: "Wearers, one device each.") var devices = 100
    @Option(help: "Readings per device on the day rolled up (one a second; one in five a position fix).") var readings = 3600
    @Option(help: "Devices of the baseline's seeded population.") var baseline = 1000
    @Option(help: "Devices of the seeded population the daily job is timed over.") var population = 100_000
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard devices >= 1, readings >= 1, baseline >= 1, population >= 1 else {
            throw ValidationError("--devices, --readings, --baseline and --population must be at least 1")
        }
        let result = try await RollUpBenchmark.run(
            devices: devices,
            readingsPerDevice: readings,
            baselinePopulation: baseline,
            population: population
        )
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
            return
        }
        let intake = result.intake
        print(
            String(
                format: "through intake: %d readings of %d wearers rolled up in %.2f s (sent in %.1f s)",
                intake.readings,
                result.devices,
                intake.rollUpSeconds,
                intake.seedSeconds
            )
        )
        for phase in [result.baseline, result.population] {
            print(
                String(
                    format: "%7d devices: %8d device-days rolled up in %7.2f s = %6.2f us a device-day (seeded in %.1f s)",
                    phase.devices,
                    phase.deviceDays,
                    phase.rollUpSeconds,
                    phase.microsecondsPerDeviceDay,
                    phase.seedSeconds
                )
            )
        }
        print(String(format: "ratio: per device-day, population / baseline = %.2f", result.ratio))
    }
}
