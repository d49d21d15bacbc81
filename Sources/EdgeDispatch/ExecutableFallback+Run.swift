import Foundation
import SystemPackage
public import TrackMeCore
import TrackMeSystem

// The fallback's run apart from its settings: the configuration (and its fuzzer) reads the
// settings without the process runner.
extension ExecutableFallback: LocalFallback {
    public func run(_ alert: AlertRecord, reason: FallbackReason, contactIndex: Int?) async throws {
        let input: Data
        do {
            input = try WireCodec.encode(alert)
        } catch {
            throw LocalFallbackError(code: .encodingFailed, executable: executable.path, status: nil, message: "\(error)")
        }
        // The runner's limit (what a pipe holds before the child starts), checked here so that an
        // oversized alert is reported as the encoding problem it is.
        guard input.count <= ChildProcess.maximumInputBytes else {
            throw LocalFallbackError(
                code: .encodingFailed,
                executable: executable.path,
                status: nil,
                message: "alert JSON is \(input.count) bytes"
            )
        }
        let child = ChildProcess(
            FilePath(executable.path),
            arguments: arguments,
            environment: .inherited(
                adding: environment.merging([
                    "TRACKME_FALLBACK_REASON": reason.rawValue, "TRACKME_CONTACT_INDEX": contactIndex.map(String.init) ?? "",
                    "TRACKME_DISCREET": alert.isDiscreet ? "1" : "0",
                ]) { _, new in new }
            ),
            input: .bytes(Array(input)),
            output: .discarded
        )
        switch await ProcessRunner.run(child, timeLimit: timeLimit, clock: clock).outcome {
        case .exited(0):
            return
        case .exited(let status):
            throw LocalFallbackError(code: .exitStatus, executable: executable.path, status: status, message: "fallback failed")
        case .signalled(let signal):
            throw LocalFallbackError(code: .exitStatus, executable: executable.path, status: signal, message: "killed by signal \(signal)")
        case .timedOut:
            throw LocalFallbackError(code: .timedOut, executable: executable.path, status: nil, message: "over \(timeLimit)")
        case .stopped:
            throw LocalFallbackError(code: .exitStatus, executable: executable.path, status: nil, message: "killed: the agent is stopping")
        case .notStarted(let reason):
            throw LocalFallbackError(code: .launchFailed, executable: executable.path, status: nil, message: reason)
        }
    }
}
