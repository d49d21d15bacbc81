import TrackMeCore

/// What a sign-in or an organisation's registration may cost the server, checked before any
/// bcrypt: attempts per address (`ServerLimits.signInsPerAddress`, `registrationsPerAddress`) in
/// memory, and wrong passwords in a row per account (`failedSignInsBeforeDelay`,
/// `signInDelay`) in the database, so that every instance sees them and the owner and the admin
/// can read them. The owner hears of a burst of wrong passwords once, when the count reaches
/// `failuresBeforeDelay` (`notices`); the rules a chosen password must meet (`rules`) and the
/// runs of the account notifier are kept here with the counting they go with.
final class SignInGuard: Sendable {
    private let signIns: RateLimiter?
    private let registrations: RateLimiter?
    let failuresBeforeDelay: Int
    let delayMilliseconds: Int64
    let rules: PasswordRules
    let notices: AccountNotices

    init(
        limits: ServerLimits,
        rules: PasswordRules = PasswordRules(minimumCharacters: AccountsConfiguration().minimumPasswordLength),
        notices: AccountNotices
    ) {
        signIns = limits.signInsPerAddress.map(RateLimiter.init(limit:))
        registrations = limits.registrationsPerAddress.map(RateLimiter.init(limit:))
        failuresBeforeDelay = max(1, limits.failedSignInsBeforeDelay)
        delayMilliseconds = max(0, limits.signInDelay.milliseconds)
        self.rules = rules
        self.notices = notices
    }

    /// The account's wrong passwords now number `count`: at exactly `failuresBeforeDelay` (the
    /// start of the delay) the owner is told once; the count returns to 0 only when the owner
    /// signs in or sets a password, so one burst is one message however long it goes on.
    func failedSignIn(_ account: Account, count: Int) {
        guard count == failuresBeforeDelay, account.email != nil else { return }
        notices.send(.failedSignIns, to: account, failedSignIns: count)
    }

    func admitSignIn(from peer: String, now: Int64) throws {
        if let signIns, case .refused(let seconds) = signIns.take(peer, now: now) {
            throw APIError.tooManyRequests("too many sign-in attempts from this address", retryAfterSeconds: seconds)
        }
    }

    func admitRegistration(from peer: String, now: Int64) throws {
        if let registrations, case .refused(let seconds) = registrations.take(peer, now: now) {
            throw APIError.tooManyRequests("too many registrations from this address", retryAfterSeconds: seconds)
        }
    }

    /// After `failuresBeforeDelay` wrong passwords in a row an account takes one attempt per
    /// `signInDelay` since the last wrong one; the owner still gets in within that delay.
    func admit(_ account: Account, now: Int64) throws {
        guard account.failedSignIns >= failuresBeforeDelay, let last = account.lastFailedSignInMilliseconds else { return }
        let waited = now - last
        guard waited < delayMilliseconds else { return }
        let seconds = Int((delayMilliseconds - waited + 999) / 1000)
        throw APIError.tooManyRequests(
            "\(account.failedSignIns) wrong passwords in a row for this account: try again later",
            retryAfterSeconds: max(1, seconds)
        )
    }
}
