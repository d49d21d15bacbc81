public import EdgeSync
import Foundation
public import TrackMeCore

/// The taxi terminal's view of its ride, pure: the notices of the batch replies in, the offer to
/// show (with its time left on the terminal's own monotonic clock) out. `now` is the caller's
/// monotonic time; the terminal's wall clock is never trusted for the window.
public struct RideTerminal: Hashable, Sendable {
    /// The ride offered to this taxi, accepted by it or under way.
    public private(set) var current: RideNotice?
    /// When the shown offer lapses, on the caller's monotonic time.
    private var deadline: Duration?
    /// Offers refused, lapsed or whose ride ended here: a reply made before that still carries
    /// them, and is not believed.
    private var closed: Set<String> = []

    public init() {}

    /// A notice from a batch reply. Returns true when it is an offer not shown before (the
    /// moment the terminal shows it).
    public mutating func receive(_ notice: RideNotice, now: Duration) -> Bool {
        guard !closed.contains(notice.offerID) else { return false }
        let same = current?.offerID == notice.offerID
        // The driver's own answer is newer than a reply made before it.
        if same, let shown = current, notice.stage == .offered, shown.stage != .offered { return false }
        if notice.stage == .offered, let within = notice.answerWithinMilliseconds {
            let lapses = now + .milliseconds(max(0, within))
            // A later reply's count may only shorten the window, never restart it.
            if same, let deadline { self.deadline = min(deadline, lapses) } else { deadline = lapses }
        } else {
            deadline = nil
        }
        current = notice
        return !same && notice.stage == .offered
    }

    /// Forgets an offer whose window passed; true when one did just now.
    public mutating func tick(now: Duration) -> Bool {
        guard let shown = current, shown.stage == .offered, let deadline, now >= deadline else { return false }
        close(shown.offerID)
        return true
    }

    /// Whether an offer waits for the driver's answer.
    public var offerWaiting: Bool { current?.stage == .offered }

    /// The current notice with the time left to answer as of `now`.
    public func view(now: Duration) -> RideNotice? {
        guard var notice = current else { return nil }
        if notice.stage == .offered, let deadline { notice.answerWithinMilliseconds = max(0, (deadline - now).milliseconds) }
        return notice
    }

    /// The server took the driver's answer.
    public mutating func answered(_ event: RideAnswer.Event) {
        guard var notice = current else { return }
        deadline = nil
        switch event {
        case .accept:
            notice.stage = .accepted
            notice.answerWithinMilliseconds = nil
            current = notice
        case .pickup:
            notice.stage = .onRide
            current = notice
        case .refuse, .complete, .missingClient:
            close(notice.offerID)
        }
    }

    private mutating func close(_ offerID: String) {
        // Only replies of the last few seconds can be stale; the set need not grow for months.
        if closed.count >= 256 { closed.removeAll() }
        closed.insert(offerID)
        current = nil
        deadline = nil
    }
}

/// Sends a driver's answer to the server (`POST /v1/fleet/ride-answers`) with the device token,
/// over the transport the batches use.
public struct RideAnswerSender: Sendable {
    public static let path = "/v1/fleet/ride-answers"
    let transport: any HTTPTransport
    let token: String

    public init(transport: any HTTPTransport, token: String) {
        self.transport = transport
        self.token = token
    }

    /// Nil when the server took it; otherwise what the driver is told (the server's message for
    /// a refusal, or that the server could not be reached).
    func send(_ answer: RideAnswer) async -> AgentControlError? {
        let body: [UInt8]
        do {
            body = Array(try WireCodec.encode(answer))
        } catch {
            return AgentControlError(code: .internal, message: "answer not encoded: \(error)")
        }
        let response: HTTPResponse
        do {
            response = try await transport.post(
                path: Self.path,
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                body: body
            )
        } catch {
            return AgentControlError(code: .unavailable, message: "the server was not reached: \(error)")
        }
        guard response.status != 200 else { return nil }
        struct Refusal: Decodable {
            struct Body: Decodable {
                var code: String
                var message: String
            }
            var error: Body
        }
        let refusal = try? WireCodec.decode(Refusal.self, from: Data(response.body))
        return AgentControlError(
            code: .refused,
            message: refusal.map { "\($0.error.code): \($0.error.message)" } ?? "the server answered \(response.status)"
        )
    }
}
