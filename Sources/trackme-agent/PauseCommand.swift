import ArgumentParser
import TrackMeAgent

/// `trackme-agent pause`: stop raising alerts from sensor rules (readings are still stored).
struct PauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause monitoring: sensor rules raise no alerts; manual SOS still works.",
        discussion: ControlCall.exitStatusHelp
    )

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.pause, socket: socket.socket)
        print(response.monitoring?.paused == true ? "monitoring paused" : "monitoring active")
    }
}
