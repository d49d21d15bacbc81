import ArgumentParser
import Foundation
import TrackMeAgent

/// `trackme-agent status`: is every part of the agent working?
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show strap, heart rate, gpsd, store, sync and alert state of the running agent.",
        discussion: ControlCall.exitStatusHelp
    )

    @Flag(name: .long, help: "Print the status as JSON (for scripts and monitoring).")
    var json = false

    @OptionGroup var socket: SocketOptions

    func run() async throws {
        let response = try await ControlCall.perform(.status, socket: socket.socket)
        guard let status = response.status else {
            ControlCall.printError("trackme-agent: status: the agent sent no status")
            throw ExitCode(1)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
        } else {
            print(StatusReport.render(status))
        }
    }
}
