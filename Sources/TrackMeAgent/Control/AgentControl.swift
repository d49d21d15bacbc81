public import TrackMeCore

/// What the local control socket can ask of the running agent.
///
/// The lead's pipeline implements this; the status server only parses requests, calls these
/// methods and writes their results back. Methods are called concurrently (one task per
/// client connection), so implementations are actors or otherwise synchronised. Throw an
/// `AgentControlError` to give the client a specific code; any other error is reported as
/// `internal`.
public protocol AgentControl: Sendable {
    /// A snapshot of every part of the agent, ages computed now.
    func status() async throws -> AgentStatus
    /// Opens a manual alert with its countdown (or returns the one already open).
    func triggerSOS() async throws -> AlertStatus
    /// Cancels the open alert ("I am safe" with a reason).
    func markSafe(reason: CancelReason) async throws -> AlertStatus
    /// Stops raising alerts from sensor rules (manual SOS still works); readings keep being stored.
    func pauseMonitoring() async throws -> MonitoringState
    func resumeMonitoring() async throws -> MonitoringState
}

/// Whether sensor-rule monitoring is paused, as `pause` and `resume` report it.
public struct MonitoringState: Hashable, Sendable, Codable {
    public var paused: Bool

    public init(paused: Bool) {
        self.paused = paused
    }
}

/// A control request the agent refuses, with a code a script can test.
public struct AgentControlError: Error, Hashable, Sendable, Codable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable, Codable {
        /// `safe` with no open alert.
        case noOpenAlert = "no_open_alert"
        /// The part that would do it is not running (yet).
        case unavailable
        /// The request line was not a valid request.
        case badRequest = "bad_request"
        case `internal`
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
