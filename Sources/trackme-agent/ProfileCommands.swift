import ArgumentParser
import Foundation
import TrackMeAgent
import TrackMeCore

/// `trackme-agent taxi available|unavailable|ride-start|ride-end`: a taxi's availability.
/// `ride-start` makes the taxi unavailable at once; the state goes with every report.
/// `trackme-agent taxi offer|accept|refuse|pickup|complete|missing-client`: the ride the server
/// offered this taxi (shown, answered within its window), and how the ride went.
struct TaxiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxi",
        abstract:
            "A taxi terminal: availability (available, unavailable, ride-start, ride-end) and ride offers (offer, accept, refuse, pickup, complete, missing-client).",
        discussion: ControlCall.exitStatusHelp
    )

    enum Choice: String, ExpressibleByArgument, CaseIterable {
        case available, unavailable
        case rideStart = "ride-start"
        case rideEnd = "ride-end"
        case offer, accept, refuse, pickup, complete
        case missingClient = "missing-client"
    }

    @Argument(help: "available, unavailable, ride-start, ride-end, offer, accept, refuse, pickup, complete or missing-client.")
    var choice: Choice

    /// The availability command, or nil for a ride command.
    var event: TaxiStateMachine.Event? {
        switch choice {
        case .available: .available
        case .unavailable: .unavailable
        case .rideStart: .rideStart
        case .rideEnd: .rideEnd
        case .offer, .accept, .refuse, .pickup, .complete, .missingClient: nil
        }
    }

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        if let event {
            let response = try await ControlCall.perform(.taxi(event), socket: socket.socket)
            print("taxi \(response.profile?.taxi?.rawValue ?? "unknown")")
            return
        }
        guard let action = ControlRequest.RideAction(rawValue: choice.rawValue) else { return }
        let response = try await ControlCall.perform(.ride(action), socket: socket.socket)
        print(Self.describe(response.ride, after: action))
    }

    /// One line for the driver: the offer and its time left, or the ride as it stands.
    static func describe(_ ride: RideNotice?, after action: ControlRequest.RideAction) -> String {
        guard let ride else { return action == .offer ? "no ride offer" : "done: no ride offer or ride now" }
        var parts = ["ride \(ride.rideID) \(ride.stage.rawValue)", "zone \(ride.zone)"]
        if let pickup = ride.pickup { parts.append("pickup \(pickup)") }
        if let reserved = ride.reservedMilliseconds {
            parts.append("reserved for \(Date(timeIntervalSince1970: Double(reserved) / 1000).formatted(.iso8601))")
        }
        if let within = ride.answerWithinMilliseconds { parts.append("answer within \(within / 1000) s (taxi accept | taxi refuse)") }
        parts.append("offer \(ride.offerID)")
        return parts.joined(separator: ", ")
    }
}

/// `trackme-agent run-join CODE [--show] [--share-health]`: a runner joins the run the organiser
/// gave the code of.
struct RunJoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-join",
        abstract: "Join a run by its code (runner profile); --show agrees to be shown to spectators.",
        discussion: ControlCall.exitStatusHelp
    )

    @Argument(help: "The run's code, as the organiser gave it (4-32 of A-Z 0-9 -).")
    var code: String

    @Flag(name: .long, help: "Agree to be shown, with your name, on the run's public spectator page.")
    var show = false

    @Flag(name: .customLong("share-health"), help: "Let the run's organiser follow your heart rate during the run (given now or never).")
    var shareHealth = false

    @OptionGroup var socket: SocketOptions

    func validate() throws {
        guard RunParticipation.isValidCode(code) else { throw ValidationError("a run code is 4-32 of A-Z 0-9 -") }
    }

    func run() async throws {
        let response = try await ControlCall.perform(.runJoin(code: code, show: show, shareHealth: shareHealth), socket: socket.socket)
        print(
            "joined run \(response.profile?.run?.code ?? code)" + (show ? ", shown to spectators" : ", not shown to spectators")
                + (shareHealth ? ", heart rate shared with the organiser" : "")
        )
    }
}

/// `trackme-agent run-check-in`: the runner is at the start.
struct RunCheckInCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run-check-in",
        abstract: "Check in at the start of the run this runner joined.",
        discussion: ControlCall.exitStatusHelp
    )

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.runCheckIn, socket: socket.socket)
        print("checked in to run \(response.profile?.run?.code ?? "?")")
    }
}
