import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench export-memory [--days 30] [--json]`.
struct BenchExportMemoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export-memory",
        abstract:
            "Resident memory of a person's CSV download of N days of 1 Hz heart rate, against the same download of one day (same run, same server)."
    )

    @Option(help: "Days of 1 Hz heart rate in the measured download.") var days = 30
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard days >= 1 else { throw ValidationError("--days must be at least 1") }
        let result = try await ExportMemoryBenchmark.run(days: days)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
            return
        }
        for download in [result.baseline, result.measured] {
            print(
                String(
                    format: "%3d day(s): %9d readings, %6.1f MB of CSV in %6.1f s; VmRSS peak %6.1f MiB, rise %6.1f MiB",
                    download.days,
                    download.readings,
                    Double(download.bytes) / 1e6,
                    download.seconds,
                    download.peakMiB,
                    download.riseMiB
                )
            )
        }
        print(String(format: "ratio: rise over %d days / rise over 1 day (floored at 1 MiB) = %.2f", days, result.ratio))
    }
}
