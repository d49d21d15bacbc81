import Foundation
import ServiceLifecycle
import Testing
import TrackMeCore
import TrackMeServer

@testable import TrackMeAgent

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The feedback through the daemon's own services against the real server on loopback: a manual
/// SOS's countdown, the alert reaching the server, and a dispatcher's acknowledgement each show
/// on an LED-class device (a directory laid out like /sys/class/leds/NAME).
@Suite("feedback end to end", .serialized)
struct FeedbackEndToEndTests {
    @Test("countdown, sent and acknowledged drive the LED through the dispatch lane and the sync engine")
    func ledFollowsTheAlert() async throws {
        let directory = try TemporaryDirectory()
        let (server, serverTask, port) = try await Self.serverWithDevice("pi-feedback", PersonProfile(name: "Ada", age: 67), in: directory)
        defer { serverTask.cancel() }
        let led = try FeedbackTests.fakeLED(in: directory)
        let configuration = try ConfigurationLoader.parse(
            yaml: """
                person: {name: Ada, age: 67}
                server: {url: "http://127.0.0.1:\(port)", device_id: pi-feedback, token_file: token}
                strap:
                  transport: socketpair
                  trace: \(Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv"))
                  pace: 5
                store: {path: data/agent.sqlite}
                sos: {rules: {manual: {countdown_seconds: 1.5}}}
                feedback: {led: \(led)}
                """,
            baseDirectory: directory.path
        )
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let group = ServiceGroup(services: parts.services, logger: quietLogger)
        let running = Task { try await group.run() }
        defer { running.cancel() }

        let alert = try await parts.control.triggerSOS()
        #expect(alert.state == .pending)
        let countdown = try await ButtonReaderTests.poll(parts.control) { $0.feedback == .countdown }
        #expect(countdown.feedback == .countdown)
        #expect(try await Self.led(led, "delay_on", becomes: "100"))

        let sent = try await ButtonReaderTests.poll(parts.control) { $0.feedback == .sent }
        #expect(sent.feedback == .sent, "the server has it")
        #expect(try await Self.led(led, "delay_on", becomes: "1000"))
        #expect(try FeedbackTests.read(led, "trigger") == "timer")

        let dispatcher = try await server.createDispatcher()
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/v1/alerts/\(alert.id)/ack")))
        request.httpMethod = "POST"
        request.setValue("Bearer \(dispatcher.token)", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        let acknowledged = try await ButtonReaderTests.poll(parts.control) { $0.feedback == .acknowledged }
        #expect(acknowledged.feedback == .acknowledged)
        #expect(try await Self.led(led, "brightness", becomes: "255"))
        #expect(try FeedbackTests.read(led, "trigger") == "none")
        await group.triggerGracefulShutdown()
    }

    @Test("a discreet SOS reaches the server as any alert does, and the LED and the hook never change")
    func discreetSOSShowsNothing() async throws {
        let directory = try TemporaryDirectory()
        let (server, serverTask, port) = try await Self.serverWithDevice("pi-discreet", PersonProfile(name: "Bea", age: 34), in: directory)
        defer { serverTask.cancel() }
        let led = try FeedbackTests.fakeLED(in: directory)
        // Not what idle writes, so the service's first write (what the device shows before) is seen.
        try "9\n".write(toFile: led + "/brightness", atomically: false, encoding: .utf8)
        let heard = directory.file("hook.log")
        let hook = try FeedbackTests.script(directory, "hook.sh", "echo \"$1\" >> \(heard)\n")
        let configuration = try ConfigurationLoader.parse(
            yaml: """
                person: {name: Bea, age: 34}
                server: {url: "http://127.0.0.1:\(port)", device_id: pi-discreet, token_file: token}
                strap:
                  transport: socketpair
                  trace: \(Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv"))
                  pace: 5
                store: {path: data/agent.sqlite}
                sos: {rules: {manual: {countdown_seconds: 1.5}}}
                feedback: {led: \(led), command: [\(hook)]}
                """,
            baseDirectory: directory.path
        )
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let group = ServiceGroup(services: parts.services, logger: quietLogger)
        let running = Task { try await group.run() }
        defer { running.cancel() }
        // What the LED shows before: idle, written once at start.
        try await eventually("the LED shows idle", within: .seconds(30)) {
            try FeedbackTests.read(led, "brightness") == "0" && FeedbackTests.read(led, "trigger") == "none"
        }
        let before = try ["trigger", "brightness"].map { try FeedbackTests.read(led, $0) }
        let heardBefore = (try? String(contentsOfFile: heard, encoding: .utf8)) ?? ""

        let alert = try await parts.control.triggerSOS(discreet: true)
        #expect(alert.state == .raised, "no countdown: nobody must see one")
        let atServer = await Self.serverHas(alert.id, on: server)
        #expect(atServer != nil, "the server never had the discreet alert")
        #expect(atServer?.alert.reason == AlertRecord.discreetReason)
        #expect(atServer?.alert.kind == .manual)
        #expect(alert.reason == AlertRecord.discreetReason)
        let status = await parts.control.status()
        #expect(status.feedback == .idle, "status says what the device shows")
        #expect(status.alert?.id == alert.id, "the alert is there when asked")
        #expect(try ["trigger", "brightness"].map { try FeedbackTests.read(led, $0) } == before)
        #expect(((try? String(contentsOfFile: heard, encoding: .utf8)) ?? "") == heardBefore, "the hook never ran for it")
        await group.triggerGracefulShutdown()
    }

    static func serverHas(_ alertID: String, on server: TrackMeServer) async -> AlertUpdate? {
        var found: AlertUpdate?
        try? await eventually("the server has \(alertID)", within: .seconds(60)) {
            found = try await server.alertUpdates(alertID: alertID).first
            return found != nil
        }
        return found
    }

    /// A server on loopback with the device enrolled and its token in `directory/token`.
    static func serverWithDevice(
        _ deviceID: String,
        _ person: PersonProfile,
        in directory: borrowing TemporaryDirectory
    ) async throws -> (TrackMeServer, Task<Void, any Error>, Int) {
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: 0,
                storage: .sqlite(path: directory.file("server.sqlite")),
                adminToken: "fb-admin"
            ),
            logger: quietLogger
        )
        let serverTask = Task { try await server.run() }
        do {
            let port = try await server.boundPort()
            let credentials = try await server.enrolDevice(deviceID: deviceID, person: person)
            try credentials.token.write(toFile: directory.file("token"), atomically: true, encoding: .utf8)
            return (server, serverTask, port)
        } catch {
            serverTask.cancel()
            throw error
        }
    }

    /// The LED is written by the feedback service's own task, a moment after the state changes:
    /// polls the file (as the status is polled) until it holds `value`.
    static func led(_ path: String, _ file: String, becomes value: String) async throws -> Bool {
        do {
            try await eventually("\(file) becomes \(value)", within: .seconds(30)) { try FeedbackTests.read(path, file) == value }
            return true
        } catch is ConditionTimeout {
            return false
        }
    }
}
