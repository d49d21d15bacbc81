public import Logging
import Synchronization

/// The last lines a logger wrote, at every level, kept in memory: what a test prints when a
/// server it stops does not end, without printing the debug lines of every server that does.
public final class RecentLog: Sendable {
    private let capacity: Int
    private let lines = Mutex<[String]>([])

    public init(capacity: Int = 300) {
        self.capacity = max(1, capacity)
    }

    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    func append(_ line: String) {
        lines.withLock { lines in
            lines.append(line)
            if lines.count > capacity { lines.removeFirst(lines.count - capacity) }
        }
    }

    /// A logger that writes `printedLevel` and above to standard error, as before, and keeps
    /// every line here.
    public func logger(label: String, printedLevel: Logger.Level) -> Logger {
        Logger(label: label) { label in
            var printed = StreamLogHandler.standardError(label: label)
            printed.logLevel = printedLevel
            return MultiplexLogHandler([printed, Handler(log: self)])
        }
    }

    private struct Handler: LogHandler {
        let log: RecentLog
        var logLevel: Logger.Level = .debug
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = metadata.merging(event.metadata ?? [:]) { _, new in new }
            let suffix = fields.isEmpty ? "" : " " + fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            log.append("\(event.level) \(event.source): \(event.message)\(suffix)")
        }
    }
}
