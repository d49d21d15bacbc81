import ArgumentParser
import EdgeBenchmarks
import Foundation

/// `trackme-sim bench store [--json]`: durable readings per second through the store, next to
/// a raw SQLite batched insert of the same rows.
struct BenchStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store", abstract: "Durable readings/s through the store vs a raw SQLite batched insert (same run).")

    @Option(help: "Readings to write.") var readings = 100_000
    @Option(help: "Readings per group commit (one fsync each).") var groupSize = 500
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        let result = try await StoreBenchmark.run(readings: readings, groupSize: groupSize)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("store:    \(Int(result.storeReadingsPerSecond)) durable readings/s (\(result.readings) in \(result.storeSeconds) s, groups of \(result.groupSize))")
            print("baseline: \(Int(result.baselineReadingsPerSecond)) readings/s (raw SQLite batched insert, same rows, same pragmas)")
            print("ratio:    \(result.ratio) (store / baseline)")
            print("size:     \(result.bytesPerReading) bytes/reading; a week of 1 Hz HR + 1 Hz GPS = \(result.weekMebibytes) MiB")
            print("start-up: \(result.healthyOpenMilliseconds) ms healthy, \(result.corruptRecoveryMilliseconds) ms when corrupt (moved aside, fresh store)")
        }
    }
}
