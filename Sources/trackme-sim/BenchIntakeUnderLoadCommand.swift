// Data path, step 6 (simulation): the `trackme-sim` executable, scenarios and benchmarks.

import ArgumentParser
import Foundation
import TrackMeSimulation

/// `trackme-sim bench intake-under-load [--beside all] [--samples N] [--flood 16] [--bcrypt-cost 12]
/// [--hash-threads N] [--download-readings 3000000] [--devices 2000] [--json]`.
struct BenchIntakeUnderLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "intake-under-load",
        abstract: "New-SOS intake p99 beside sign-ins, downloads or batches against the same intake with nothing beside it (same run, same server).",
        discussion: """
            Phases run one after the other on one server (SQLite, real HTTP on loopback), each \
            after its own quiet baseline: the same alerts with nothing beside them, measured just \
            before its load starts. The downloads' history is sent before their phase and is not \
            measured.
            """
    )

    enum BesideChoice: String, ExpressibleByArgument, CaseIterable {
        case signins, downloads, batches, all
    }

    @Option(help: "What runs beside the alerts: signins, downloads, batches, or all of them one after the other.")
    var beside = BesideChoice.all
    @Option(help: "Alerts measured in each half of each phase (at least 100 for a p99).") var samples = 200
    @Option(help: "Sign-ins: connections posting sign-ins back to back.") var flood = 16
    @Option(help: "Sign-ins: the server's bcrypt cost (its default is 12).") var bcryptCost = 12
    @Option(help: "Sign-ins: the server's password-hashing threads (default: its own, half the cores; 16 is what an unbounded pool amounts to).")
    var hashThreads: Int?
    @Option(help: "Downloads: 1 Hz heart-rate readings of the person whose export and statistics run beside the alerts.")
    var downloadReadings = 3_000_000
    @Option(help: "Downloads: a curl executable to download with, a process of its own (default: this process's own HTTP client).")
    var downloadClient: String?
    @Option(help: "Batches: devices, each sending a batch every --batch-interval seconds (open loop, as bench load).") var devices = 2_000
    @Option(help: "Batches: seconds between one device's batches.") var batchInterval = 5.0
    @Option(help: "Batches: heart-rate readings per batch.") var batchReadings = 10
    @Option(help: "Batches: keep-alive connections carrying them.") var batchConnections = 256
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4-31") }
        guard samples > 0, flood > 0, downloadReadings > 0, devices > 0, batchInterval > 0, batchReadings > 0, batchConnections > 0 else {
            throw ValidationError(
                "--samples, --flood, --download-readings, --devices, --batch-interval, --batch-readings and --batch-connections must be positive"
            )
        }
        var options = IntakeUnderLoadBenchmark.Options()
        options.samples = samples
        options.beside =
            switch beside {
            case .signins: [.signIns]
            case .downloads: [.downloads]
            case .batches: [.batches]
            case .all: IntakeUnderLoadBenchmark.Beside.allCases
            }
        options.floodConnections = flood
        options.bcryptCost = UInt8(bcryptCost)
        options.hashThreads = hashThreads
        options.downloadReadings = downloadReadings
        options.downloadClient = downloadClient
        options.devices = devices
        options.batchInterval = batchInterval
        options.readingsPerBatch = batchReadings
        options.batchConnections = batchConnections
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-intake-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await IntakeUnderLoadBenchmark.run(options, directory: directory)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
            return
        }
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        print("samples:  \(result.samples) new alerts per half of each phase, POST /v1/alerts over HTTP, SQLite")
        for phase in result.phases {
            let load = phase.load
            let what: String
            switch phase.beside {
            case .signIns:
                what =
                    "\(result.floodConnections) connections of sign-ins, bcrypt cost \(result.bcryptCost) on \(result.hashThreads) threads; "
                    + "answers \(load.signInAnswers ?? [:])"
            case .downloads:
                what =
                    "one person's CSV export and statistics over \(load.historyReadings ?? 0) readings (sent in \(String(format: "%.0f", result.seedSeconds ?? 0)) s before); "
                    + "\(load.downloadsStarted ?? 0) started, \(load.exportsCompleted ?? 0) exports and \(load.statisticsCompleted ?? 0) statistics completed, "
                    + String(format: "%.1f MB received", Double(load.downloadBytes ?? 0) / 1e6) + ", answers \(load.downloadAnswers ?? [:])"
            case .batches:
                what =
                    "\(load.devices ?? 0) devices, a batch each every \(batchInterval) s; \(load.batchesStored ?? 0) of \(load.batchesOffered ?? 0) batches stored, "
                    + "\(load.batchesFailed ?? 0) failed \(load.batchFailures ?? [:]), batch p99 \(ms(load.batchP99Milliseconds ?? 0)), "
                    + String(format: "%.0f readings/s", load.readingsPerSecond ?? 0)
            }
            print("\(phase.beside.rawValue):")
            print("  quiet:  p50 \(ms(phase.quietP50Milliseconds)), p99 \(ms(phase.quietP99Milliseconds)) (nothing beside)")
            print("  loaded: p50 \(ms(phase.loadedP50Milliseconds)), p99 \(ms(phase.loadedP99Milliseconds))")
            print("  load:   \(what), " + String(format: "%.1f s", load.seconds))
            print(String(format: "  ratio:  p99 %.2f (goal < 2)", phase.ratioP99))
        }
    }
}
