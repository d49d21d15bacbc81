import SystemPackage
import TrackMeSystem

/// One run of a notifier (contacts, account notices): started with exactly the environment given
/// (nothing of the server's own, so no token or database password reaches an SMS gateway's
/// script), stdin from `/dev/null`, output to the server's (the journal), leading its own process
/// group, and killed with that group when it outlives `timeLimit` on the injected clock or the
/// server stops.
enum NotifierProcess {
    typealias Outcome = ProcessOutcome

    /// The variables every run gets besides the notifier's own `TRACKME_*`: a fixed search path
    /// (a script can find `curl` or `mail`) and a UTF-8 locale (names are UTF-8).
    static let baseEnvironment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"]

    static func run(_ command: String, environment: [String: String], timeLimit: Duration, clock: any Clock<Duration>) async -> Outcome {
        let child = ChildProcess(
            .init(command),
            environment: .exactly(baseEnvironment.merging(environment) { _, given in given }),
            input: .none,
            output: .inherited,
            ownProcessGroup: true
        )
        return await ProcessRunner.run(child, timeLimit: timeLimit, clock: clock).outcome
    }
}
