import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

#if canImport(Glibc)
import Glibc
#endif

/// The wearer's feedback (issue 19): which state each pipeline event shows, an LED-class device
/// laid out as the kernel lays it out, and a hook run as a real child process.
@Suite("feedback")
struct FeedbackTests {
    static let t0 = ReadingTimestamp(monotonicNanoseconds: 1_000_000_000, bootID: "fb", wallClockMilliseconds: nil, wallClockTrusted: false)

    static func record(_ state: AlertState, id: String = "a-1") -> AlertRecord {
        AlertRecord(id: id, deviceID: "pi-0042", kind: .manual, state: state, firstCritical: t0, raised: state == .pending ? nil : t0)
    }

    @Test("countdown, raised, sent, acknowledged, resolved: each shows once, in order, then idle")
    func alertLifecycle() {
        var m = FeedbackMachine(resolvedShownFor: .seconds(30))
        #expect(m.receive(.engine(.startCountdown(Self.record(.pending), deadline: Self.t0)), now: .zero) == .countdown)
        #expect(m.receive(.tick, now: .seconds(1)) == nil)
        #expect(m.receive(.engine(.raise(Self.record(.raised))), now: .seconds(5)) == .raised)
        #expect(
            m.receive(.sent(AlertUpdate(alert: Self.record(.raised), updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(5)) == .sent
        )
        #expect(m.receive(.engine(.update(Self.record(.delivered))), now: .seconds(5)) == nil, "already shown")
        #expect(m.receive(.acknowledgement(alertID: "a-1", acknowledged: true), now: .seconds(20)) == .acknowledged)
        #expect(m.receive(.engine(.update(Self.record(.acknowledged))), now: .seconds(20)) == nil)
        #expect(m.receive(.engine(.update(Self.record(.delivered))), now: .seconds(21)) == nil, "a late delivered does not undo acknowledged")
        #expect(m.receive(.engine(.update(Self.record(.resolved))), now: .seconds(60)) == .resolved)
        #expect(m.receive(.tick, now: .seconds(89)) == nil)
        #expect(m.receive(.tick, now: .seconds(90)) == .idle)
    }

    @Test("an explicit resolve from the server (issue 18's hook) shows resolved")
    func resolvedFromServer() {
        var m = FeedbackMachine()
        _ = m.receive(.engine(.raise(Self.record(.raised))), now: .zero)
        #expect(m.receive(.resolved(alertID: "a-1"), now: .seconds(3)) == .resolved)
        #expect(m.receive(.resolved(alertID: "other"), now: .seconds(4)) == nil)
    }

    @Test("the engine's own actions drive it: a server resolve reaching the engine (issue 18) shows resolved")
    func fromTheEngine() {
        var engine = SOSEngine(
            deviceID: "pi-0042",
            profile: PersonProfile(name: "Ada", age: 67),
            ids: SequentialAlertIDs(prefix: "e"),
            now: Self.t0
        )
        var m = FeedbackMachine()
        var shown: [FeedbackState] = []
        func feed(_ actions: [SOSAction], at seconds: Int64) {
            for action in actions {
                if let state = m.receive(.engine(action), now: .seconds(seconds)) { shown.append(state) }
            }
        }
        func at(_ seconds: Int64) -> ReadingTimestamp {
            ReadingTimestamp(
                monotonicNanoseconds: UInt64(1 + seconds) * 1_000_000_000,
                bootID: "fb",
                wallClockMilliseconds: nil,
                wallClockTrusted: false
            )
        }
        feed(engine.receive(.manualSOS, now: at(0)), at: 0)
        feed(engine.receive(.tick, now: at(6)), at: 6)
        feed(engine.receive(.delivered(alertID: "e-1"), now: at(7)), at: 7)
        feed(engine.receive(.acknowledged(alertID: "e-1"), now: at(20)), at: 20)
        feed(engine.receive(.resolved(alertID: "e-1"), now: at(60)), at: 60)
        #expect(shown == [.countdown, .raised, .sent, .acknowledged, .resolved])
    }

    @Test("a cancelled countdown goes back to idle; an unacknowledged escalation step reminds")
    func cancelAndRemind() {
        var m = FeedbackMachine()
        _ = m.receive(.engine(.startCountdown(Self.record(.pending), deadline: Self.t0)), now: .zero)
        var cancelled = Self.record(.cancelled)
        cancelled.cancelReason = .accidental
        #expect(m.receive(.engine(.cancelled(cancelled)), now: .seconds(1)) == .idle)
        _ = m.receive(.engine(.raise(Self.record(.raised, id: "a-2"))), now: .seconds(10))
        #expect(m.receive(.acknowledgement(alertID: "a-2", acknowledged: false), now: .seconds(70)) == .raised, "said again")
        #expect(m.receive(.acknowledgement(alertID: "a-1", acknowledged: false), now: .seconds(71)) == nil, "not for another alert")
    }

    @Test("a discreet alert shows nothing from its raise to its end; the next alert shows as usual")
    func discreetShowsNothing() {
        var m = FeedbackMachine(resolvedShownFor: .seconds(30))
        #expect(m.receive(.batteryLow(true), now: .zero) == .batteryLow)
        var raised = Self.record(.raised, id: "d-1")
        raised.reason = AlertRecord.discreetReason
        #expect(m.receive(.engine(.raise(raised)), now: .seconds(1)) == nil)
        #expect(
            m.receive(.sent(AlertUpdate(alert: raised, updateSequence: 0, type: .raised, sent: Self.t0)), now: .seconds(2)) == nil
        )
        #expect(m.receive(.acknowledgement(alertID: "d-1", acknowledged: false), now: .seconds(30)) == nil, "no reminder either")
        #expect(m.receive(.acknowledgement(alertID: "d-1", acknowledged: true), now: .seconds(40)) == nil)
        var resolved = raised
        resolved.state = .resolved
        #expect(m.receive(.engine(.update(resolved)), now: .seconds(60)) == nil)
        #expect(m.shown == .batteryLow)
        #expect(m.receive(.engine(.startCountdown(Self.record(.pending, id: "a-2"), deadline: Self.t0)), now: .seconds(70)) == .countdown)
    }

    @Test("a low battery shows when no alert does, and gives way to an alert")
    func batteryLow() {
        var m = FeedbackMachine()
        #expect(m.receive(.batteryLow(true), now: .zero) == .batteryLow)
        #expect(m.receive(.batteryLow(true), now: .seconds(1)) == nil)
        #expect(m.receive(.engine(.startCountdown(Self.record(.pending), deadline: Self.t0)), now: .seconds(2)) == .countdown)
        var cancelled = Self.record(.cancelled)
        cancelled.cancelReason = .iAmSafe
        #expect(m.receive(.engine(.cancelled(cancelled)), now: .seconds(3)) == .batteryLow)
        #expect(m.receive(.batteryLow(false), now: .seconds(4)) == .idle)
    }

    @Test("LED patterns parse from the configuration's spelling", arguments: ["off", "on", "blink 100 900"])
    func patternText(text: String) throws {
        #expect(try #require(LEDPattern(text: text)).text == text)
    }

    @Test("bad LED patterns are refused", arguments: ["", "blink", "blink 0 10", "blink 10", "on 1", "flash 1 2", "blink 10 99999"])
    func badPattern(text: String) {
        #expect(LEDPattern(text: text) == nil)
    }

    // MARK: - The LED against a directory laid out like /sys/class/leds/NAME

    /// `/sys/class/leds/NAME` as the kernel lays it out: brightness, max_brightness, trigger,
    /// and (as the timer trigger makes them) delay_on and delay_off.
    static func fakeLED(in directory: borrowing TemporaryDirectory, timerFiles: Bool = true) throws -> String {
        let led = directory.file("trackme-status")
        try FileManager.default.createDirectory(atPath: led, withIntermediateDirectories: true)
        var files = ["brightness": "0\n", "max_brightness": "255\n", "trigger": "[none] timer heartbeat\n"]
        if timerFiles {
            files["delay_on"] = "500\n"
            files["delay_off"] = "500\n"
        }
        for (name, content) in files { try content.write(toFile: led + "/" + name, atomically: false, encoding: .utf8) }
        return led
    }

    static func read(_ led: String, _ file: String) throws -> String {
        try String(contentsOfFile: led + "/" + file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("each pattern writes what the kernel's LED class expects")
    func ledWrites() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fakeLED(in: directory)
        let led = LEDClassDevice(path)
        try led.show(.blink(onMilliseconds: 100, offMilliseconds: 900))
        #expect(try Self.read(path, "trigger") == "timer")
        #expect(try Self.read(path, "delay_on") == "100")
        #expect(try Self.read(path, "delay_off") == "900")
        try led.show(.on)
        #expect(try Self.read(path, "trigger") == "none")
        #expect(try Self.read(path, "brightness") == "255", "on is max_brightness")
        try led.show(.off)
        #expect(try Self.read(path, "brightness") == "0")
        #expect(LEDClassDevice("status").directory == "/sys/class/leds/status")
    }

    @Test("a missing LED file is an error naming it; nothing is created")
    func ledMissing() throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fakeLED(in: directory, timerFiles: false)
        #expect {
            try LEDClassDevice(path).show(.blink(onMilliseconds: 100, offMilliseconds: 100))
        } throws: { error in
            guard let error = error as? FeedbackOutputError else { return false }
            return error.code == .ledWrite && error.path.hasSuffix("/delay_on")
        }
        #expect(!FileManager.default.fileExists(atPath: path + "/delay_on"))
    }

    // MARK: - The hook as a real child process

    static func script(_ directory: borrowing TemporaryDirectory, _ name: String, _ body: String) throws -> String {
        let path = directory.file(name)
        try ("#!/bin/sh\n" + body).write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    @Test("the hook gets the state as argument and in TRACKME_FEEDBACK; a failing one is an error")
    func hookRuns() async throws {
        let directory = try TemporaryDirectory()
        let out = directory.file("out")
        let ok = try Self.script(directory, "ok.sh", "echo \"$1 $TRACKME_FEEDBACK\" >> \(out)\n")
        try await FeedbackHook(command: [ok]).run(.acknowledged)
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "acknowledged acknowledged\n")
        let failing = try Self.script(directory, "fail.sh", "exit 3\n")
        await #expect(throws: FeedbackOutputError.self) { try await FeedbackHook(command: [failing]).run(.sent) }
        await #expect(throws: FeedbackOutputError.self) { try await FeedbackHook(command: [directory.file("missing")]).run(.sent) }
    }

    @Test("a hook that hangs is killed at its time limit")
    func hookHangs() async throws {
        let directory = try TemporaryDirectory()
        let pidFile = directory.file("pid")
        let hang = try Self.script(directory, "hang.sh", "echo $$ > \(pidFile)\nexec sleep 600\n")
        let started = ContinuousClock.now
        do {
            try await FeedbackHook(command: [hang], timeLimit: .milliseconds(500)).run(.countdown)
            Issue.record("a hung hook returned success")
        } catch {
            #expect(error.code == .hookTimedOut)
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        let pid = try #require(Int32(try Self.read(directory.path, "pid")))
        #expect(kill(pid, 0) == -1 && errno == ESRCH, "the hung child is gone")
    }

    @Test("a hook that hangs delays neither the LED nor the decision path")
    func hangingHookDoesNotDelay() async throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fakeLED(in: directory)
        let started = directory.file("started")
        let hang = try Self.script(directory, "hang.sh", "echo \"$1\" >> \(started)\nexec sleep 600\n")
        let driver = FeedbackDriver(clock: ContinuousClock())
        let (reports, sink) = AsyncStream.makeStream(of: FeedbackService.Report.self)
        let service = FeedbackService(
            driver: driver,
            led: LEDClassDevice(path),
            hook: FeedbackHook(command: [hang], timeLimit: .seconds(600)),
            clock: ContinuousClock(),
            logger: quietLogger,
            report: { sink.yield($0) }
        )
        let task = Task { await service.run() }
        defer { task.cancel() }
        var iterator = reports.makeAsyncIterator()
        #expect(await iterator.next() == .led(.idle, error: nil), "the LED starts from what is true now")

        driver.receive(.engine(.startCountdown(Self.record(.pending), deadline: Self.t0)))  // the hook starts and hangs
        #expect(await iterator.next() == .led(.countdown, error: nil))
        driver.receive(.engine(.raise(Self.record(.raised))))
        #expect(await iterator.next() == .led(.raised, error: nil), "the LED goes on while the hook hangs")
        #expect(try Self.read(path, "delay_on") == "250")
        driver.receive(.acknowledgement(alertID: "a-1", acknowledged: true))
        #expect(await iterator.next() == .led(.acknowledged, error: nil))
        #expect(try Self.read(path, "brightness") == "255")
    }
}
