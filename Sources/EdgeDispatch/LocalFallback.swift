public import Foundation
public import TrackMeCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        /// It ran longer than its time limit and was terminated.
        case timedOut = "timed_out"
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
/// `notify_contact`), `TRACKME_CONTACT_INDEX` (0, 1, ... for `notify_contact`) and
/// `TRACKME_DISCREET` (`1` for an alert raised discreetly, `AlertRecord.isDiscreet`: a discreet
/// press, or any alert under the care setting `discreet_sos`; no siren, no sound) in its
/// environment. Success is exit status 0. One that runs longer than `timeLimit` is killed and
/// counts as failed, so a stuck modem script does not pile up processes.
/// The child starts with no signal blocked and leads its own process group, which the time
/// limit kills whole (a modem script's `sleep` or `chat` dies with it).
public struct ExecutableFallback: Sendable {
    public var executable: URL
    public var arguments: [String]
    /// Added to the agent's own environment.
    public var environment: [String: String]
    public var timeLimit: Duration
    public var clock: any Clock<Duration>

    public init(
        executable: URL,
        arguments: [String] = [],
        environment: [String: String] = [:],
        timeLimit: Duration = .seconds(30),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.timeLimit = timeLimit
        self.clock = clock
    }
}
