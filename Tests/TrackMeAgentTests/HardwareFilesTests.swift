import Foundation
import SystemPackage
import Testing
import TrackMeSystem

/// Runs a program to completion and returns its exit status and output (stdout, then stderr).
func runProgram(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
    struct NotRun: Error, CustomStringConvertible { var description: String }
    let result = await ProcessRunner.run(ChildProcess(FilePath(executable), arguments: arguments, output: .captured(limit: 1 << 22)))
    let output = result.standardOutputText + result.standardErrorText
    switch result.outcome {
    case .exited(let status): return (status, output)
    case .signalled(let signal): return (128 + signal, output)
    case .timedOut, .stopped, .notStarted: throw NotRun(description: "\(executable): \(result.outcome) \(output)")
    }
}

@Suite("hardware/ files")
struct HardwareFilesTests {
    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    @Test("the systemd unit passes systemd-analyze verify with no warnings")
    func unitVerifies() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: Self.systemdAnalyze),
            "systemd-analyze is missing: apt-get install systemd (this test must not be skipped)"
        )
        let unit = try String(contentsOfFile: Repository.path("hardware/trackme-agent.service"), encoding: .utf8)
        // verify insists that ExecStart's binary exists; on a build machine it is not installed,
        // so check a copy whose ExecStart points at an executable that does exist.
        let existing = "/bin/true"
        let rewritten = unit.replacingOccurrences(of: "ExecStart=/usr/local/bin/trackme-agent ", with: "ExecStart=\(existing) ")
        try #require(rewritten != unit, "ExecStart no longer starts with /usr/local/bin/trackme-agent")
        let directory = try TemporaryDirectory()
        let copy = directory.file("trackme-agent.service")
        try rewritten.write(toFile: copy, atomically: true, encoding: .utf8)
        let result = try await runProgram(Self.systemdAnalyze, ["verify", copy])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(result.output)")
    }

    @Test("the unit is Type=notify with a watchdog, restarts on failure, and grants only what HCI needs")
    func unitHardening() async throws {
        let unit = try String(contentsOfFile: Repository.path("hardware/trackme-agent.service"), encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
        for required in [
            "Type=notify", "Restart=on-failure", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
            "PrivateTmp=yes", "ReadWritePaths=/var/lib/trackme", "User=trackme",
            "CapabilityBoundingSet=CAP_NET_RAW CAP_NET_ADMIN", "AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_BLUETOOTH",
        ] {
            #expect(lines.contains(required), "missing \(required)")
        }
        #expect(lines.contains { $0.hasPrefix("WatchdogSec=") })
    }

    @Test("install.sh is valid bash and its dry run installs binary, unit, config, user and directories")
    func installScript() async throws {
        let script = Repository.path("hardware/install.sh")
        let syntax = try await runProgram("/bin/bash", ["-n", script])
        #expect(syntax.status == 0, "\(syntax.output)")
        let dryRun = try await runProgram("/bin/bash", [script, "--dry-run", "--binary", "/bin/true", "--start"])
        #expect(dryRun.status == 0, "\(dryRun.output)")
        for expected in [
            "+ install -D -m 0755 -o root -g root /bin/true /usr/local/bin/trackme-agent",
            "+ install -d -m 0750 -o trackme -g trackme /var/lib/trackme",
            "/etc/systemd/system/trackme-agent.service",
            "+ systemctl daemon-reload",
            "+ /usr/local/bin/trackme-agent config check /etc/trackme/agent.yaml",
            "+ systemctl enable --now trackme-agent.service",
        ] {
            #expect(dryRun.output.contains(expected), "missing \(expected) in:\n\(dryRun.output)")
        }
        let missing = try await runProgram("/bin/bash", [script, "--dry-run"])
        #expect(missing.status == 64)
    }
}
