import EdgeDispatch
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore

/// A transport that fails its first `failures` sends (or all of them), counting attempts.
actor ScriptedTransport: AlertTransport {
    struct Refused: Error {}

    private var remainingFailures: Int
    private(set) var attempts: [AlertUpdate] = []

    init(failures: Int = .max) {
        remainingFailures = failures
    }

    func send(_ update: AlertUpdate) async throws {
        attempts.append(update)
        if remainingFailures > 0 {
            remainingFailures -= 1
            throw Refused()
        }
    }
}

/// A transport whose sends end only when released, cancelled or not: a POST on a blocking thread
/// to a server that took the connection and never answers.
final class UnansweredTransport: AlertTransport, Sendable {
    private let state = Mutex<(waiting: [CheckedContinuation<Void, Never>], ended: Bool)>(([], false))

    var ended: Bool { state.withLock { $0.ended } }

    func send(_ update: AlertUpdate) async throws {
        await withCheckedContinuation { continuation in state.withLock { $0.waiting.append(continuation) } }
        state.withLock { $0.ended = true }
        throw ScriptedTransport.Refused()
    }

    func release() {
        let waiting = state.withLock { state in
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}

/// A lane on a virtual clock, running in its own task for the test's duration.
struct LaneHarness {
    let clock = VirtualClock()
    let lane: DispatchLane
    let transport: ScriptedTransport
    var events: AsyncStream<DispatchLaneEvent>.Iterator
    /// `sendFailed` events seen so far, whether a `next` matched them or skipped them.
    var failuresSeen = 0
    let task: Task<Void, Never>

    init(
        transport: ScriptedTransport,
        fallback: (any LocalFallback)?,
        undelivered: [AlertUpdate] = [],
        delivered: (@Sendable (AlertUpdate) -> Void)? = nil
    ) {
        self.transport = transport
        let clock = self.clock
        lane = DispatchLane(
            transport: transport,
            fallback: fallback,
            clock: clock,
            timestamp: {
                ReadingTimestamp(
                    monotonicNanoseconds: UInt64(clock.now.offset.components.seconds) * 1_000_000_000,
                    bootID: "lane-test",
                    wallClockMilliseconds: nil,
                    wallClockTrusted: false
                )
            },
            undelivered: undelivered,
            delivered: delivered,
            logger: Logger(label: "test.dispatch")
        )
        events = lane.events.makeAsyncIterator()
        let lane = self.lane
        task = Task { await lane.run() }
    }

    /// Waits for the next event that matches (and returns it), skipping others.
    mutating func next(_ matches: (DispatchLaneEvent) -> Bool) async -> DispatchLaneEvent? {
        while let event = await events.next() {
            if case .sendFailed = event { failuresSeen += 1 }
            if matches(event) { return event }
        }
        return nil
    }

    /// Waits until `count` sends have failed in all.
    mutating func waitForFailures(_ count: Int) async {
        while failuresSeen < count {
            guard await next({ if case .sendFailed = $0 { true } else { false } }) != nil else { return }
        }
    }

    func advance(steps: Int) async { await advanceLane(clock, steps: steps) }

    func stop() async {
        task.cancel()
        await task.value
    }
}

/// Advances virtual time in 250 ms steps, each once the lane's tick loop sleeps again.
func advanceLane(_ clock: VirtualClock, steps: Int) async {
    for _ in 0..<steps {
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(250))
    }
}

/// A real shell script as the local fallback: it writes its stdin and environment to files.
struct FallbackScript {
    let directory: URL
    let script: URL
    var output: URL { directory.appendingPathComponent("alert.json") }
    var reason: URL { directory.appendingPathComponent("reason.txt") }

    init(exitStatus: Int = 0) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-fallback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        script = directory.appendingPathComponent("fallback.sh")
        let text = """
            #!/bin/sh
            cat > "$FALLBACK_OUT/alert.json"
            printf '%s %s' "$TRACKME_FALLBACK_REASON" "$TRACKME_CONTACT_INDEX" > "$FALLBACK_OUT/reason.txt"
            exit \(exitStatus)

            """
        try text.write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
    }

    var fallback: ExecutableFallback {
        ExecutableFallback(executable: script, environment: ["FALLBACK_OUT": directory.path])
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

@Suite(.timeLimit(.minutes(10))) struct DispatchLaneTests {
    static let alert = AlertRecord(
        id: "6b0f7a43-1f2e-4c55-9a61-0d3e8f2b7c10",
        deviceID: "pi-0042",
        kind: .noPulse,
        state: .raised,
        firstCritical: ReadingTimestamp(monotonicNanoseconds: 12_000_000_000, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false),
        raised: ReadingTimestamp(monotonicNanoseconds: 12_000_000_000, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false),
        triggeringReadings: [
            TimedHeartRate(
                reading: HeartRateReading(bpm: 0, contact: .detected),
                timestamp: ReadingTimestamp(monotonicNanoseconds: 11_000_000_000, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false)
            )
        ]
    )

    @Test func acceptedAlertIsReportedDelivered() async throws {
        var h = LaneHarness(transport: ScriptedTransport(failures: 0), fallback: nil)
        await h.lane.submit(.raise(Self.alert))
        let delivered = await h.next { if case .delivered = $0 { true } else { false } }
        #expect(delivered == .delivered(alertID: Self.alert.id))
        let attempts = await h.transport.attempts
        #expect(attempts.count == 1)
        #expect(attempts.first?.type == .raised)
        #expect(attempts.first?.alert == Self.alert)
        await h.stop()
    }

    @Test func unreachableServerRunsTheRealFallbackAtOnceAndKeepsRetryingEverySecond() async throws {
        let script = try FallbackScript()
        defer { script.remove() }
        var h = LaneHarness(transport: ScriptedTransport(), fallback: script.fallback)
        await h.lane.submit(.raise(Self.alert))

        let ran = await h.next { if case .fallbackSucceeded = $0 { true } else { false } }
        #expect(ran == .fallbackSucceeded(alertID: Self.alert.id, reason: .serverUnreachable))
        let json = try Data(contentsOf: script.output)
        #expect(try WireCodec.decode(AlertRecord.self, from: json) == Self.alert)
        #expect(try String(contentsOf: script.reason, encoding: .utf8) == "server_unreachable ")
        #expect(await h.transport.attempts.count == 1)

        // No retry before a second has passed; then one per second.
        await h.advance(steps: 3)
        #expect(await h.transport.attempts.count == 1)
        for expected in 2...4 {
            await h.advance(steps: 1)
            await h.waitForFailures(expected)
            #expect(await h.transport.attempts.count == expected)
            await h.advance(steps: 3)
        }
        #expect(await h.transport.attempts.allSatisfy { $0.updateSequence == 0 && $0.type == .raised })
        await h.stop()
    }

    @Test func failingFallbackIsReportedAndDoesNotStopTheRetries() async throws {
        let script = try FallbackScript(exitStatus: 3)
        defer { script.remove() }
        var h = LaneHarness(transport: ScriptedTransport(failures: 2), fallback: script.fallback)
        await h.lane.submit(.raise(Self.alert))
        let failed = await h.next { if case .fallbackFailed = $0 { true } else { false } }
        guard case .fallbackFailed(let id, let reason, let error) = failed else {
            Issue.record("no fallback failure reported")
            return
        }
        #expect(id == Self.alert.id)
        #expect(reason == .serverUnreachable)
        #expect(error.contains("status 3"))
        // The retries go on: the server comes back on the third attempt, two seconds later.
        await h.waitForFailures(1)
        await h.advance(steps: 4)
        await h.waitForFailures(2)
        await h.advance(steps: 4)
        let delivered = await h.next { if case .delivered = $0 { true } else { false } }
        #expect(delivered == .delivered(alertID: Self.alert.id))
        #expect(await h.transport.attempts.count == 3)
        await h.stop()
    }

    @Test func missingFallbackExecutableIsALaunchFailure() async throws {
        let missing = ExecutableFallback(executable: URL(fileURLWithPath: "/nonexistent/trackme-fallback"))
        var h = LaneHarness(transport: ScriptedTransport(), fallback: missing)
        await h.lane.submit(.raise(Self.alert))
        let failed = await h.next { if case .fallbackFailed = $0 { true } else { false } }
        guard case .fallbackFailed(_, _, let error) = failed else {
            Issue.record("no fallback failure reported")
            return
        }
        #expect(error.contains("launch_failed"))
        await h.stop()
    }

    /// The lane is the one sender: a raise journaled before a restart and never delivered is
    /// handed to it at start, sent once, recorded delivered before the rules hear of it.
    @Test func anUndeliveredUpdateFromTheJournalIsSentAtStartAndRecorded() async throws {
        let raise = AlertUpdate(alert: Self.alert, updateSequence: 0, type: .raised, sent: Self.alert.firstCritical)
        let recorded = Mutex<[AlertUpdate]>([])
        var h = LaneHarness(
            transport: ScriptedTransport(failures: 1),
            fallback: nil,
            undelivered: [raise],
            delivered: { update in recorded.withLock { $0.append(update) } }
        )
        #expect(await h.lane.queuedUpdates == [raise])
        // Sent as the lane starts, without a submit; the retry a second after the failure.
        await h.waitForFailures(1)
        await h.advance(steps: 4)
        let delivered = await h.next { if case .delivered = $0 { true } else { false } }
        #expect(delivered == .delivered(alertID: Self.alert.id))
        #expect(recorded.withLock { $0 } == [raise])
        #expect(await h.transport.attempts == [raise, raise], "retried after the failure, then never again")
        #expect(await h.lane.queuedUpdates.isEmpty)
        await h.stop()
    }

    @Test func aSendThatNeverAnswersFailsAtTheSendTimeoutAndTheFallbackRunsWithoutWaitingForIt() async throws {
        let script = try FallbackScript()
        defer { script.remove() }
        let clock = VirtualClock()
        let transport = UnansweredTransport()
        let lane = DispatchLane(
            transport: transport,
            fallback: script.fallback,
            clock: clock,
            timestamp: {
                ReadingTimestamp(monotonicNanoseconds: 0, bootID: "lane-test", wallClockMilliseconds: nil, wallClockTrusted: false)
            },
            logger: Logger(label: "test.dispatch")
        )
        var events = lane.events.makeAsyncIterator()
        let running = Task { await lane.run() }
        // What ends the sends if nothing else does: a lane that waits for them fails instead of
        // hanging the suite.
        let release = Task.detached {
            try? await ContinuousClock().sleep(for: .seconds(20))
            transport.release()
        }
        await lane.submit(.raise(Self.alert))
        await advanceLane(clock, steps: 20)  // 5 s, past the 3 s send timeout
        var failure: String?
        var fallbackRan = false
        while failure == nil || !fallbackRan, let event = await events.next() {
            switch event {
            case .sendFailed(_, let error) where failure == nil: failure = error
            case .fallbackSucceeded(Self.alert.id, .serverUnreachable): fallbackRan = true
            default: break
            }
        }
        #expect(failure?.contains("no answer within") == true, "\(failure ?? "no failure")")
        #expect(fallbackRan)
        #expect(!transport.ended, "the lane learnt of the failure only once the send had ended")
        release.cancel()
        transport.release()
        running.cancel()
        await running.value
    }
}

@Suite(.timeLimit(.minutes(10))) struct ExecutableFallbackTests {
    @Test func stuckFallbackIsTerminatedAtItsTimeLimit() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-stuck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let script = directory.appendingPathComponent("stuck.sh")
        try "#!/bin/sh\nexec sleep 600\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)

        let clock = VirtualClock()
        let fallback = ExecutableFallback(executable: script, timeLimit: .seconds(30), clock: clock)
        let run = Task { try await fallback.run(DispatchLaneTests.alert, reason: .escalation, contactIndex: nil) }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(30))
        do {
            try await run.value
            Issue.record("a stuck fallback must fail")
        } catch let error as LocalFallbackError {
            #expect(error.code == .timedOut)
        }
    }

    @Test func successfulFallbackGetsTheContactIndex() async throws {
        let script = try FallbackScript()
        defer { script.remove() }
        try await script.fallback.run(DispatchLaneTests.alert, reason: .notifyContact, contactIndex: 2)
        #expect(try String(contentsOf: script.reason, encoding: .utf8) == "notify_contact 2")
        let record = try WireCodec.decode(AlertRecord.self, from: try Data(contentsOf: script.output))
        #expect(record == DispatchLaneTests.alert)
    }
}
