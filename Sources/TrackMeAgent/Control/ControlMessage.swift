import Foundation
public import TrackMeCore

/// One request on the control socket: a JSON object on one line, e.g.
/// `{"command":"safe","reason":"false_alarm"}`.
public struct ControlRequest: Hashable, Sendable, Codable {
    public enum Command: String, Hashable, Sendable, Codable, CaseIterable {
        case status, sos, safe, pause, resume
        /// A taxi's availability (`taxi`: `available`, `unavailable`, `ride-start`, `ride-end`).
        case taxi
        /// A runner joins a run by its code (`code`, `show`), and checks in at the start.
        case runJoin = "run_join"
        case runCheckIn = "run_check_in"
        /// A taxi's ride offer: show it, answer it, and say how the ride went (`ride`).
        case ride
    }

    /// What `trackme-agent taxi offer|accept|refuse|pickup|complete|missing-client` asks.
    public enum RideAction: String, Hashable, Sendable, Codable, CaseIterable {
        /// Show the offer waiting (or the ride accepted) without answering.
        case offer
        case accept, refuse, pickup, complete
        case missingClient = "missing-client"

        /// The answer the server is sent; nil for `offer`.
        public var event: RideAnswer.Event? {
            switch self {
            case .offer: nil
            case .accept: .accept
            case .refuse: .refuse
            case .pickup: .pickup
            case .complete: .complete
            case .missingClient: .missingClient
            }
        }
    }

    public var command: Command
    /// Required for `safe`.
    public var reason: CancelReason?
    /// For `sos`: raise it discreetly (no countdown, nothing shown on the device).
    public var discreet: Bool?
    /// Required for `taxi`.
    public var taxi: TaxiStateMachine.Event?
    /// Required for `run_join`: the run's code, and whether to be shown to spectators.
    public var code: String?
    public var show: Bool?
    /// For `run_join`: whether the organiser may follow the runner's heart rate during the run.
    public var health: Bool?
    /// Required for `ride`.
    public var ride: RideAction?

    public init(command: Command, reason: CancelReason? = nil) {
        self.command = command
        self.reason = reason
    }

    public static let status = ControlRequest(command: .status)
    public static let sos = ControlRequest(command: .sos)
    public static var discreetSOS: ControlRequest {
        var request = ControlRequest(command: .sos)
        request.discreet = true
        return request
    }
    public static let pause = ControlRequest(command: .pause)
    public static let resume = ControlRequest(command: .resume)
    public static func safe(_ reason: CancelReason) -> ControlRequest { ControlRequest(command: .safe, reason: reason) }
    public static func taxi(_ event: TaxiStateMachine.Event) -> ControlRequest {
        var request = ControlRequest(command: .taxi)
        request.taxi = event
        return request
    }
    public static func runJoin(code: String, show: Bool, shareHealth: Bool = false) -> ControlRequest {
        var request = ControlRequest(command: .runJoin)
        request.code = code
        request.show = show
        request.health = shareHealth ? true : nil
        return request
    }
    public static let runCheckIn = ControlRequest(command: .runCheckIn)
    public static func ride(_ action: RideAction) -> ControlRequest {
        var request = ControlRequest(command: .ride)
        request.ride = action
        return request
    }
}

/// The answer to one request, on one line: `{"ok":true,"status":{...}}` or
/// `{"ok":false,"error":{"code":"no_open_alert","message":"..."}}`.
public struct ControlResponse: Hashable, Sendable, Codable {
    public var ok: Bool
    public var status: AgentStatus?
    public var alert: AlertStatus?
    public var monitoring: MonitoringState?
    public var error: AgentControlError?
    /// The answer to `taxi`, `run_join` and `run_check_in`.
    public var profile: ProfileState?
    /// The answer to `ride`: the offer waiting or the ride under way, nil when none.
    public var ride: RideNotice?

    public init(
        ok: Bool,
        status: AgentStatus? = nil,
        alert: AlertStatus? = nil,
        monitoring: MonitoringState? = nil,
        error: AgentControlError? = nil,
        profile: ProfileState? = nil
    ) {
        self.profile = profile
        self.ok = ok
        self.status = status
        self.alert = alert
        self.monitoring = monitoring
        self.error = error
    }

    public static func failure(_ error: AgentControlError) -> ControlResponse {
        ControlResponse(ok: false, error: error)
    }
}

/// The line-delimited JSON framing both ends share.
package enum ControlCodec {
    package static func encodeLine<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // JSONEncoder never emits a raw newline (they are escaped inside strings), so one value
        // is one line.
        return Array(try encoder.encode(value)) + [UInt8(ascii: "\n")]
    }

    package static func decode<T: Decodable>(_ type: T.Type, from line: [UInt8]) throws -> T {
        try JSONDecoder().decode(type, from: Data(line))
    }
}
