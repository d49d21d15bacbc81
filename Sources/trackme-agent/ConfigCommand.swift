// Data path: the agent's executable, running steps 1-5 on the device (TrackMeAgent).

import ArgumentParser
import Foundation
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

    @Flag(help: "Check the file alone, without opening the key, token and trace files it names (checking it on another machine).")
    var syntaxOnly = false

    func run() async throws {
        let configuration: AgentConfiguration
        do {
            configuration = try ConfigurationLoader.load(path: path)
        } catch {
            ControlCall.printError(error.description)
            let count = error.issues.count
            ControlCall.printError("\(path): \(count) problem\(count == 1 ? "" : "s")")
            throw ExitCode(1)
        }
        // What `run` opens before it starts, opened the same way: a file it would refuse is a
        // problem here too.
        let (problems, notes) =
            syntaxOnly ? ([], []) : AgentAssembly.checkFiles(configuration, environment: ProcessInfo.processInfo.environment)
        if !problems.isEmpty {
            for problem in problems { ControlCall.printError("\(path): \(problem)") }
            ControlCall.printError("\(path): \(problems.count) problem\(problems.count == 1 ? "" : "s")")
            throw ExitCode(1)
        }
        print("ok: \(path)")
        for line in configuration.summaryLines { print("  \(line)") }
        for note in notes { print("note: \(note)") }
    }
}
