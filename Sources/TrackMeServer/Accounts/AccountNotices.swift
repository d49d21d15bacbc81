import Logging
import Synchronization
import TrackMeCore
import TrackMeSystem

/// What the account notifier is run for.
enum AccountNoticePurpose: String, Hashable, Sendable {
    case verifyAccount = "verify_account"
    case passwordReset = "password_reset"
    /// Wrong passwords in a row reached `SignInGuard.failuresBeforeDelay`.
    case failedSignIns = "failed_sign_ins"
}

/// Runs the account notifier (`AccountsConfiguration.notifierCommand`) through the contacts'
/// `NotifierProcess`, off the request: an answer that waited for the notifier would take longer
/// for an account that exists than for one that does not, and say which. Each run is kept until
/// it ends so that `settle()` (tests, a stopping server) can wait for them all.
final class AccountNotices: Sendable {
    let command: String?
    let timeLimit: Duration
    let clock: any Clock<Duration>
    let logger: Logger
    private let running = Mutex<[Int: Task<Void, Never>]>([:])
    private let counter = Mutex(0)

    init(_ configuration: AccountsConfiguration, clock: any Clock<Duration>, logger: Logger) {
        command = configuration.notifierCommand.flatMap { $0.isEmpty ? nil : $0 }
        timeLimit = configuration.notifierTimeLimit
        self.clock = clock
        self.logger = logger
    }

    /// Starts one run for the account's owner; false when no notifier is configured.
    @discardableResult
    func send(_ purpose: AccountNoticePurpose, to account: Account, link: String = "", failedSignIns: Int = 0) -> Bool {
        guard let command else { return false }
        let environment = [
            "TRACKME_PURPOSE": purpose.rawValue, "TRACKME_ACCOUNT": account.username, "TRACKME_DISPLAY_NAME": account.displayName,
            "TRACKME_EMAIL": account.email ?? "", "TRACKME_LINK": link, "TRACKME_FAILED_SIGN_INS": "\(failedSignIns)", "TRACKME_ATTEMPT": "1",
        ]
        let number = counter.withLock { value in
            value += 1
            return value
        }
        let (timeLimit, clock, logger) = (self.timeLimit, self.clock, self.logger)
        let metadata: Logger.Metadata = ["account.id": "\(account.id)", "account.notice": "\(purpose.rawValue)"]
        // The run is registered before it can finish, so that it always removes its own entry.
        running.withLock { tasks in
            tasks[number] = Task { [weak self] in
                let outcome = await NotifierProcess.run(command, environment: environment, timeLimit: timeLimit, clock: clock)
                var logged = metadata
                logged["account.outcome"] = "\(outcome)"
                if outcome == .exited(0) {
                    logger.info("account notice sent", metadata: logged)
                } else {
                    logger.warning("account notifier failed", metadata: logged)
                }
                _ = self?.running.withLock { $0.removeValue(forKey: number) }
            }
        }
        return true
    }

    /// Waits for every run started so far to end.
    func settle() async {
        while let task = running.withLock({ $0.values.first }) { await task.value }
    }
}
