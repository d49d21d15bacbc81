import Foundation
import SystemPackage
import Testing
import TrackMeCore
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

@Suite(.timeLimit(.minutes(10)))
struct ProcessRunnerTests {
    private func shell(
        _ script: String,
        environment: ChildProcess.Environment = .inherited(adding: [:]),
        input: ChildProcess.Input = .none
    )
        -> ChildProcess
    {
        ChildProcess("/bin/sh", arguments: ["-c", script], environment: environment, input: input, output: .captured(limit: 1 << 20))
    }

    private func temporaryFile() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("runner-\(UUID().uuidString)").path
    }

    /// A process is gone when it no longer exists or is a zombie waiting for init to reap it.
    private func isGone(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    private func readPID(_ path: String) -> pid_t? {
        (try? String(contentsOfFile: path, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    @Test func exitStatusAndBothStreamsAreReported() async {
        let result = await ProcessRunner.run(shell("echo out; echo err >&2; exit 3"))
        #expect(result.outcome == .exited(3))
        #expect(result.standardOutputText == "out\n")
        #expect(result.standardErrorText == "err\n")
    }

    @Test func aSignalIsReportedAsTheSignal() async {
        let result = await ProcessRunner.run(shell("kill -9 $$"))
        #expect(result.outcome == .signalled(SIGKILL))
    }

    @Test func anExactEnvironmentHoldsNothingOfTheCallers() async throws {
        setenv("TRACKME_RUNNER_SECRET", "do-not-leak", 1)
        defer { unsetenv("TRACKME_RUNNER_SECRET") }
        let child = ChildProcess("/usr/bin/env", environment: .exactly(["TRACKME_GIVEN": "yes"]), output: .captured(limit: 4096))
        let result = await ProcessRunner.run(child)
        #expect(result.outcome == .exited(0))
        #expect(result.standardOutputText == "TRACKME_GIVEN=yes\n")
    }

    @Test func anInheritedEnvironmentKeepsTheCallersAndAddsTheGiven() async {
        setenv("TRACKME_RUNNER_INHERITED", "kept", 1)
        defer { unsetenv("TRACKME_RUNNER_INHERITED") }
        let result = await ProcessRunner.run(
            shell("printf '%s %s' \"$TRACKME_RUNNER_INHERITED\" \"$TRACKME_ADDED\"", environment: .inherited(adding: ["TRACKME_ADDED": "new"]))
        )
        #expect(result.standardOutputText == "kept new")
    }

    @Test func inputBytesReachTheChildWhole() async {
        let bytes = (0..<ChildProcess.maximumInputBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let child = ChildProcess("/bin/cat", input: .bytes(bytes), output: .captured(limit: 1 << 20))
        let result = await ProcessRunner.run(child)
        #expect(result.outcome == .exited(0))
        #expect(result.standardOutput == bytes)
    }

    /// A child that exits without reading its input must not raise SIGPIPE in the caller (that
    /// would kill the agent or the server): the bytes are in the pipe before the child starts.
    @Test func aChildThatNeverReadsItsInputCostsTheCallerNothing() async {
        for _ in 0..<20 {
            let child = ChildProcess("/bin/true", input: .bytes(Array(repeating: 7, count: ChildProcess.maximumInputBytes)))
            #expect(await ProcessRunner.run(child).outcome == .exited(0))
        }
    }

    @Test func inputOverAPipesWorthIsRefusedBeforeStarting() async {
        let child = ChildProcess("/bin/cat", input: .bytes(Array(repeating: 1, count: ChildProcess.maximumInputBytes + 1)))
        guard case .notStarted(let reason) = await ProcessRunner.run(child).outcome else {
            Issue.record("an oversized input started the child")
            return
        }
        #expect(reason.contains("standard input"))
    }

    @Test func aMissingProgramIsNotStarted() async {
        let outcome = await ProcessRunner.run(ChildProcess("/nonexistent/trackme-notifier")).outcome
        guard case .notStarted = outcome else {
            Issue.record("expected notStarted, got \(outcome)")
            return
        }
    }

    @Test func outputOverItsLimitIsAnErrorNotACut() async {
        let child = ChildProcess("/bin/sh", arguments: ["-c", "head -c 5000 /dev/zero"], output: .captured(limit: 100))
        guard case .notStarted = await ProcessRunner.run(child).outcome else {
            Issue.record("output over the limit was accepted")
            return
        }
    }

    /// At the time limit on the injected clock the child's whole group is killed: a script's own
    /// children (here a `sleep`) do not live on.
    @Test func theTimeLimitKillsTheWholeGroupOnTheInjectedClock() async throws {
        let clock = VirtualClock()
        let pidFile = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        let child = ChildProcess("/bin/sh", arguments: ["-c", "sleep 600 & echo $! > \(pidFile); wait"])
        let run = Task { await ProcessRunner.run(child, timeLimit: .seconds(30), clock: clock) }
        try await eventually("the script started its sleep", within: .seconds(60)) { readPID(pidFile) != nil }
        let sleeper = try #require(readPID(pidFile))
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(29))
        #expect(!isGone(sleeper))
        clock.advance(by: .seconds(1))
        #expect(await run.value.outcome == .timedOut)
        try await eventually("the script's sleep was killed with it", within: .seconds(60)) { isGone(sleeper) }
    }

    @Test func aChildThatEndsInTimeIsNotKilled() async {
        let clock = VirtualClock()
        let result = await ProcessRunner.run(shell("exit 0"), timeLimit: .seconds(30), clock: clock)
        #expect(result.outcome == .exited(0))
    }

    @Test func cancellingTheCallerStopsTheChild() async throws {
        let pidFile = temporaryFile()
        defer { try? FileManager.default.removeItem(atPath: pidFile) }
        let child = ChildProcess("/bin/sh", arguments: ["-c", "echo $$ > \(pidFile); exec sleep 600"])
        let run = Task { await ProcessRunner.run(child, timeLimit: .seconds(3600)) }
        try await eventually("the child started", within: .seconds(60)) { readPID(pidFile) != nil }
        let pid = try #require(readPID(pidFile))
        run.cancel()
        #expect(await run.value.outcome == .stopped)
        try await eventually("the child was killed", within: .seconds(60)) { isGone(pid) }
    }
}
