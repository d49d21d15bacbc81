import HTTPTypes
import Logging

extension TrackMeServer {
    /// Creates a console account (as `POST /v1/accounts` does), for in-process callers such as
    /// `trackme-sim run --serve`. Throws `APIError` for a bad or taken username or password.
    public func createAccount(username: String, password: String, displayName: String, dispatcher: Bool = true) async throws {
        try AccessRoom.checkUsername(username)
        try AccessRoom.checkPasswordBytes(password)
        let account = Account(
            id: BearerToken.generate().id,
            username: username,
            displayName: displayName,
            role: dispatcher ? .dispatcher : .admin,
            passwordHash: try await hall.access.passwords.hash(password),
            disabled: false,
            createdMilliseconds: configuration.wallClock()
        )
        try await hall.access.insertNew(account)
    }

    /// One pass of the contact escalation (the job runs it every `silenceCheckInterval` when a
    /// notifier is configured): tells the contacts now due of unacknowledged alerts. Returns how many.
    @discardableResult
    public func escalateToContacts() async throws -> Int {
        try await ContactEscalation(
            store: store,
            console: configuration.console,
            wallClock: configuration.wallClock,
            clock: configuration.clock,
            logger: logger
        ).run(baseURL: try await contactLinkBase())
    }

    /// Where contacts' links point: `publicURL`, else this server as it listens (https under TLS).
    func contactLinkBase() async throws -> String {
        if let base = configuration.console.publicURL, !base.isEmpty { return base }
        return "\(certificates == nil ? "http" : "https")://\(configuration.host):\(try await boundPort())"
    }

    /// The password rules with the operator's breached-password list, saying in the log whether
    /// the list is checked (a missing file is not an error: the check is skipped, and said so).
    static func passwordRules(_ accounts: AccountsConfiguration, logger: Logger) throws -> PasswordRules {
        let rules = try PasswordRules.load(accounts)
        if rules.checksBreaches {
            logger.info(
                "breached-password list loaded",
                metadata: ["accounts.breached_file": "\(accounts.breachedPasswordsFile ?? "")", "accounts.breached_count": "\(rules.breachedCount)"]
            )
        } else if let path = accounts.breachedPasswordsFile {
            logger.warning(
                "breached-password check skipped: the list file is absent",
                metadata: ["accounts.breached_file": "\(path)", "server.todo": "put one known-breached password a line in that file"]
            )
        } else {
            logger.info("breached-password check skipped: no list given (--breached-passwords-file)")
        }
        return rules
    }

    /// Waits for every run of the account notifier started so far (tests; the runs are off the
    /// request so that answers do not tell which accounts exist).
    func accountNoticesSettled() async {
        await hall.access.signInGuard.notices.settle()
    }

    /// How many clients follow the dispatcher feed now (a console that is open).
    public var feedFollowers: Int { hall.notifier.subscriberCount }
}
