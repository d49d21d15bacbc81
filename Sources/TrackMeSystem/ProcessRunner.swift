import Subprocess
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process to run once: what to start, with what, and where its output goes.
public struct ChildProcess: Sendable {
    public enum Environment: Sendable, Hashable {
        /// Exactly these variables and nothing of the caller's (a notifier must not see the
        /// server's admin token or database password).
        case exactly([String: String])
        /// The caller's environment with these set on top.
        case inherited(adding: [String: String])
    }

    public enum Input: Sendable, Hashable {
        /// `/dev/null`.
        case none
        /// These bytes, then end of file. At most `maximumInputBytes`: they are written into the
        /// pipe before the child starts, so the write never blocks and never meets a reader that
        /// has already gone (which would raise SIGPIPE in the caller).
        case bytes([UInt8])
    }

    public enum Output: Sendable, Hashable {
        /// `/dev/null`.
        case discarded
        /// The caller's own standard output and error (the journal, for a service).
        case inherited
        /// Kept and returned, up to `limit` bytes of each stream (more is an error, not a cut).
        case captured(limit: Int)
    }

    /// Less than a pipe's buffer on Linux (64 KiB).
    public static let maximumInputBytes = 60_000

    public var executable: FilePath
    public var arguments: [String]
    public var environment: Environment
    public var input: Input
    public var output: Output
    /// The child leads a process group of its own, and a kill reaches the whole group: a shell
    /// script's `sleep` or `curl` dies with it instead of living on with the pipes held open.
    public var ownProcessGroup: Bool

    public init(
        _ executable: FilePath,
        arguments: [String] = [],
        environment: Environment = .inherited(adding: [:]),
        input: Input = .none,
        output: Output = .discarded,
        ownProcessGroup: Bool = true
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.input = input
        self.output = output
        self.ownProcessGroup = ownProcessGroup
    }
}

struct ProcessInputTooLarge: Error, CustomStringConvertible {
    var count: Int
    var description: String { "\(count) bytes, over the \(ChildProcess.maximumInputBytes) a pipe holds" }
}

/// How a child run ended.
public enum ProcessOutcome: Hashable, Sendable {
    case exited(Int32)
    case signalled(Int32)
    /// Still running at the time limit; killed.
    case timedOut
    /// Killed because the calling task was cancelled (the service is stopping).
    case stopped
    /// Never ran: no such file, not executable, no resources to start it, output over its limit.
    case notStarted(String)

    public var succeeded: Bool { self == .exited(0) }
}

public struct ProcessResult: Sendable {
    public var outcome: ProcessOutcome
    /// Empty unless the output was `.captured`.
    public var standardOutput: [UInt8]
    public var standardError: [UInt8]

    public var standardOutputText: String { String(decoding: standardOutput, as: UTF8.self) }
    public var standardErrorText: String { String(decoding: standardError, as: UTF8.self) }
}

/// The project's one way to start a child process, on swift-subprocess (`posix_spawn`, or
/// `clone3` with a pidfd, and an epoll thread that waits for every child): never Foundation's
/// `Process`, whose `run()` on this toolchain can crash the whole parent while scanning
/// `/proc/self/fd` (swift-corelibs-foundation #5472), a risk a server or an agent in the middle
/// of an SOS cannot take. A child that outlives its time limit on the injected clock, or whose
/// caller is cancelled, is killed with SIGKILL (with its group when it leads one): SIGTERM can
/// be blocked or ignored, and a notifier that hangs must not hold up the next one.
public enum ProcessRunner {
    public static func run(
        _ child: ChildProcess,
        timeLimit: Duration? = nil,
        clock: any Clock<Duration> = ContinuousClock()
    ) async -> ProcessResult {
        enum Event: Sendable {
            case finished(ProcessResult)
            case deadline
            case cancelled
        }
        return await withTaskGroup(of: Event.self) { group in
            group.addTask { .finished(await runToEnd(child)) }
            if let timeLimit {
                group.addTask {
                    do {
                        try await clock.sleep(for: timeLimit)
                        return .deadline
                    } catch {
                        return .cancelled
                    }
                }
            }
            var killedFor: ProcessOutcome?
            while let event = await group.next() {
                switch event {
                case .finished(var result):
                    group.cancelAll()
                    // Killed by us: say why. An exit that beat the kill stands.
                    if let killedFor, result.outcome == .signalled(SIGKILL) || result.outcome == .notStarted(cancelledMessage) {
                        result.outcome = killedFor
                    } else if Task.isCancelled, result.outcome == .signalled(SIGKILL) || result.outcome == .notStarted(cancelledMessage) {
                        result.outcome = .stopped
                    }
                    return result
                case .deadline:
                    killedFor = .timedOut
                    // Cancelling the run makes swift-subprocess tear the child down (the
                    // teardown below), then the run reports how it ended.
                    group.cancelAll()
                case .cancelled:
                    if killedFor == nil { killedFor = .stopped }
                }
            }
            return ProcessResult(outcome: killedFor ?? .stopped, standardOutput: [], standardError: [])
        }
    }

    private static let cancelledMessage = "cancelled"

    private static func runToEnd(_ child: ChildProcess) async -> ProcessResult {
        var options = PlatformOptions()
        if child.ownProcessGroup { options.processGroupID = 0 }
        options.teardownSequence = [.send(signal: .kill, toProcessGroup: child.ownProcessGroup, allowedDurationToNextStep: .zero)]
        let environment: Subprocess.Environment
        switch child.environment {
        case .exactly(let variables):
            environment = .custom(Dictionary(uniqueKeysWithValues: variables.map { (Subprocess.Environment.Key(rawValue: $0.key) ?? "_", $0.value) }))
        case .inherited(let adding):
            environment = .inherit.updating(
                Dictionary(uniqueKeysWithValues: adding.map { (Subprocess.Environment.Key(rawValue: $0.key) ?? "_", $0.value) })
            )
        }
        let configuration = Configuration(
            executable: .path(child.executable),
            arguments: Arguments(child.arguments),
            environment: environment,
            platformOptions: options
        )
        let input: FileDescriptorInput
        do {
            input = .fileDescriptor(try inputDescriptor(child.input), closeAfterSpawningProcess: true)
        } catch {
            return ProcessResult(outcome: .notStarted("standard input: \(error)"), standardOutput: [], standardError: [])
        }
        do {
            switch child.output {
            case .discarded:
                return try await collect(configuration, input: input, output: .discarded, error: .discarded)
            case .inherited:
                return try await collect(configuration, input: input, output: standardOutput, error: standardError)
            case .captured(let limit):
                return try await collect(configuration, input: input, output: .bytes(limit: limit), error: .bytes(limit: limit))
            }
        } catch is CancellationError {
            return ProcessResult(outcome: .notStarted(cancelledMessage), standardOutput: [], standardError: [])
        } catch {
            return ProcessResult(
                outcome: Task.isCancelled ? .notStarted(cancelledMessage) : .notStarted("\(error)"),
                standardOutput: [],
                standardError: []
            )
        }
    }

    /// The read end the child gets as its standard input: `/dev/null`, or a pipe already holding
    /// the bytes with its write end closed.
    private static func inputDescriptor(_ input: ChildProcess.Input) throws -> FileDescriptor {
        switch input {
        case .none:
            return try FileDescriptor.open("/dev/null", .readOnly, options: .closeOnExec)
        case .bytes(let bytes):
            guard bytes.count <= ChildProcess.maximumInputBytes else {
                throw ProcessInputTooLarge(count: bytes.count)
            }
            let (readEnd, writeEnd) = try FileDescriptor.pipe()
            do {
                try writeEnd.closeAfter { _ = try writeEnd.writeAll(bytes) }
            } catch {
                try? readEnd.close()
                throw error
            }
            return readEnd
        }
    }

    private static var standardOutput: FileDescriptorOutput { .fileDescriptor(.standardOutput, closeAfterSpawningProcess: false) }
    private static var standardError: FileDescriptorOutput { .fileDescriptor(.standardError, closeAfterSpawningProcess: false) }

    private static func collect<Input: InputProtocol, Output: OutputProtocol, Error: ErrorOutputProtocol>(
        _ configuration: Configuration,
        input: Input,
        output: Output,
        error: Error
    ) async throws -> ProcessResult {
        let result = try await Subprocess.run(configuration, input: input, output: output, error: error)
        let outcome: ProcessOutcome
        switch result.terminationStatus {
        case .exited(let code): outcome = .exited(code)
        case .signaled(let signal): outcome = .signalled(signal)
        }
        return ProcessResult(outcome: outcome, standardOutput: bytes(result.standardOutput), standardError: bytes(result.standardError))
    }

    private static func bytes(_ value: some Any) -> [UInt8] { value as? [UInt8] ?? [] }
}
