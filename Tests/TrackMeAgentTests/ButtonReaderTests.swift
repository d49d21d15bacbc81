import CInputShim
import Foundation
import ServiceLifecycle
import Testing
import TrackMeCore

@testable import TrackMeAgent

#if canImport(Glibc)
import Glibc
#endif

/// The button's reader through the C shim. This machine's kernel has no `uinput` (no
/// /dev/uinput, no modules), so the device is a FIFO carrying the kernel's own
/// `struct input_event` bytes, written by the shim's `tm_input_write` (the same call writes to a
/// uinput device): the reader thread, the shim's poll/read and the decoding run unchanged.
@Suite("button reader", .serialized)
struct ButtonReaderTests {
    static let keyPower: UInt16 = 116

    /// A FIFO, and its write end once the reader has opened it.
    static func fifo(_ directory: borrowing TemporaryDirectory) throws -> String {
        let path = directory.file("event0")
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    static func openWriter(_ path: String) -> Int32 {
        // Blocks until the reader thread has the FIFO open for reading.
        open(path, O_WRONLY | O_CLOEXEC)
    }

    static func key(_ fd: Int32, _ value: Int32, code: UInt16 = keyPower) {
        #expect(tm_input_write(fd, UInt16(TM_INPUT_EV_KEY), code, value) == 0)
        #expect(tm_input_write(fd, 0, 0, 0) == 0)  // EV_SYN, as the kernel sends
    }

    @Test("the shim's event is the kernel's struct input_event")
    func eventSize() {
        #expect(tm_input_event_size() == 24)
    }

    @Test("presses and releases of the configured key arrive; other keys and autorepeat do not")
    func readsKey() async throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fifo(directory)
        var reader = ButtonReader(path: path, keyCode: Int(Self.keyPower), logger: quietLogger)
        reader.pollInterval = .milliseconds(50)
        let events = reader.events()
        let fd = Self.openWriter(path)
        try #require(fd >= 0)
        defer { close(fd) }
        Self.key(fd, 1, code: 28)  // KEY_ENTER: not ours
        Self.key(fd, 1)
        Self.key(fd, 2)  // autorepeat
        Self.key(fd, 0)
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == .down)
        #expect(await iterator.next() == .up)
    }

    @Test("a missing device is reported, and the reader opens it once it appears")
    func missingDevice() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("event7")
        var reader = ButtonReader(path: path, keyCode: Int(Self.keyPower), logger: quietLogger)
        reader.pollInterval = .milliseconds(50)
        reader.reopenInterval = .milliseconds(100)
        let events = reader.events()
        var iterator = events.makeAsyncIterator()
        guard case .unavailable(let message) = await iterator.next() else {
            Issue.record("no unavailable event")
            return
        }
        #expect(message.contains(path))
        #expect(mkfifo(path, 0o600) == 0)
        let fd = Self.openWriter(path)
        defer { close(fd) }
        Self.key(fd, 1)
        #expect(await iterator.next() == .down)
    }

    @Test("the agent: a key held past the long-press time raises a manual SOS; a short press cancels its countdown")
    func agentRaisesAndCancels() async throws {
        let directory = try TemporaryDirectory()
        let path = try Self.fifo(directory)
        let configuration = try WearerDeviceTests.configuration(
            directory,
            extra: "button: {device: \(path), key_code: 116, long_press_seconds: 0.5}\nsos: {countdown_seconds: 60}"
        )
        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger)
        let group = ServiceGroup(services: parts.services, logger: quietLogger)
        let running = Task { try await group.run() }
        defer { running.cancel() }
        let fd = Self.openWriter(path)
        try #require(fd >= 0)
        defer { close(fd) }

        Self.key(fd, 1)  // held: the SOS comes while it is still held
        let raised = try await Self.poll(parts.control) { $0.alert != nil }
        #expect(raised.alert?.kind == .manual)
        #expect(raised.alert?.state == .pending)
        #expect(raised.feedback == .countdown)
        Self.key(fd, 0)

        Self.key(fd, 1)
        Self.key(fd, 0)
        let cancelled = try await Self.poll(parts.control) { $0.alert == nil }
        #expect(cancelled.feedback == .idle)
        await group.triggerGracefulShutdown()
    }

    /// Polls the control's status (as the end-to-end test polls the agent) until `done`.
    static func poll(_ control: PipelineControl, until done: (AgentStatus) -> Bool) async throws -> AgentStatus {
        var status = await control.status()
        try await eventually("the status shows it", within: .seconds(60), every: .milliseconds(50)) {
            status = await control.status()
            return done(status)
        }
        return status
    }
}
