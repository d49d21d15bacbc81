import ArgumentParser
import TrackMeAgent
import TrackMeCore

/// `trackme-agent safe --reason ...`: cancel the open alert.
struct SafeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "safe",
        abstract: "Cancel the open alert: the wearer is safe.",
        discussion: ControlCall.exitStatusHelp
    )

    /// The CLI spelling of `CancelReason` (kept here so Core does not depend on ArgumentParser).
    enum Reason: String, ExpressibleByArgument, CaseIterable {
        case falseAlarm = "false_alarm"
        case accidental
        case iAmSafe = "i_am_safe"

        var cancelReason: CancelReason {
            switch self {
            case .falseAlarm: .falseAlarm
            case .accidental: .accidental
            case .iAmSafe: .iAmSafe
            }
        }
    }

    @Option(name: .long, help: "Why the alert is cancelled.")
    var reason: Reason

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.safe(reason.cancelReason), socket: socket.socket)
        guard let alert = response.alert else { return }
        print("alert \(alert.id) (\(alert.kind.rawValue)) is \(alert.state.rawValue): \(reason.rawValue)")
    }
}
