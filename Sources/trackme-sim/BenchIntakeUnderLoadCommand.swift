// Data path, step 6 (simulation): the `trackme-sim` executable, scenarios and benchmarks.

import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench intake-under-load [--samples N] [--flood 16] [--bcrypt-cost 12] [--hash-threads N] [--json]`.
struct BenchIntakeUnderLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intake-under-load",
        abstract: "New-SOS intake p99 during a sign-in flood against the same intake with nothing beside it (same run, same server)."
    )

    @Option(help: "Alerts measured in each phase (at least 100 for a p99).") var samples = 200
    @Option(help: "Connections posting sign-ins back to back during the second phase.") var flood = 16
    @Option(help: "The server's bcrypt cost (its default is 12).") var bcryptCost = 12
    @Option(help: "The server's password-hashing threads (default: its own, half the cores; 16 is what an unbounded pool amounts to).")
    var hashThreads: Int?
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4-31") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-intake-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await IntakeUnderLoadBenchmark.run(
            samples: samples,
            floodConnections: flood,
            bcryptCost: UInt8(bcryptCost),
            hashThreads: hashThreads,
            directory: directory
        )
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print("samples:  \(result.samples) new alerts per phase, POST /v1/alerts over HTTP, SQLite")
            print("quiet:    p50 \(result.quietP50Milliseconds) ms, p99 \(result.quietP99Milliseconds) ms (nothing beside)")
            print(
                "flood:    p50 \(result.floodP50Milliseconds) ms, p99 \(result.floodP99Milliseconds) ms "
                    + "(\(result.floodConnections) connections of sign-ins, bcrypt cost \(result.bcryptCost) on \(result.hashThreads) threads, answers \(result.floodAnswers))"
            )
            print("ratio:    p99 \(result.ratioP99) (goal < 2)")
        }
    }
}
