import ArgumentParser

/// `trackme-agent hrm`: Heart Rate Measurement tools.
struct HRMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hrm",
        abstract: "Heart Rate Measurement (0x2A37) tools.",
        subcommands: [HRMDecodeCommand.self, HRMWatchCommand.self]
    )
}
