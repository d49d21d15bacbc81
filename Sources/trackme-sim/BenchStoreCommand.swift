import ArgumentParser
import EdgeBenchmarks
import EdgeStore
import Foundation

/// `trackme-sim bench store [--encryption off|on|both] [--rounds N] [--json]`: durable readings
/// per second through the store, next to a raw SQLite batched insert of the same rows.
/// `--encryption both` measures the store in clear and encrypted in the same run,
/// alternating `--rounds` times, and reports the cost of encryption as a ratio of medians.
struct BenchStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Durable readings/s through the store vs a raw SQLite batched insert (same run)."
    )

    enum Encryption: String, ExpressibleByArgument, CaseIterable {
        case off, on, both
    }

    @Option(help: "Readings to write.") var readings = 100_000
    @Option(help: "Readings per group commit (one fsync each).") var groupSize = 500
    @Option(help: "Store rows in clear (off), sealed with ChaCha20-Poly1305 (on), or both alternately in one run.")
    var encryption: Encryption = .off
    @Option(help: "Rounds of each mode (with --encryption both: off, on, off, on, ...).") var rounds = 1
    @Flag(help: "Print one JSON object per round (and one with the ratio for --encryption both).") var json = false

    func run() async throws {
        // A fixed benchmark key: what is measured is the sealing, not the key.
        let key = try StoreKey(bytes: [UInt8](repeating: 0x5A, count: 32))
        let modes: [Bool] =
            switch encryption {
            case .off: [false]
            case .on: [true]
            case .both: [false, true]
            }
        var clear: [Double] = []
        var sealed: [Double] = []
        for _ in 0..<max(1, rounds) {
            for encrypted in modes {
                let result = try await StoreBenchmark.run(readings: readings, groupSize: groupSize, encryptionKey: encrypted ? key : nil)
                if encrypted { sealed.append(result.storeReadingsPerSecond) } else { clear.append(result.storeReadingsPerSecond) }
                print(try describe(result))
            }
        }
        guard encryption == .both else { return }
        let ratio = median(sealed) / median(clear)
        if json {
            print(
                #"{"benchmark":"store-encryption","clear_median":\#(median(clear)),"encrypted_median":\#(median(sealed)),"ratio":\#(ratio),"rounds":\#(clear.count)}"#
            )
        } else {
            print(
                "encryption: \(Int(median(sealed))) / \(Int(median(clear))) durable readings/s (median of \(clear.count)): ratio \(ratio) (encrypted / clear)"
            )
        }
    }

    private func describe(_ result: StoreBenchmark.Result) throws -> String {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: try encoder.encode(result), as: UTF8.self)
        }
        return [
            "store:    \(Int(result.storeReadingsPerSecond)) durable readings/s (\(result.readings) in \(result.storeSeconds) s, groups of \(result.groupSize), \(result.encrypted ? "encrypted" : "in clear"))",
            "baseline: \(Int(result.baselineReadingsPerSecond)) readings/s (raw SQLite batched insert, same rows, same pragmas)",
            "ratio:    \(result.ratio) (store / baseline)",
            "size:     \(result.bytesPerReading) bytes/reading; a week of 1 Hz HR + 1 Hz GPS = \(result.weekMebibytes) MiB",
            "start-up: \(result.healthyOpenMilliseconds) ms healthy, \(result.corruptRecoveryMilliseconds) ms when corrupt (moved aside, fresh store)",
        ].joined(separator: "\n")
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
