public import Foundation
import Synchronization
public import TrackMeCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the site's local fallback for an alert (siren, SMS modem, phone call).
public protocol LocalFallback: Sendable {
    func run(_ alert: AlertRecord, reason: FallbackReason, contactIndex: Int?) async throws
}

/// A fallback that failed, with what the lane knows about why.
public struct LocalFallbackError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The executable could not be started.
        case launchFailed = "launch_failed"
        /// It ran and exited with a non-zero status (or was killed by a signal).
        case exitStatus = "exit_status"
        /// It ran longer than its time limit and was terminated.
        case timedOut = "timed_out"
        /// The alert could not be encoded for its standard input.
        case encodingFailed = "encoding_failed"
    }

    public var code: Code
    public var executable: String
    public var status: Int32?
    public var message: String

    public var description: String {
        "\(code.rawValue) for \(executable)\(status.map { " (status \($0))" } ?? ""): \(message)"
    }
}

/// Runs an executable with the alert as JSON (the `AlertRecord` wire form, WIRE.md) on its
/// standard input, and `TRACKME_FALLBACK_REASON` (`server_unreachable`, `escalation`,
/// `notify_contact`) and `TRACKME_CONTACT_INDEX` (0, 1, ... for `notify_contact`) in its
/// environment. Success is exit status 0. One that runs longer than `timeLimit` is killed and
/// counts as failed, so a stuck modem script does not pile up processes.
///
/// Note: Foundation starts the child from a Dispatch thread whose signals are blocked, and the
/// child inherits that mask (SIGTERM and SIGINT among them): a fallback script that relies on
/// signals (`trap`, `timeout`) must unblock them itself.
public struct ExecutableFallback: LocalFallback {
    public var executable: URL
    public var arguments: [String]
    /// Added to the agent's own environment.
    public var environment: [String: String]
    public var timeLimit: Duration
    public var clock: any Clock<Duration>

    public init(
        executable: URL,
        arguments: [String] = [],
        environment: [String: String] = [:],
        timeLimit: Duration = .seconds(30),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.timeLimit = timeLimit
        self.clock = clock
    }

    /// The JSON fits in a pipe's buffer (64 KiB on Linux), so it is written before the process
    /// starts: the write never blocks and never meets a reader that has already gone.
    static let maximumInputBytes = 60_000

    public func run(_ alert: AlertRecord, reason: FallbackReason, contactIndex: Int?) async throws {
        let input: Data
        do {
            input = try WireCodec.encode(alert)
        } catch {
            throw LocalFallbackError(code: .encodingFailed, executable: executable.path, status: nil, message: "\(error)")
        }
        guard input.count <= Self.maximumInputBytes else {
            throw LocalFallbackError(
                code: .encodingFailed,
                executable: executable.path,
                status: nil,
                message: "alert JSON is \(input.count) bytes"
            )
        }
        let stdin = Pipe()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env.merge(environment) { _, new in new }
        env["TRACKME_FALLBACK_REASON"] = reason.rawValue
        env["TRACKME_CONTACT_INDEX"] = contactIndex.map(String.init) ?? ""
        process.environment = env
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice

        let handle = RunningProcess(process)
        let clock = self.clock
        let limit = timeLimit
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { finished in continuation.resume(returning: finished.terminationStatus) }
            do {
                try stdin.fileHandleForWriting.write(contentsOf: input)
                try stdin.fileHandleForWriting.close()
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(
                    throwing: LocalFallbackError(code: .launchFailed, executable: executable.path, status: nil, message: "\(error)")
                )
                return
            }
            // Started only once the process runs, so that it cannot miss it.
            handle.startWatchdog(clock: clock, limit: limit)
        }
        if await handle.stopWatchdog() {
            throw LocalFallbackError(code: .timedOut, executable: executable.path, status: status, message: "over \(timeLimit)")
        }
        guard status == 0 else {
            throw LocalFallbackError(code: .exitStatus, executable: executable.path, status: status, message: "fallback failed")
        }
    }
}

/// The one process a fallback run owns, and the watchdog that terminates it at its time limit.
/// (Also the agent's feedback hook's: `package`.)
package final class RunningProcess: Sendable {
    // Process is not Sendable; it is only touched here under the lock and by the owning `run`.
    private struct State: @unchecked Sendable {
        var process: Process
        var watchdog: Task<Bool, Never>?
    }

    private let state: Mutex<State>

    package init(_ process: Process) { state = Mutex(State(process: process)) }

    package func startWatchdog(clock: any Clock<Duration>, limit: Duration) {
        let task = Task { [self] in
            do {
                try await clock.sleep(for: limit, tolerance: nil)
            } catch {
                return false
            }
            return terminateIfRunning()
        }
        state.withLock { $0.watchdog = task }
    }

    /// Stops the watchdog; returns whether it had terminated the process.
    package func stopWatchdog() async -> Bool {
        guard let task = state.withLock({ $0.watchdog }) else { return false }
        task.cancel()
        return await task.value
    }

    private func terminateIfRunning() -> Bool {
        state.withLock { s in
            guard s.process.isRunning else { return false }
            // SIGKILL, not Process.terminate()'s SIGTERM: a child spawned from a Dispatch thread
            // inherits that thread's blocked signal mask (SIGTERM included, seen on Linux), so
            // only a signal that cannot be blocked is sure to stop it.
            return kill(s.process.processIdentifier, SIGKILL) == 0
        }
    }
}
