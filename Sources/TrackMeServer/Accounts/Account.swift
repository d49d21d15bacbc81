/// A person who signs in: an admin, a dispatcher, and later wearers, carers, third parties,
/// race organisers and fleet operators. One model for all of them; what each may see is decided
/// by `AccessPolicy`, not by separate account kinds.
struct Account: Hashable, Sendable {
    var id: String
    /// What the person types to sign in: 1-64 of `A-Z a-z 0-9 . _ - @`.
    var username: String
    /// Shown on pages (any text; pages render it as text, never as markup).
    var displayName: String
    var role: Role
    /// bcrypt (`$2b$...`); the password itself is never stored.
    var passwordHash: String
    var disabled: Bool
    var createdMilliseconds: Int64
    /// Wrong passwords since the last successful sign-in (`SignInGuard` throttles on it).
    var failedSignIns = 0
    /// `failedSignIns` as it was when the last successful sign-in reset it.
    var failedSignInsBeforeLastSignIn = 0
    var lastFailedSignInMilliseconds: Int64?
    /// Where the owner is told things (a reset link, wrong passwords): the notifier's
    /// `TRACKME_EMAIL`. Accounts an admin made may have none.
    var email: String? = nil
    /// Signed up and the address not yet verified: may not sign in.
    var unverified = false

    static func isValidUsername(_ text: String) -> Bool {
        guard (1...64).contains(text.utf8.count) else { return false }
        return text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "@"): true
            default: false
            }
        }
    }
}

/// A signed-in browser: the cookie carries `ID.SECRET` (the `BearerToken` shape); only the
/// secret's SHA-256 is stored. The CSRF token is handed to the page and must come back in
/// `X-CSRF-Token` with every state change made with the cookie.
struct Session: Hashable, Sendable {
    var id: String
    var secretHash: String
    var accountID: String
    var csrfToken: String
    var createdMilliseconds: Int64
    var expiresMilliseconds: Int64
}

/// Accounts and sessions, on both backends. Sessions live in the database, so any server
/// instance sharing it knows them, and signing out or disabling an account ends them everywhere.
protocol AccountStore: Sendable {
    /// False if the username is taken.
    func insertAccount(_ account: Account) async throws -> Bool
    func account(id: String) async throws -> Account?
    func account(username: String) async throws -> Account?
    /// Accounts after `username` in username order, at most `limit`: one page of the list.
    func accounts(after username: String?, limit: Int) async throws -> [Account]
    /// Sets `disabled`; a disabled account's sessions are deleted in the same transaction.
    /// False if there is no such account.
    func setAccountDisabled(id: String, disabled: Bool) async throws -> Bool
    /// One more wrong password for the account; returns the count now (one caller sees each
    /// value, so exactly one sees the count reach a threshold).
    @discardableResult
    func recordFailedSignIn(accountID: String, atMilliseconds: Int64) async throws -> Int
    /// A right one: the count of wrong ones moves to `failedSignInsBeforeLastSignIn`.
    func recordSignIn(accountID: String) async throws
    /// Accounts whose owner gave this address (compared without regard to case).
    func accounts(email: String) async throws -> [Account]
    /// Sets a new password hash, clears the wrong-password count, and ends every session of
    /// the account but `keepingSession`. False if there is no such account.
    func setPassword(accountID: String, passwordHash: String, keepingSession: String?) async throws -> Bool
    /// Deletes the account of `username` if it was never verified and was made before
    /// `createdBefore` (its sign-up lapsed), with its links. True if one was deleted.
    func deleteLapsedSignUp(username: String, createdBefore: Int64) async throws -> Bool

    func insertAccountLink(_ link: StoredAccountLink) async throws
    func accountLink(id: String) async throws -> StoredAccountLink?
    /// Uses a link once, in one transaction: checks it is the account's, of the purpose, unused
    /// and unexpired at `now`, marks it used (and every other unused link of the account for
    /// the purpose), then verifies the account (`verifyAccount`) or sets `newPasswordHash`,
    /// clears the wrong-password count and ends every session (`passwordReset`; the address is
    /// then proven too).
    func useAccountLink(_ link: AccountLink, atMilliseconds now: Int64, newPasswordHash: String?) async throws -> AccountLinkUse

    func insertSession(_ session: Session) async throws
    /// The session with its account, if both exist.
    func session(id: String) async throws -> (Session, Account)?
    func deleteSession(id: String) async throws
    /// Deletes sessions that expired before `now`; returns how many.
    func deleteExpiredSessions(now: Int64) async throws -> Int
}
