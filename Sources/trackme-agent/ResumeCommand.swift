import ArgumentParser
import TrackMeAgent

/// `trackme-agent resume`: monitoring on again after `pause`.
struct ResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume monitoring after pause.",
        discussion: ControlCall.exitStatusHelp
    )

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.resume, socket: socket.socket)
        print(response.monitoring?.paused == true ? "monitoring paused" : "monitoring active")
    }
}
