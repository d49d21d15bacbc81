import ArgumentParser

/// `trackme-agent`: the edge agent and its field tools. One `AsyncParsableCommand` per verb;
/// each turns its options into a plain configuration value and hands it to a library.
@main
struct TrackMeAgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trackme-agent",
        abstract: "TrackMe Edge agent: BLE heart rate, gpsd position, local SOS, durable sync.",
        subcommands: [
            GPSCommand.self,
            // Verbs are registered here, one line each.
            RunCommand.self,
            ConfigCommand.self,
            StatusCommand.self,
            SOSCommand.self,
            SafeCommand.self,
            PauseCommand.self,
            ResumeCommand.self,
            ScanCommand.self,
            HRMCommand.self,
            TaxiCommand.self,
            RunJoinCommand.self,
            RunCheckInCommand.self,
            WipeCommand.self,
        ]
    )
}
