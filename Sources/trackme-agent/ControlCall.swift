import ArgumentParser
import TrackMeAgent

/// `--socket PATH`, shared by the verbs that talk to the running agent.
struct SocketOptions: ParsableArguments {
    @Option(name: .long, help: "The agent's control socket.")
    var socket: String = StatusConfiguration.defaultSocketPath
}

/// Sends one request to the running agent; turns "not running" and refusals into messages
/// on stderr and exit codes (2: no agent answered, 1: the agent refused).
enum ControlCall {
    static func perform(_ request: ControlRequest, socket: String) async throws -> ControlResponse {
        let response: ControlResponse
        do {
            response = try await ControlClient.send(request, socketPath: socket)
        } catch {
            printError("trackme-agent: cannot reach the agent at \(socket) (is it running?): \(error)")
            throw ExitCode(2)
        }
        guard response.ok else {
            let reason = response.error.map(\.description) ?? "refused without a reason"
            printError("trackme-agent: \(request.command.rawValue): \(reason)")
            throw ExitCode(1)
        }
        return response
    }

    static let exitStatusHelp = """
        Talks to the running agent through its control socket (default \(StatusConfiguration.defaultSocketPath); \
        members of the trackme group may use it). Exit status: 0 done, 1 the agent refused (the reason is \
        printed), 2 no agent answered.
        """

    static func printError(_ message: String) {
        JournaldLogHandler.writeToStandardError(message + "\n")
    }
}
