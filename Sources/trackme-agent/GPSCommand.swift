import ArgumentParser
import GPSDPosition
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `trackme-agent gps ...`: field tools for the position source.
struct GPSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gps",
        abstract: "Field tools for the gpsd position source.",
        subcommands: [GPSDumpCommand.self]
    )
}

/// `trackme-agent gps dump [--host H] [--port P] [--count N]`: one JSON line per 2D/3D fix.
struct GPSDumpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print each gpsd fix with mode >= 2 as one JSON object per line."
    )

    @Option(help: "gpsd host.")
    var host = "127.0.0.1"

    @Option(help: "gpsd port.")
    var port = 2947

    @Option(help: "Exit after this many fixes (default: until gpsd closes).")
    var count: Int?

    func run() async throws {
        var logger = Logger(label: "trackme.gps.dump")
        logger.logLevel = .warning
        let configuration = GPSDDump.Configuration(host: host, port: port, count: count)
        try await GPSDDump.run(configuration, logger: logger) { line in
            print(line)
            // Flush per line so a pipe (jq, a log file) sees each fix as it comes.
            fflush(nil)
        }
    }
}
