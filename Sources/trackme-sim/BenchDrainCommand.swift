import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench drain [--json]`: time to drain a 24 h backlog to a local server and bytes
/// sent per reading after gzip, next to POSTing the same prepared batches.
struct BenchDrainCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "drain",
        abstract: "Drain a 24 h backlog (86,400 HR + 86,400 fixes) to a loopback server; bytes/reading after gzip."
    )

    @Option(help: "Hours of 1 Hz heart rate + 1 Hz GPS in the backlog.") var hours = 24
    @Option(help: "Readings per batch.") var batchReadings = 1000
    @Option(help: "The agent's HTTP client with kept-alive connections (curl), or a new connection per batch (curl-no-reuse).") var transport = "curl"
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard let kind = DrainBenchmark.Transport(rawValue: transport) else {
            throw ValidationError("--transport: expected one of \(DrainBenchmark.Transport.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let result = try await DrainBenchmark.run(hours: hours, batchReadings: batchReadings, transport: kind)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print(
                "drain:    \(result.readings) readings in \(result.drainSeconds) s (\(Int(result.readingsPerSecond)) readings/s, \(result.batches) batches)"
            )
            print(
                "bytes:    \(result.compressedBytesPerReading) bytes/reading sent (gzip), \(result.uncompressedBytesPerReading) before (x\(result.compressionRatio))"
            )
            print(
                "baseline: \(result.baselineSeconds) s to POST the same prepared batches (\(result.baselineMillisecondsPerBatch) ms each, \(result.transport))"
            )
            print("ratio:    \(result.ratio) (drain / baseline)")
        }
    }
}
