import Foundation
import Testing
import TrackMeAgent
import TrackMeCore
import TrackMeServer
import TrackMeSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 20 (care), with the real `trackme-agent` binary against the real server on loopback:
/// care settings set on the server reach the running agent (status shows the version, the SOS
/// limits change, the server sees the version it runs); `wipe` refuses while the agent runs;
/// an erasure on the server makes the agent stop and wipe its store and token.
@Suite("care settings and wipe, end to end", .serialized, .timeLimit(.minutes(15)))
struct CareEndToEndTests {
    static func call(_ method: String, _ path: String, port: Int, json: String? = nil) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
        request.httpMethod = method
        request.setValue("Bearer e2e-admin", forHTTPHeaderField: "Authorization")
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, object)
    }

    @Test("care settings reach the agent; wipe refuses while it runs; an erasure makes it wipe its store and stop")
    func careAndWipe() async throws {
        let rig = try await EndToEndTests.Rig()
        let port = try await rig.server.boundPort()
        let (process, log) = try rig.startAgent(log: "agent.log")
        defer { process.killAndWait() }
        let synced = try await rig.poll(process) { $0.sync.lastSuccessAgeMilliseconds != nil }
        #expect(synced?.care?.version == nil, "before: \(String(describing: synced?.care))")
        #expect(synced?.limits?.minimumBPM == 40)

        let (status, body) = try await Self.call(
            "PUT",
            "/v1/devices/\(EndToEndTests.deviceID)/care-settings",
            port: port,
            json: #"{"min_hr": 52, "rules": {"contact_lost": false}}"#
        )
        #expect(status == 200, "\(body)")
        let applied = try await rig.poll(process) { $0.care?.version == 1 }
        #expect(applied?.care?.version == 1, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        #expect(applied?.limits?.minimumBPM == 52)
        #expect(applied?.care?.conflicts == [])
        // The server learns the version the device runs from its next heartbeat.
        try await eventually("the server knows the device runs version 1", within: .seconds(60), every: .milliseconds(300)) {
            try await Self.call("GET", "/v1/devices/\(EndToEndTests.deviceID)/care-settings", port: port).1["device_version"] as? Int == 1
        }

        // A person returning the device: not while the agent runs.
        let refused = try await runProgram(try ExecutableTests.agentBinary(), ["wipe", "--config", rig.config, "--yes"])
        #expect(refused.status == 2, "\(refused.output)")
        #expect(FileManager.default.fileExists(atPath: rig.storePath))

        // The person's data is erased on the server: the agent is told, stops and wipes.
        let (erased, erasedBody) = try await Self.call("POST", "/v1/devices/\(EndToEndTests.deviceID)/erase", port: port)
        #expect(erased == 200, "\(erasedBody)")
        let exit = await process.exit()
        let stderr = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(exit == .exited(0), "\(stderr)")
        #expect(stderr.contains("device wiped on the server's order"))
        #expect(!FileManager.default.fileExists(atPath: rig.storePath))
        #expect(!FileManager.default.fileExists(atPath: rig.storePath + "-wal"))
        #expect(!FileManager.default.fileExists(atPath: rig.directory.file("token")))
        // Started again, it cannot sync (no token): it says so and exits 1.
        let again = try await runProgram(try ExecutableTests.agentBinary(), ["run", "--config", rig.config])
        #expect(again.status == 1)
        #expect(again.output.contains("token_file"), "\(again.output)")
    }

    @Test("trackme-agent wipe: lists without --yes; with it erases the store, its aside copies and the token, and the key file")
    func wipeCommand() async throws {
        let directory = try TemporaryDirectory()
        let config = directory.file("agent.yaml")
        try """
        person: {name: Ada, age: 67}
        server: {url: "http://127.0.0.1:9", device_id: pi-wipe, token_file: token}
        store: {path: data/agent.sqlite, key_file: store.key}
        status: {socket: agent.sock}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        let files = [
            "data/agent.sqlite", "data/agent.sqlite-wal", "data/agent.sqlite.corrupt-1", "data/agent.sqlite.generation", "token", "store.key",
        ]
        for file in files { try "secret of Ada".write(toFile: directory.file(file), atomically: true, encoding: .utf8) }
        try "someone else's".write(toFile: directory.file("data/other.sqlite"), atomically: true, encoding: .utf8)
        let binary = try ExecutableTests.agentBinary()

        let listed = try await runProgram(binary, ["wipe", "--config", config])
        #expect(listed.status == 2)
        #expect(listed.output.contains("agent.sqlite.corrupt-1"), "\(listed.output)")
        for file in files { #expect(FileManager.default.fileExists(atPath: directory.file(file))) }

        let wiped = try await runProgram(binary, ["wipe", "--config", config, "--yes"])
        #expect(wiped.status == 0, "\(wiped.output)")
        for file in files { #expect(!FileManager.default.fileExists(atPath: directory.file(file)), "\(file) left") }
        #expect(FileManager.default.fileExists(atPath: directory.file("data/other.sqlite")))
    }
}
