import Foundation
import ServiceLifecycle
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

#if canImport(Glibc)
import Glibc
#endif

/// The contact notifier as a durable job (attempts, a time limit, retries, a clean environment,
/// each run on the alert's timeline), the link key that outlives a restart, and alert times
/// from a device without a trusted clock.
@Suite("Emergency contacts: the notifier job, the link key, untrusted device times")
struct ContactNotifierTests {
    /// A scratch directory with an executable notifier script in it.
    final class Scratch: Sendable {
        let directory: URL
        init() throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-notifier-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        /// Writes `body` as a shell script; `$DIR` in it is this directory.
        func script(_ body: String) throws -> String {
            let path = path("notify.sh")
            try "#!/bin/sh\nDIR='\(directory.path)'\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
            return path
        }
        func lines(_ name: String) -> [String] {
            ((try? String(contentsOfFile: path(name), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func remove() { try? FileManager.default.removeItem(at: directory) }
    }

    static func enrol(_ s: TestServer, _ deviceID: String, contacts: [String]) async throws -> String {
        let response = try await s.client.send(
            "POST",
            "/v1/devices",
            token: TestServer.adminToken,
            json: ["device_id": deviceID, "person": ["name": "Ada", "age": 81, "contacts": contacts.map { ["name": $0, "phone": "+39 1"] }]]
        )
        try #require(response.status == 201, "enrol: \(response.text)")
        return try #require(response.object["token"] as? String)
    }

    static func timeline(_ s: TestServer, _ alertID: String, dispatcher: String) async throws -> [[String: Any]] {
        let detail = try await s.client.send("GET", "/v1/alerts/\(alertID)", token: dispatcher)
        try #require(detail.status == 200, "detail: \(detail.text)")
        return try #require(detail.object["timeline"] as? [[String: Any]])
    }

    static func contactEntries(_ timeline: [[String: Any]]) -> [String] {
        timeline.compactMap { entry in
            guard let event = entry["event"] as? String, event.hasPrefix("contact_") else { return nil }
            return "\(event): \(entry["detail"] as? String ?? "")"
        }
    }

    @Test("a notifier that exits 1 is tried again after the backoff; both runs are on the timeline", arguments: Backend.enabled)
    func retried(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script(
            """
            if [ ! -e "$DIR/failed-once" ]; then touch "$DIR/failed-once"; exit 1; fi
            echo "$TRACKME_CONTACT_NAME|$TRACKME_ATTEMPT|$TRACKME_LINK" >> "$DIR/told.txt"
            """
        )
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let device = try await Self.enrol(s, "pi-0001", contacts: ["Ben"])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 0, "the first run failed")
            #expect(
                Self.contactEntries(try await Self.timeline(s, "alert-1", dispatcher: dispatcher)) == [
                    "contact_failed: Ben, attempt 1 of 5: exit status 1"
                ]
            )
            #expect(try await s.server.escalateToContacts() == 0, "not again before the backoff")
            s.wall.advance(milliseconds: 29_999)
            #expect(try await s.server.escalateToContacts() == 0)
            s.wall.advance(milliseconds: 1)
            #expect(try await s.server.escalateToContacts() == 1, "tried again 30 s after the failure")
            #expect(try await s.server.escalateToContacts() == 0, "told once")
            let told = scratch.lines("told.txt").map { $0.split(separator: "|").map(String.init) }
            #expect(told.map { $0[0] } == ["Ben"])
            #expect(told.first?[1] == "2")
            #expect(
                Self.contactEntries(try await Self.timeline(s, "alert-1", dispatcher: dispatcher)) == [
                    "contact_failed: Ben, attempt 1 of 5: exit status 1", "contact_notified: Ben, attempt 2 of 5",
                ]
            )
            // The retry carried the link made for the first run, and it works.
            let sent = try #require(told.first?[2])
            let link = try #require(URL(string: sent))
            #expect(try await s.client.send("POST", link.path).status == 200)
        }
    }

    @Test("a notifier that cannot start is recorded and tried again, then given up on", arguments: Backend.enabled)
    func cannotStart(backend: Backend) async throws {
        let console: (inout ConsoleConfiguration) -> Void = {
            $0.contactNotifierCommand = "/nonexistent/trackme-notifier"
            $0.contactNotifierAttempts = 2
        }
        try await TestServer.with(backend, console: console) { s in
            let device = try await Self.enrol(s, "pi-0001", contacts: ["Ben"])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 0)
            s.wall.advance(milliseconds: 30_000)
            #expect(try await s.server.escalateToContacts() == 0)
            s.wall.advance(milliseconds: 3_600_000)
            #expect(try await s.server.escalateToContacts() == 0)
            let entries = Self.contactEntries(try await Self.timeline(s, "alert-1", dispatcher: dispatcher))
            #expect(entries.count == 2, "\(entries)")
            #expect(
                entries.allSatisfy { $0.hasPrefix("contact_failed: Ben, attempt") && $0.contains("could not start /nonexistent/trackme-notifier") }
            )
            #expect(entries.last?.hasSuffix("; no more attempts") == true)
        }
    }

    @Test(
        "a notifier that hangs is killed at its time limit, and the next escalation still runs",
        // Against a hang of the test itself (the notifier sleeps an hour), not a speed: beside the
        // target's other tests on a busy machine this one has taken over a minute.
        .timeLimit(.minutes(10)),
        arguments: Backend.enabled
    )
    func hung(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script(
            """
            if [ "$TRACKME_CONTACT_NAME" = Hang ] && [ ! -e "$DIR/hung-once" ]; then
                touch "$DIR/hung-once"; echo $$ > "$DIR/pid.fifo"; exec sleep 3600
            fi
            echo "$TRACKME_CONTACT_NAME" >> "$DIR/told.txt"
            """
        )
        let console: (inout ConsoleConfiguration) -> Void = {
            $0.contactNotifierCommand = notifier
            $0.contactNotifierTimeLimit = .seconds(2)
        }
        try await TestServer.with(backend, console: console) { s in
            let first = try await Self.enrol(s, "pi-0001", contacts: ["Hang"])
            let second = try await Self.enrol(s, "pi-0002", contacts: ["Ben"])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: first).status == 200)
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.postAlert(Sample.alert("pi-0002", id: "alert-2"), token: second).status == 200)

            #expect(mkfifo(scratch.path("pid.fifo"), 0o600) == 0)
            async let pass = s.server.escalateToContacts()
            // The notifier's pid through a FIFO: it runs on once the test has read it.
            let fifo = scratch.path("pid.fifo")
            let written = try await BlockingThreads.shared.run { () throws -> String in
                let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: fifo))
                defer { try? handle.close() }
                return String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            }
            let pid = try #require(pid_t(written.trimmingCharacters(in: .whitespacesAndNewlines)))
            // The three periodic jobs, and the run's time limit.
            await s.clock.waitForSleepers(4)
            s.clock.advance(by: .seconds(2))
            #expect(try await pass == 0)
            #expect(kill(pid, 0) == -1 && errno == ESRCH, "the hung notifier is gone")
            #expect(
                Self.contactEntries(try await Self.timeline(s, "alert-1", dispatcher: dispatcher)) == [
                    "contact_failed: Hang, attempt 1 of 5: still running after 2 s; killed"
                ]
            )

            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 2, "the next alert's contact, and the hung one's retry")
            #expect(Set(scratch.lines("told.txt")) == ["Ben", "Hang"])
            #expect(Self.contactEntries(try await Self.timeline(s, "alert-2", dispatcher: dispatcher)) == ["contact_notified: Ben, attempt 1 of 5"])
        }
    }

    @Test("the notifier's environment holds only what it needs: no admin token, no other server secret", arguments: Backend.enabled)
    func cleanEnvironment(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script("env > \"$DIR/env.txt\"")
        // As the CLI's environment holds them in service (the token, libpq's password).
        setenv("TRACKME_ADMIN_TOKEN", "admin-secret-from-the-environment", 1)
        setenv("PGPASSWORD", "database-secret-from-the-environment", 1)
        defer {
            unsetenv("TRACKME_ADMIN_TOKEN")
            unsetenv("PGPASSWORD")
        }
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let device = try await Self.enrol(s, "pi-0001", contacts: ["Ben"])
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 1)
            let text = try String(contentsOfFile: scratch.path("env.txt"), encoding: .utf8)
            #expect(!text.contains("secret-from-the-environment"))
            #expect(!text.contains(TestServer.adminToken))
            let names = Set(text.split(separator: "\n").compactMap { $0.split(separator: "=", maxSplits: 1).first.map(String.init) })
            #expect(
                names.subtracting(["PWD", "SHLVL", "_"]) == [
                    "PATH", "LANG", "TRACKME_CONTACT_NAME", "TRACKME_CONTACT_PHONE", "TRACKME_CONTACT_EMAIL", "TRACKME_PERSON", "TRACKME_ALERT_ID",
                    "TRACKME_ALERT_KIND", "TRACKME_LINK", "TRACKME_PURPOSE", "TRACKME_ATTEMPT",
                ],
                "the shell adds PWD, SHLVL and _ itself"
            )
            #expect(text.contains("TRACKME_CONTACT_NAME=Ben"))
        }
    }

    @Test("contacts who were told hear once that the alert closed, and how; the others do not", arguments: Backend.enabled)
    func toldOfClose(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script("echo \"$TRACKME_CONTACT_NAME|$TRACKME_PURPOSE|$TRACKME_OUTCOME|$TRACKME_LINK\" >> \"$DIR/told.txt\"")
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let device = try await Self.enrol(s, "pi-0001", contacts: ["Ben", "Cleo"])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 1)
            let resolved = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "false_alarm"])
            #expect(resolved.status == 200, "\(resolved.text)")
            s.wall.advance(milliseconds: 1_000)
            #expect(try await s.server.escalateToContacts() == 1, "Ben, who was told; not Cleo, who was not")
            #expect(try await s.server.escalateToContacts() == 0, "once")
            let told = scratch.lines("told.txt").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
            #expect(told.count == 2)
            #expect(told.last?[0...2] == ["Ben", "closed", "false_alarm"])
            #expect(told.last?[3] == "", "no link once it closed")
            #expect(told.first?[1] == "escalation")
            #expect(
                Self.contactEntries(try await Self.timeline(s, "alert-1", dispatcher: dispatcher)) == [
                    "contact_notified: Ben, attempt 1 of 5", "contact_notified: Ben (alert closed), attempt 1 of 5",
                ]
            )
        }
    }

    @Test("the retry schedule doubles its wait, stops at the limit and after success, and waits out a run in progress")
    func retrySchedule() {
        let retry = ContactRetry(attempts: 3, backoff: .seconds(30), timeLimit: .seconds(30))
        func attempt(_ n: Int, at: Int64, _ result: ContactAttemptResult?) -> ContactAttempt {
            ContactAttempt(
                alertID: "a",
                contactIndex: 0,
                purpose: .escalation,
                attempt: n,
                startedMilliseconds: at,
                finishedMilliseconds: result == nil ? nil : at,
                result: result
            )
        }
        #expect(retry.next(after: [], nowMilliseconds: 0) == .due(1))
        #expect(retry.next(after: [attempt(1, at: 0, .failed)], nowMilliseconds: 29_999) == .wait(untilMilliseconds: 30_000))
        #expect(retry.next(after: [attempt(1, at: 0, .failed)], nowMilliseconds: 30_000) == .due(2))
        #expect(
            retry.next(after: [attempt(1, at: 0, .failed), attempt(2, at: 30_000, .timedOut)], nowMilliseconds: 60_000)
                == .wait(untilMilliseconds: 90_000)
        )
        #expect(retry.next(after: [attempt(1, at: 0, .failed), attempt(2, at: 30_000, .told)], nowMilliseconds: 90_000) == .told)
        let three = [attempt(1, at: 0, .failed), attempt(2, at: 30_000, .failed), attempt(3, at: 90_000, .notStarted)]
        #expect(retry.next(after: three, nowMilliseconds: 10_000_000) == .gaveUp)
        #expect(retry.next(after: [attempt(1, at: 0, nil)], nowMilliseconds: 89_999) == .running)
        #expect(retry.next(after: [attempt(1, at: 0, nil)], nowMilliseconds: 90_000) == .due(2), "a run cut short by a crash counts as failed")
    }

    @Test("a link sent before a restart works after it when the key comes from a file", arguments: Backend.enabled)
    func linkKeySurvivesRestart(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script("echo \"$TRACKME_LINK\" >> \"$DIR/links.txt\"")
        let keyFile = scratch.path("link.key")
        try "a key shared by every instance, kept across restarts\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        let storage: StorageLocation
        switch backend {
        case .sqlite: storage = .sqlite(path: scratch.path("server.sqlite"))
        case .postgres: storage = .postgres(url: try await PostgresFixture.shared.createDatabase())
        }
        let console: (inout ConsoleConfiguration) -> Void = {
            $0.contactNotifierCommand = notifier
            $0.contactLinkKeyFile = keyFile
        }
        let before = try await TestServer.start(backend, storage: storage, console: console)
        let device = try await Self.enrol(before, "pi-0001", contacts: ["Ben"])
        #expect(try await before.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)
        before.wall.advance(milliseconds: 180_000)
        #expect(try await before.server.escalateToContacts() == 1)
        await before.stop()
        let sent = try #require(scratch.lines("links.txt").first)
        let link = try #require(URL(string: sent))

        let after = try await TestServer.start(backend, storage: storage, console: console)
        let page = try await after.client.send("GET", link.path)
        let confirmed = try await after.client.send("POST", link.path)
        await after.stop()
        #expect(page.status == 200, "\(page.text)")
        #expect(confirmed.status == 200)
    }

    @Test("the link key comes from the systemd credential; a named key file that is missing or short stops the start")
    func linkKeySources() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        var console = ConsoleConfiguration()
        #expect(try console.loadContactLinkKey() == .ephemeral)
        try "0123456789abcdef-from-systemd\n".write(toFile: scratch.path("contact-link-key"), atomically: true, encoding: .utf8)
        console.credentialsDirectory = scratch.directory.path
        #expect(try console.loadContactLinkKey() == .credential)
        #expect(console.contactLinkKey == Array("0123456789abcdef-from-systemd".utf8))
        var missing = ConsoleConfiguration()
        missing.contactLinkKeyFile = scratch.path("absent.key")
        #expect(throws: ServerConfigurationError.self) { try missing.loadContactLinkKey() }
        try "short\n".write(toFile: scratch.path("short.key"), atomically: true, encoding: .utf8)
        var short = ConsoleConfiguration()
        short.contactLinkKeyFile = scratch.path("short.key")
        #expect(throws: ServerConfigurationError.self) { try short.loadContactLinkKey() }
    }

    @Test("under TLS the contacts' links default to https")
    func httpsLinkBase() async throws {
        let fixture = try await ServerTLSTests.Fixture()
        defer { fixture.remove() }
        let (server, group, task, port) = try await ServerTLSTests.start(fixture)
        let base = try await server.contactLinkBase()
        await group.triggerGracefulShutdown()
        try await task.value
        #expect(base == "https://127.0.0.1:\(port)")
    }

    @Test("an alert from a device whose clock is not set is placed by the server's receipt, never in 1970", arguments: Backend.enabled)
    func untrustedDeviceClock(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            // An RTC-less Pi before NTP: wall time near 1970, untrusted; critical at 10 s of
            // uptime, raised at 14 s, sent at 15 s.
            var update = Sample.alert("pi-0001", id: "alert-1")
            let boot = Sample.bootID
            func at(_ seconds: UInt64) -> ReadingTimestamp {
                ReadingTimestamp(
                    monotonicNanoseconds: seconds * 1_000_000_000,
                    bootID: boot,
                    wallClockMilliseconds: Int64(seconds) * 1000,
                    wallClockTrusted: false
                )
            }
            update.alert.firstCritical = at(10)
            update.alert.raised = at(14)
            update.sent = at(15)
            #expect(try await s.postAlert(update, token: device).status == 200)
            let timeline = try await Self.timeline(s, "alert-1", dispatcher: dispatcher)
            let times = Dictionary(
                uniqueKeysWithValues: timeline.compactMap { entry in
                    (entry["event"] as? String).flatMap { event in (entry["at_ms"] as? NSNumber).map { (event, $0.int64Value) } }
                }
            )
            #expect(times["first_critical"] == TestServer.startWall - 5_000)
            #expect(times["raised"] == TestServer.startWall - 1_000)
            #expect(times["delivered"] == TestServer.startWall)
            #expect(Array(timeline.compactMap { $0["event"] as? String }.prefix(3)) == ["first_critical", "raised", "delivered"])
            #expect(timeline.allSatisfy { ($0["at_ms"] as? NSNumber).map { $0.int64Value > TestServer.startWall - 86_400_000 } == true }, "no 1970")
            let critical = try #require(timeline.first { $0["event"] as? String == "first_critical" })
            #expect((critical["time_note"] as? String)?.contains("device clock not set") == true)
            let delivered = try #require(timeline.first { $0["event"] as? String == "delivered" })
            #expect(delivered["time_note"] == nil)
        }
    }
}
