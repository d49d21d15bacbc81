// Data path: the agent's executable, running steps 1-5 on the device (TrackMeAgent).

import ArgumentParser
import TrackMeAgent

/// `trackme-agent config`: configuration tools (`check`).
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config",
        abstract: "Configuration file tools.",
        subcommands: [ConfigCheckCommand.self]
    )
}

/// `trackme-agent config check PATH`: read and check the file, start nothing.
struct ConfigCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a configuration file: every unknown key and bad value, with its line.",
        discussion: "Exit status: 0 and a summary of the effective settings when the file is usable; 1 and every problem otherwise."
    )

    @Argument(help: "The YAML configuration file.")
    var path: String

    func run() async throws {
        do {
            let configuration = try ConfigurationLoader.load(path: path)
            print("ok: \(path)")
            for line in configuration.summaryLines { print("  \(line)") }
        } catch {
            ControlCall.printError(error.description)
            let count = error.issues.count
            ControlCall.printError("\(path): \(count) problem\(count == 1 ? "" : "s")")
            throw ExitCode(1)
        }
    }
}
