import Foundation
import TrackMeCore

#if canImport(Glibc)
import Glibc
#endif

/// One run of the contact notifier: started with exactly the environment given (nothing of the
/// server's own, so no token or database password reaches an SMS gateway's script), stdin from
/// `/dev/null`, output to the server's (the journal), waited for on a kept thread
/// (`BlockingThreads`) and killed with SIGKILL when it outlives `timeLimit` on the injected
/// clock or the server stops. A notifier that leads its own process group loses the whole group.
enum NotifierProcess {
    enum Outcome: Hashable, Sendable {
        case exited(Int32)
        case signalled(Int32)
        /// Still running at the time limit; killed.
        case timedOut
        /// Killed because the server was stopping.
        case stopped
        case notStarted(String)
    }

    /// The variables every run gets besides the notifier's own `TRACKME_*`: a fixed search path
    /// (a script can find `curl` or `mail`) and a UTF-8 locale (names are UTF-8).
    static let baseEnvironment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"]

    static func run(_ command: String, environment: [String: String], timeLimit: Duration, clock: any Clock<Duration>) async -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.environment = baseEnvironment.merging(environment) { _, given in given }
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return .notStarted("\(error)")
        }
        let child = RunningChild(process)
        enum Event: Sendable {
            case exited(Outcome)
            case deadline
            case cancelled
        }
        return await withTaskGroup(of: Event.self) { group in
            group.addTask { .exited(await child.waitForExit()) }
            group.addTask {
                do {
                    try await clock.sleep(for: timeLimit)
                    return .deadline
                } catch {
                    return .cancelled
                }
            }
            var killedFor: Outcome?
            while let event = await group.next() {
                switch event {
                case .exited(let outcome):
                    group.cancelAll()
                    // Killed by us: say why; an exit that beat the kill stands.
                    if let killedFor, outcome == .signalled(SIGKILL) { return killedFor }
                    return outcome
                case .deadline:
                    killedFor = .timedOut
                    child.kill()
                case .cancelled:
                    // Cancelled after the exit (the loop returns then) or because the server stops.
                    killedFor = .stopped
                    child.kill()
                }
            }
            return killedFor ?? .stopped
        }
    }
}

/// A started notifier. `Process` is created and started by one task, then only waited on by one
/// kept thread; killing goes through the pid and `kill(2)`, never through the object.
private final class RunningChild: @unchecked Sendable {
    private let process: Process
    private let pid: pid_t

    init(_ process: Process) {
        self.process = process
        pid = process.processIdentifier
    }

    func waitForExit() async -> NotifierProcess.Outcome {
        await BlockingThreads.shared.run { [self] in
            process.waitUntilExit()
            switch process.terminationReason {
            case .exit: return .exited(process.terminationStatus)
            case .uncaughtSignal: return .signalled(process.terminationStatus)
            }
        }
    }

    func kill() {
        if getpgid(pid) == pid { _ = Glibc.kill(-pid, SIGKILL) }
        _ = Glibc.kill(pid, SIGKILL)
    }
}
