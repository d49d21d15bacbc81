import Foundation
import Testing
import TrackMeSystem

@testable import TrackMeAgent

/// Drives the real `trackme-agent` executable as a child process.
@Suite("trackme-agent executable")
struct ExecutableTests {
    static func agentBinary() throws -> String { try builtProduct("trackme-agent") }

    static func write(_ text: String, to path: String) throws {
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("config check: ok with a summary, or every problem with its line and exit 1")
    func configCheck() async throws {
        let binary = try Self.agentBinary()
        let directory = try TemporaryDirectory()
        let good = try await runProgram(binary, ["config", "check", Repository.path("hardware/trackme-agent.example.yaml")])
        #expect(good.status == 0, "\(good.output)")
        #expect(good.output.hasPrefix("ok: "))
        #expect(good.output.contains("device      pi-0042"))

        let bad = directory.file("bad.yaml")
        try Self.write(
            """
            person:
              name: Ada
              age: 67
            server:
              url: https://trackme.example.org
              device_id: pi-0042
            strap:
              adress: AA:BB:CC:DD:EE:FF
            gpsd: {port: 0}
            """,
            to: bad
        )
        let result = try await runProgram(binary, ["config", "check", bad])
        #expect(result.status == 1)
        #expect(result.output.contains("\(bad): line 8: strap.adress: unknown key (did you mean address?)"))
        #expect(result.output.contains("\(bad): line 9: gpsd.port: 0 is out of range (1...65535)"))
        #expect(result.output.contains("\(bad): 2 problems"))
    }

    @Test("config check opens the key and token files as run does: an empty token or a bad key file is a problem, exit 1")
    func configCheckOpensFiles() async throws {
        let binary = try Self.agentBinary()
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        try Self.write("", to: directory.file("etc/token"))
        try Self.write("not a key\n", to: directory.file("etc/store.key"))
        let path = directory.file("agent.yaml")
        try Self.write(
            """
            person: {name: Ada, age: 67}
            server: {url: "https://trackme.example.org", device_id: pi-0042, token_file: \(directory.file("etc/token"))}
            store: {path: \(directory.file("data/agent.sqlite")), encryption: auto, key_file: \(directory.file("etc/store.key"))}
            """,
            to: path
        )
        let result = try await runProgram(binary, ["config", "check", path])
        #expect(result.status == 1, "\(result.output)")
        #expect(result.output.contains("server.token_file: \(directory.file("etc/token")) is empty"), "\(result.output)")
        #expect(result.output.contains("store.key:"), "\(result.output)")
        #expect(result.output.contains("\(path): 2 problems"))
        // The file alone is fine.
        #expect(try await runProgram(binary, ["config", "check", "--syntax-only", path]).status == 0)
        // Fixed, it is ok.
        try Self.write("token-1\n", to: directory.file("etc/token"))
        try FileManager.default.removeItem(atPath: directory.file("etc/store.key"))
        try Self.write(String(repeating: "3c", count: 32) + "\n", to: directory.file("etc/store.key"))
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: directory.file("etc/store.key"))
        let fixed = try await runProgram(binary, ["config", "check", path])
        #expect(fixed.status == 0, "\(fixed.output)")
    }

    @Test("run refuses a bad configuration before starting anything")
    func runRefusesBadConfig() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("agent.yaml")
        try Self.write("person: {name: Ada, age: 67}\nserver: {url: https://x.org, device_id: pi-1}\nstatus: {sockett: x}\n", to: path)
        let result = try await runProgram(try Self.agentBinary(), ["run", "--config", path])
        #expect(result.status == 1)
        #expect(result.output.contains("line 3: status.sockett: unknown key (did you mean socket?)"))
        #expect(!FileManager.default.fileExists(atPath: directory.file("x")))
    }

    @Test("run: READY=1 to systemd, status answers, SIGTERM stops it cleanly with STOPPING=1")
    func runStatusAndStop() async throws {
        let binary = try Self.agentBinary()
        let directory = try TemporaryDirectory()
        let config = directory.file("agent.yaml")
        try Self.write(
            """
            person: {name: Ada, age: 67}
            server: {url: "http://127.0.0.1:9", device_id: pi-0042, token_file: token}
            store: {path: data/agent.sqlite}
            status: {socket: run/agent.sock}
            metrics: {port: 0}
            """,
            to: config
        )
        try Self.write("not-a-real-token\n", to: directory.file("token"))
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = systemd.name
        environment["WATCHDOG_USEC"] = "60000000"
        environment.removeValue(forKey: "JOURNAL_STREAM")
        let log = Pipe()
        let process = try SpawnedProcess.launch(binary, arguments: ["run", "--config", config], environment: environment, standardError: .pipe(log))
        defer { process.killAndWait() }

        let ready = try await systemd.receive()
        #expect(ready == "READY=1\nSTATUS=monitoring pi-0042\nMAINPID=\(process.pid)")

        let socket = directory.file("run/agent.sock")
        let status = try await runProgram(binary, ["status", "--json", "--socket", socket])
        #expect(status.status == 0, "\(status.output)")
        let decoded = try JSONDecoder().decode(AgentStatus.self, from: Data(status.output.utf8))
        #expect(decoded.deviceID == "pi-0042")
        #expect(decoded.monitoringPaused == false)
        let table = try await runProgram(binary, ["status", "--socket", socket])
        #expect(table.output.hasPrefix("agent"))

        let pause = try await runProgram(binary, ["pause", "--socket", socket])
        #expect(pause.output == "monitoring paused\n")
        // The server is unreachable and no strap answers: the manual alert still opens locally,
        // with its countdown, and `safe` cancels it.
        let sos = try await runProgram(binary, ["sos", "--socket", socket])
        #expect(sos.status == 0, "\(sos.output)")
        #expect(sos.output.hasPrefix("SOS: alert "), "\(sos.output)")
        #expect(sos.output.contains("is pending, raised in 5 s unless cancelled"), "\(sos.output)")
        let safe = try await runProgram(binary, ["safe", "--reason", "accidental", "--socket", socket])
        #expect(safe.status == 0, "\(safe.output)")
        #expect(safe.output.contains("(manual) is cancelled: accidental"), "\(safe.output)")

        process.signal(SIGINT)  // SIGTERM is the same path in the ServiceGroup
        #expect(try await systemd.receive() == "STOPPING=1\nSTATUS=stopping")
        #expect(await process.exit() == .exited(0))
        #expect(!FileManager.default.fileExists(atPath: socket))
        let stderr = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(stderr.contains("info trackme.agent: stopped"), "\(stderr)")
        #expect(!stderr.contains("<6>"), "plain style when stderr is not the journal")

        let gone = try await runProgram(binary, ["status", "--socket", socket])
        #expect(gone.status == 2)
        #expect(gone.output.contains("cannot reach the agent"))
    }

    @Test("SIGTERM stops it the same way")
    func sigterm() async throws {
        let directory = try TemporaryDirectory()
        let config = directory.file("agent.yaml")
        try Self.write(
            "person: {name: Ada, age: 67}\nserver: {url: \"http://127.0.0.1:9\", device_id: pi-1, token_file: token}\n"
                + "store: {path: agent.sqlite}\nstatus: {socket: a.sock}\nmetrics: {enabled: false}\n",
            to: config
        )
        try Self.write("not-a-real-token\n", to: directory.file("token"))
        let systemd = try FakeNotifySocket(path: directory.file("notify"))
        let process = try SpawnedProcess.launch(
            try Self.agentBinary(),
            arguments: ["run", "--config", config],
            environment: ["NOTIFY_SOCKET": systemd.name, "PATH": "/usr/bin:/bin"]
        )
        defer { process.killAndWait() }
        #expect(try await systemd.receive().hasPrefix("READY=1"))
        process.signal(SIGTERM)
        #expect(try await systemd.receive() == "STOPPING=1\nSTATUS=stopping")
        #expect(await process.exit() == .exited(0))
    }
}
