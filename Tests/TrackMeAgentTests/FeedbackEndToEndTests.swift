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
        defer { serverTask.cancel() }
        let port = try await server.boundPort()
        let credentials = try await server.enrolDevice(deviceID: "pi-feedback", person: PersonProfile(name: "Ada", age: 67))
        try credentials.token.write(toFile: directory.file("token"), atomically: true, encoding: .utf8)
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
