/// Accounts people manage themselves: signing up with a verified address, resetting a forgotten
/// password by a link, the password rules, and telling the owner of wrong passwords.
public struct AccountsConfiguration: Sendable {
    /// People may make their own wearer or organisation account (`POST /v1/sign-up`). Sign-up
    /// also needs `notifierCommand`, or the verification link could not be sent.
    public var signUpOpen = true
    /// An executable run once per message to an account's owner (a mailer, an SMS gateway's
    /// CLI), as the contact notifier is: a clean environment of `PATH`, `LANG` and
    /// `TRACKME_PURPOSE` (`verify_account`, `password_reset`, `failed_sign_ins`),
    /// `TRACKME_ACCOUNT` (username), `TRACKME_DISPLAY_NAME`, `TRACKME_EMAIL`, `TRACKME_LINK`
    /// (empty for `failed_sign_ins`), `TRACKME_FAILED_SIGN_INS` and `TRACKME_ATTEMPT`; exit 0
    /// means sent. nil: no sign-up, no reset by link, no warnings to owners.
    public var notifierCommand: String?
    /// A run still going after this long is killed.
    public var notifierTimeLimit: Duration = .seconds(30)
    /// A reset link works this long, once.
    public var resetLinkLifetime: Duration = .seconds(3600)
    /// A verification link works this long, once; an account not verified by then may be
    /// signed up for again under the same username.
    public var verificationLinkLifetime: Duration = .seconds(24 * 3600)
    /// Passwords people choose: at least this many characters (NIST SP 800-63B asks for 8 at
    /// the least and 15 for a password that is the only factor; 12 is the floor here).
    public var minimumPasswordLength = 12
    /// A file of passwords known from breaches, one a line (an operator's copy of a published
    /// list); a chosen password on it is refused. nil or absent: no check, and the start says so.
    public var breachedPasswordsFile: String?

    public init() {}
}
