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
    /// Opens a manual alert with its countdown (or returns the one already open); a discreet one
    /// is raised at once and never shown on the device.
    func triggerSOS(discreet: Bool) async throws -> AlertStatus
    /// Cancels the open alert ("I am safe" with a reason).
    func markSafe(reason: CancelReason) async throws -> AlertStatus
    /// Stops raising alerts from sensor rules (manual SOS still works); readings keep being stored.
    func pauseMonitoring() async throws -> MonitoringState
    func resumeMonitoring() async throws -> MonitoringState
    /// A taxi's availability command; refused on other profiles.
    func taxi(_ event: TaxiStateMachine.Event) async throws -> ProfileState
    /// A runner joins a run by its code, saying whether to be shown to spectators and whether
    /// the organiser may follow their heart rate; refused on other profiles.
    func joinRun(code: String, show: Bool, shareHealth: Bool) async throws -> ProfileState
    /// A runner checks in at the start of the run they joined.
    func checkInToRun() async throws -> ProfileState
    /// A taxi's ride: shows the offer, or sends the driver's answer to the server and returns
    /// the offer or ride as it now stands (nil when none is left).
    func ride(_ action: ControlRequest.RideAction) async throws -> RideNotice?
}

extension AgentControl {
    public func triggerSOS() async throws -> AlertStatus { try await triggerSOS(discreet: false) }

    public func taxi(_ event: TaxiStateMachine.Event) async throws -> ProfileState {
        throw AgentControlError(code: .unavailable, message: "this agent has no taxi profile")
    }
    public func joinRun(code: String, show: Bool, shareHealth: Bool) async throws -> ProfileState {
        throw AgentControlError(code: .unavailable, message: "this agent has no runner profile")
    }
    /// Joins without sharing health data with the organiser.
    public func joinRun(code: String, show: Bool) async throws -> ProfileState {
        try await joinRun(code: code, show: show, shareHealth: false)
    }
    public func checkInToRun() async throws -> ProfileState {
        throw AgentControlError(code: .unavailable, message: "this agent has no runner profile")
    }
    public func ride(_ action: ControlRequest.RideAction) async throws -> RideNotice? {
        throw AgentControlError(code: .unavailable, message: "this agent has no taxi profile")
    }
}

/// The device's profile and what goes with it, as `status`, `taxi` and `run-join` show it.
public struct ProfileState: Hashable, Sendable, Codable {
    public var profile: DeviceProfile
    /// A taxi's availability.
    public var taxi: TaxiAvailability?
    /// A runner's run.
    public var run: RunParticipation?

    public init(profile: DeviceProfile, taxi: TaxiAvailability? = nil, run: RunParticipation? = nil) {
        self.profile = profile
        self.taxi = taxi
        self.run = run
    }
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
        /// The command does not fit the state (ending a ride that is not on).
        case refused
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
