import ArgumentParser
import TrackMeAgent

/// `trackme-agent wipe --config PATH --yes`: erases everything the agent keeps of its wearer
/// (store, store key file, device token) for a person who returns the device. The agent must be
/// stopped first; without `--yes` it only lists what it would remove.
struct WipeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wipe",
        abstract: "Erase the store, its key file and the device token (the agent must be stopped).",
        discussion: """
            For a person who returns the device, or after the server ordered it (the agent does this by \
            itself then). The device keeps nothing of them afterwards and no longer syncs: to serve \
            someone else it is enrolled anew (new device token). Exit status: 0 wiped (or listed), \
            1 a file could not be wiped, 2 the agent is running or --yes is missing.
            """
    )

    @Option(name: .long, help: "The YAML configuration file.")
    var config: String = "/etc/trackme/agent.yaml"

    @Flag(name: .long, help: "Really erase (otherwise only list what would be erased).")
    var yes = false

    func run() async throws {
        let configuration: AgentConfiguration
        do {
            configuration = try ConfigurationLoader.load(path: config)
        } catch {
            ControlCall.printError(error.description)
            throw ExitCode(1)
        }
        if (try? await ControlClient.send(ControlRequest(command: .status), socketPath: configuration.status.socketPath)) != nil {
            ControlCall.printError(
                "trackme-agent wipe: the agent is running (it answered at \(configuration.status.socketPath)); stop it first (systemctl stop trackme-agent)"
            )
            throw ExitCode(2)
        }
        guard yes else {
            let files = DeviceWipe.files(configuration)
            print(files.isEmpty ? "nothing to wipe" : "would erase:\n" + files.map { "  \($0)" }.joined(separator: "\n"))
            ControlCall.printError("trackme-agent wipe: add --yes to erase")
            throw ExitCode(2)
        }
        do {
            let report = try DeviceWipe.wipe(configuration)
            print(report.removed.isEmpty ? "nothing to wipe" : "erased:\n" + report.removed.map { "  \($0)" }.joined(separator: "\n"))
            for note in report.notes { print("note: \(note)") }
        } catch {
            ControlCall.printError("trackme-agent wipe: \(error)")
            throw ExitCode(1)
        }
    }
}
