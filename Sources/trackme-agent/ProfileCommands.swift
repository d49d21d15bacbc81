import ArgumentParser
import TrackMeAgent
import TrackMeCore

/// `trackme-agent taxi available|unavailable|ride-start|ride-end`: a taxi's availability.
/// `ride-start` makes the taxi unavailable at once; the state goes with every report.
struct TaxiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taxi",
        abstract: "Set a taxi terminal's availability: available, unavailable, ride-start, ride-end.",
        discussion: ControlCall.exitStatusHelp
    )

    enum Choice: String, ExpressibleByArgument, CaseIterable {
        case available, unavailable
        case rideStart = "ride-start"
        case rideEnd = "ride-end"
    }

    @Argument(help: "available, unavailable, ride-start or ride-end.")
    var choice: Choice

    var event: TaxiStateMachine.Event {
        switch choice {
        case .available: .available
        case .unavailable: .unavailable
        case .rideStart: .rideStart
        case .rideEnd: .rideEnd
        }
    }

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.taxi(event), socket: socket.socket)
        print("taxi \(response.profile?.taxi?.rawValue ?? "unknown")")
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
