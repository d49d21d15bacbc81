import Foundation
public import Logging
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A swift-log handler writing one line per message to stderr, in the form journald reads best.
///
/// Under systemd (stderr is the journal stream) each line starts with the sd-daemon priority
/// prefix, `<6>` for info, so `journalctl -p warning` filters correctly, and carries no
/// timestamp (the journal adds its own). Elsewhere lines start with an ISO-8601 UTC time and
/// the level name. Metadata follows the message as `key=value`, values quoted when they
/// contain spaces, quotes or `=`. Only the executable installs it (`LoggingSystem.bootstrap`).
public struct JournaldLogHandler: LogHandler {
    public enum Style: Sendable, Hashable {
        /// `<6>trackme.agent: message key=value`
        case journald
        /// `2026-11-21T09:10:02.123Z info trackme.agent: message key=value`
        case plain
    }

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let style: Style
    private let sink: @Sendable (String) -> Void

    /// - Parameter sink: where finished lines go (tests capture them); default: stderr, one
    ///   `write` per line so lines from concurrent tasks never interleave.
    public init(
        label: String,
        level: Logger.Level = .info,
        style: Style = Self.detectedStyle(),
        metadataProvider: Logger.MetadataProvider? = nil,
        sink: @escaping @Sendable (String) -> Void = Self.writeToStandardError
    ) {
        self.label = label
        self.logLevel = level
        self.style = style
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        sink(Self.format(level: event.level, label: label, message: "\(event.message)", metadata: merged, style: style, date: Date()))
    }

    /// One formatted line, ending in `\n`.
    static func format(
        level: Logger.Level,
        label: String,
        message: String,
        metadata: Logger.Metadata,
        style: Style,
        date: Date
    ) -> String {
        var line: String
        switch style {
        case .journald:
            line = "<\(priority(level))>\(label): "
        case .plain:
            line = "\(timestamp(date)) \(level.rawValue) \(label): "
        }
        // journald splits entries at newlines; keep one message one entry.
        line += message.replacingOccurrences(of: "\n", with: "\\n")
        for key in metadata.keys.sorted() {
            guard let value = metadata[key] else { continue }
            line += " \(key)=\(quoted("\(value)"))"
        }
        return line + "\n"
    }

    /// sd-daemon(3) priorities: syslog levels 0 (emerg) to 7 (debug).
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// `.journald` when stderr is the journal stream systemd named in `JOURNAL_STREAM`
    /// (`device:inode`, compared with stderr's own, as systemd.exec(5) advises, so a child
    /// whose stderr was redirected does not add prefixes to a file).
    public static func detectedStyle(environment: [String: String]? = nil) -> Style {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let stream = environment["JOURNAL_STREAM"] else { return .plain }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .plain }
        var info = stat()
        guard fstat(FileDescriptor.standardError.rawValue, &info) == 0 else { return .plain }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode ? .journald : .plain
    }

    @Sendable public static func writeToStandardError(_ line: String) {
        // A log line that cannot be written has nowhere else to go.
        _ = try? FileDescriptor.standardError.writeAll(line.utf8)
    }

    private static func quoted(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0 == "\n" || $0 == "\t" }
        guard needsQuotes else { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }

    private static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let fraction = Int(milliseconds % 1000)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let millis = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        return
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }
}
