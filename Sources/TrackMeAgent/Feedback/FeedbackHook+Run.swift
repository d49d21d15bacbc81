import SystemPackage
import TrackMeSystem

// The hook's run apart from its settings: the configuration (and its fuzzer) reads the
// settings without the process runner.
extension FeedbackHook {
    public func run(_ state: FeedbackState) async throws(FeedbackOutputError) {
        let program = command.first ?? ""
        let child = ChildProcess(
            FilePath(program),
            arguments: Array(command.dropFirst()) + [state.rawValue],
            environment: .inherited(adding: ["TRACKME_FEEDBACK": state.rawValue]),
            input: .none,
            output: .discarded
        )
        switch await ProcessRunner.run(child, timeLimit: timeLimit, clock: clock).outcome {
        case .exited(0):
            return
        case .exited(let status):
            throw FeedbackOutputError(code: .hookExit, path: program, message: "exit status \(status)")
        case .signalled(let signal):
            throw FeedbackOutputError(code: .hookExit, path: program, message: "killed by signal \(signal)")
        case .timedOut:
            throw FeedbackOutputError(code: .hookTimedOut, path: program, message: "still running after \(timeLimit), killed")
        case .stopped:
            throw FeedbackOutputError(code: .hookExit, path: program, message: "killed: the agent is stopping")
        case .notStarted(let reason):
            throw FeedbackOutputError(code: .hookLaunch, path: program, message: reason)
        }
    }
}
