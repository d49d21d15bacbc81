import ArgumentParser
import TrackMeAgent
import TrackMeCore

/// `trackme-agent sos`: raise a manual alert (with its countdown).
struct SOSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sos",
        abstract: "Raise a manual SOS alert; it can be cancelled during the countdown.",
        discussion: ControlCall.exitStatusHelp
    )

    @OptionGroup var socket: SocketOptions

    @Flag(help: "Raise it at once and show nothing on the device (no light, no sound): for a wearer under threat.")
    var discreet = false

    func run() async throws {
        let response = try await ControlCall.perform(discreet ? .discreetSOS : .sos, socket: socket.socket)
        guard let alert = response.alert else { return }
        var line = "SOS: alert \(alert.id) is \(alert.state.rawValue)"
        if let remaining = alert.countdownRemainingSeconds {
            line += ", raised in \(Int(remaining.rounded(.up))) s unless cancelled (trackme-agent safe --reason accidental)"
        }
        print(line)
    }
}
