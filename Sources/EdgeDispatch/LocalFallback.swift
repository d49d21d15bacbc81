public import Foundation
public import TrackMeCore

/// Runs the site's local fallback for an alert (siren, SMS modem, phone call).
public protocol LocalFallback: Sendable {
    func run(_ alert: AlertRecord, reason: FallbackReason, contactIndex: Int?) async throws
}

/// A fallback that failed, with what the lane knows about why.
public struct LocalFallbackError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The executable could not be started.
        case launchFailed = "launch_failed"
        /// It ran and exited with a non-zero status (or was killed by a signal).
        case exitStatus = "exit_status"
        /// The alert could not be encoded for its standard input.
        case encodingFailed = "encoding_failed"
    }

    public var code: Code
    public var executable: String
    public var status: Int32?
    public var message: String

    public var description: String {
        "\(code.rawValue) for \(executable)\(status.map { " (status \($0))" } ?? ""): \(message)"
    }
}

/// Runs an executable with the alert as JSON (the `AlertRecord` wire form, WIRE.md) on its
/// standard input, and `TRACKME_FALLBACK_REASON` (`server_unreachable`, `escalation`,
/// `notify_contact`) and `TRACKME_CONTACT_INDEX` (0, 1, ... for `notify_contact`) in its
/// environment. Success is exit status 0.
public struct ExecutableFallback: LocalFallback {
    public var executable: URL
    public var arguments: [String]
    /// Added to the agent's own environment.
    public var environment: [String: String]

    public init(executable: URL, arguments: [String] = [], environment: [String: String] = [:]) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
    }

    /// The JSON fits in a pipe's buffer (64 KiB on Linux), so it is written before the process
    /// starts: the write never blocks and never meets a reader that has already gone.
    static let maximumInputBytes = 60_000

    public func run(_ alert: AlertRecord, reason: FallbackReason, contactIndex: Int?) async throws {
        let input: Data
        do {
            input = try WireCodec.encode(alert)
        } catch {
            throw LocalFallbackError(code: .encodingFailed, executable: executable.path, status: nil, message: "\(error)")
        }
        guard input.count <= Self.maximumInputBytes else {
            throw LocalFallbackError(
                code: .encodingFailed, executable: executable.path, status: nil, message: "alert JSON is \(input.count) bytes")
        }
        let stdin = Pipe()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["TRACKME_FALLBACK_REASON"] = reason.rawValue
        env["TRACKME_CONTACT_INDEX"] = contactIndex.map(String.init) ?? ""
        process.environment = env
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice

        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do {
                try stdin.fileHandleForWriting.write(contentsOf: input)
                try stdin.fileHandleForWriting.close()
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(
                    throwing: LocalFallbackError(code: .launchFailed, executable: executable.path, status: nil, message: "\(error)"))
            }
        }
        guard status == 0 else {
            throw LocalFallbackError(code: .exitStatus, executable: executable.path, status: status, message: "fallback failed")
        }
    }
}
