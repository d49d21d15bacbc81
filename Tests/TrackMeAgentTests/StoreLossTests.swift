import EdgeStore
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// Log entries kept for a test to read.
final class CapturedLog: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    var all: [Entry] { entries.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            let entry = Entry(level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" })
            log.entries.withLock { $0.append(entry) }
        }
    }
}

/// A store destroyed beyond salvage: the loss is an error in the log, with the count, and
/// `status` shows it.
@Suite("store loss")
struct StoreLossTests {
    @Test("a store file destroyed beyond salvage: an error with the count of what was lost, and status says LOST")
    func destroyedBeyondSalvage() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        try "token-loss-1".write(toFile: directory.file("etc/token"), atomically: true, encoding: .utf8)
        let configuration = try StoreKeyAssemblyTests.configuration(directory, store: ", encryption: \"off\"")
        try FileManager.default.createDirectory(
            atPath: (configuration.store.path as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        do {
            let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: configuration.store.path), logger: quietLogger)
            store.close()
        }
        // Every byte of the file scribbled over: nothing of it can be read.
        let size = try #require(try FileManager.default.attributesOfItem(atPath: configuration.store.path)[.size] as? Int)
        try Data(repeating: 0xA5, count: max(size, 8192)).write(to: URL(fileURLWithPath: configuration.store.path))
        try? FileManager.default.removeItem(atPath: configuration.store.path + "-wal")

        let log = CapturedLog()
        let parts = try AgentAssembly.make(configuration: configuration, logger: log.logger, environment: [:])
        let errors = log.all.filter { $0.level == .error && $0.message.contains("lost beyond salvage") }
        let error = try #require(errors.first, "\(log.all.map { "\($0.level) \($0.message)" })")
        #expect(Int(error.metadata["store.unreadable"] ?? "") ?? 0 >= 1)
        let status = await parts.control.status()
        #expect(status.store.unsalvageable ?? 0 >= 1)
        #expect(StatusReport.render(status).contains("LOST"))
    }
}
