import Foundation
import TrackMeCore

/// Files under the repository's simulations/traces, found from this source file's path.
enum Fixtures {
    static let tracesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("simulations/traces")

    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: tracesDirectory.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// Payloads of a `.hex` capture: one per line, `#` comments skipped.
    static func hexPayloads(_ name: String) throws -> [String] {
        try text("hrm-bytes/\(name)").split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    static func trace(_ name: String) throws -> HeartRateTrace {
        try HeartRateTrace(csv: text("hr/\(name)"))
    }
}
