import ArgumentParser
import Foundation
import Logging
import TrackMeSimulation

/// `trackme-sim run SCENARIO.json [--report out.json] [--svg out.svg] [--fast | --field]`: runs
/// a scenario and exits 0 only if every expectation held.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a scenario through the agent's pipeline; exit 0 only if every expectation held."
    )

    @Argument(help: "The scenario file (simulations/scenarios/*.json).")
    var scenario: String

    @Option(help: "Write the JSON report here.")
    var report: String?

    @Option(help: "Write the SVG timeline here.")
    var svg: String?

    @Flag(help: "Field mode: replay the GPS log through the real gpsd under gpsfake, at real time.")
    var field = false

    @Flag(
        help: """
            Fast mode: the device's requests go to the server's router in process, without a \
            socket (the same encoder, router, middleware, handlers and store). Without it they go \
            over loopback TCP.
            """
    )
    var fast = false

    @Flag(
        help: """
            Outside field mode: fsync the agent's store and the server's database at every commit, as the \
            agent and the server do (slower; field mode always does). Without it a commit is \
            written but not fsynced: it survives the simulated agent kills, not a power cut.
            """
    )
    var fsync = false

    @Flag(help: "Log what the agent's parts do (to stderr).")
    var verbose = false

    @Option(
        help:
            "Keep the server up this many seconds (or to the run's end) to watch the run: prints the page's URL and a sign-in; the run goes at real time on today's date, so the pages' times and ages are true (a single device's waits for a console to connect, then catches up the seconds it waited)."
    )
    var serve: Int?

    @Option(help: "The in-process server's port (0 picks a free one).")
    var port = 0

    @Sendable static func drawProgress(_ fraction: Double) {
        let width = 40
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        FileHandle.standardError.write(Data("\r[\(bar)] \(Int(fraction * 100))% ".utf8))
    }

    func run() async throws {
        let scenarioURL = URL(fileURLWithPath: scenario)
        if CrowdScenario.isCrowd(scenarioURL) { return try await runCrowd(scenarioURL) }
        let loaded = try Scenario.load(from: scenarioURL)
        // Scenario paths are relative to the simulations/ folder, the parent of scenarios/.
        let simulations = scenarioURL.deletingLastPathComponent().deletingLastPathComponent()
        var logger = Logger(label: "trackme.sim")
        logger.logLevel = verbose ? .info : .critical
        let terminal = isatty(STDERR_FILENO) == 1
        let progress: (@Sendable (Double) -> Void)? = terminal ? Self.drawProgress : nil
        if fast, field { throw ValidationError("--fast and --field exclude each other: field mode keeps every socket") }
        if fast, serve != nil { throw ValidationError("--serve needs a socket for the console: leave out --fast") }
        var options = ScenarioRunner.Options(simulationsDirectory: simulations, field: field, fsync: fsync, progress: progress, logger: logger)
        options.io = fast ? .inProcess : .sockets
        options.port = port
        options.serve = try announcedServe(
            "console:",
            "the run goes at real time from now once the console is open; the server stays up for \(serve ?? 0) s or to its end"
        )
        let runner = ScenarioRunner(options: options)
        let outcome = try await runner.run(loaded)
        if terminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        if let report {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(outcome.report).write(to: URL(fileURLWithPath: report))
        }
        if let svg {
            try Data(outcome.renderer.svg().utf8).write(to: URL(fileURLWithPath: svg))
        }
        print(outcome.renderer.summary())
        if !outcome.report.passed { throw ExitCode(1) }
    }

    /// A scenario of many devices: `CrowdRunner`; exit 0 only if every expectation held.
    func runCrowd(_ url: URL) async throws {
        let loaded = try CrowdScenario.load(from: url)
        var logger = Logger(label: "trackme.sim")
        logger.logLevel = verbose ? .info : .critical
        if field { throw ValidationError("a crowd scenario has no field mode: leave out --field") }
        var options = CrowdRunner.Options(simulationsDirectory: url.deletingLastPathComponent().deletingLastPathComponent(), logger: logger)
        options.scenarioDirectory = url.deletingLastPathComponent()
        options.port = port
        options.inProcess = fast
        options.serve = try announcedServe("page:", "the run goes at real time from now; the server stays up for \(serve ?? 0) s")
        let outcome = try await CrowdRunner(options: options).run(loaded)
        if let report { try CrowdReport(scenario: loaded.name, outcome: outcome).write(to: URL(fileURLWithPath: report)) }
        print("\(loaded.name): \(outcome.passed ? "PASSED" : "FAILED")")
        for line in outcome.lines { print("  " + line) }
        if !outcome.passed { throw ExitCode(1) }
    }

    /// `--serve` as the runners take it: the page's address and a sign-in, written at once (not
    /// buffered: whoever reads the output needs it now), and what happens next.
    func announcedServe(_ label: String, _ next: String) throws -> ScenarioRunner.Serve? {
        guard let serve else { return nil }
        guard serve > 0 else { throw ValidationError("--serve must be a positive number of seconds") }
        return ScenarioRunner.Serve(seconds: serve) { url, username, password in
            let padding = String(repeating: " ", count: max(1, 10 - label.count))
            let lines = "\(label)\(padding)\(url)  (sign in as \(username), password \(password))\n          \(next)\n"
            FileHandle.standardOutput.write(Data(lines.utf8))
        }
    }
}
