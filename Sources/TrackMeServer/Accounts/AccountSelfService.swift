import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// What people do with their own account: sign up and verify the address by a link, ask for a
/// reset link and set a new password with it, change the password when signed in. Links go out
/// through the account notifier (`AccountNotices`); the pages are `account.html` and its files.
extension AccountRoutes {
    var settings: AccountsConfiguration { room.configuration.accounts }
    var rules: PasswordRules { room.signInGuard.rules }
    var notices: AccountNotices { room.signInGuard.notices }

    func registerSelfService(on doors: RouteAccess.Doors, page: @escaping @Sendable (EmbeddedFile, Request) -> Response) {
        doors.on(.get, "/v1/sign-up") { _, _ in try signUpState() }
        doors.on(.post, "/v1/sign-up") { request, context in try await signUp(request, context: context) }
        doors.on(.post, "/v1/sign-up/verify") { request, _ in try await verify(request) }
        doors.on(.post, "/v1/password-reset") { request, context in try await requestReset(request, context: context) }
        doors.on(.post, "/v1/password-reset/confirm") { request, _ in try await confirmReset(request) }
        doors.on(.post, "/v1/session/password") { request, context in try await changePassword(request, try context.signedIn()) }
        for path in ["/account/sign-up", "/account/verify", "/account/reset", "/account/password"] {
            doors.on(.get, path) { request, _ in page(WebPages.account, request) }
        }
        doors.on(.get, "/assets/account.js") { request, _ in page(WebPages.accountScript, request) }
    }

    /// Why sign-up is closed, or nil when it is open.
    var signUpClosed: String? {
        if !settings.signUpOpen { return "sign-up is turned off on this server: ask its administrator for an account" }
        if notices.command == nil {
            return "sign-up is not available: this server has no way to send the verification link (no account notifier); ask its administrator"
        }
        return nil
    }

    func signUpState() throws -> Response {
        try json(
            .ok,
            SignUpState(
                open: signUpClosed == nil,
                reason: signUpClosed,
                minimumPasswordCharacters: rules.minimumCharacters,
                resetByLink: notices.command != nil
            )
        )
    }

    func signUp(_ request: Request, context: ServerRequestContext) async throws -> Response {
        if let closed = signUpClosed { throw APIError(status: .forbidden, code: .signUpClosed, message: closed) }
        let now = room.configuration.wallClock()
        try room.signInGuard.admitRegistration(from: context.peerKey, now: now)
        let body = try await room.services.body(SignUpRequest.self, of: request)
        guard body.role == .wearer || body.role == .thirdParty else {
            throw APIError.invalid("role", "people sign up as wearer or third_party (an organisation)")
        }
        try AccessRoom.checkUsername(body.username)
        let email = body.email.trimmingCharacters(in: .whitespaces)
        guard Self.isPlausibleAddress(email) else { throw APIError.invalid("email", "an address the link can be sent to, such as name@example.org") }
        let displayName = (body.displayName ?? body.username).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(displayName.count) else { throw APIError.invalid("display_name", "must be 1-100 characters") }
        if let problem = rules.problem(body.password, username: body.username, displayName: displayName) {
            throw APIError.invalid("password", problem)
        }
        // A username held by a sign-up nobody verified in time is free again.
        _ = try await store.deleteLapsedSignUp(username: body.username, createdBefore: now - settings.verificationLinkLifetime.milliseconds + 1)
        let account = Account(
            id: BearerToken.generate().id,
            username: body.username,
            displayName: displayName,
            role: body.role,
            passwordHash: try await room.passwords.hash(body.password),
            disabled: false,
            createdMilliseconds: now,
            email: email,
            unverified: true
        )
        try await room.insertNew(account)
        let link = try await sendLink(.verifyAccount, to: account, now: now, context: context)
        return try json(.accepted, SignUpAnswer(username: account.username, email: email, linkExpiresMilliseconds: link.expiresMilliseconds))
    }

    func verify(_ request: Request) async throws -> Response {
        let body = try await room.services.body(LinkRequest.self, of: request)
        let (link, account) = try await check(body.token, purpose: .verifyAccount)
        try Self.answer(try await store.useAccountLink(link, atMilliseconds: room.configuration.wallClock(), newPasswordHash: nil))
        return try json(.ok, LinkAnswer(username: account.username, status: "verified"))
    }

    /// Always the same answer for a name or address that matches no account, one that matches
    /// an account with no address, and one that matches: a link goes only to the address the
    /// account's owner gave.
    func requestReset(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard notices.command != nil else {
            // Not a fault of the server's (no 503): the feature is not here.
            throw APIError.notFound("password reset by link is not set up on this server: ask its administrator to set a new password")
        }
        let now = room.configuration.wallClock()
        try room.signInGuard.admitSignIn(from: context.peerKey, now: now)
        let body = try await room.services.body(ResetRequest.self, of: request)
        let username = body.username?.trimmingCharacters(in: .whitespaces) ?? ""
        let email = body.email?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !username.isEmpty || !email.isEmpty else { throw APIError.invalid("username", "give the account's username or its address") }
        guard username.utf8.count <= 254, email.utf8.count <= 254 else { throw APIError.invalid("username", "at most 254 bytes") }
        var accounts: [Account] = []
        if !username.isEmpty, let account = try await store.account(username: username) { accounts.append(account) }
        if !email.isEmpty { accounts += try await store.accounts(email: email).filter { account in !accounts.contains { $0.id == account.id } } }
        for account in accounts where !account.disabled && account.email != nil {
            _ = try await sendLink(.passwordReset, to: account, now: now, context: context)
        }
        return try json(
            .accepted,
            ResetAnswer(
                status: "sent_if_known",
                message:
                    "If an account with an address matches, a link to set a new password is on its way to that address. It works once, for \(settings.resetLinkLifetime.components.seconds / 60) minutes."
            )
        )
    }

    func confirmReset(_ request: Request) async throws -> Response {
        let body = try await room.services.body(ResetConfirmation.self, of: request)
        let (link, account) = try await check(body.token, purpose: .passwordReset)
        // A refused password leaves the link as it was: the owner tries another with it.
        if let problem = rules.problem(body.password, username: account.username, displayName: account.displayName) {
            throw APIError.invalid("password", problem)
        }
        let hash = try await room.passwords.hash(body.password)
        try Self.answer(try await store.useAccountLink(link, atMilliseconds: room.configuration.wallClock(), newPasswordHash: hash))
        return try json(.ok, LinkAnswer(username: account.username, status: "password_set"))
    }

    /// Signed in with the session cookie (and its CSRF token): the current password, then the new
    /// one. Every other session of the account ends; this one stays.
    func changePassword(_ request: Request, _ principal: Principal) async throws -> Response {
        guard principal.tokenID.hasPrefix("session:") else {
            throw APIError.forbidden("a password is changed by its owner signed in to a page, not with a bearer token")
        }
        let (session, account) = try await authenticator.session(of: request)
        let body = try await room.services.body(ChangePasswordRequest.self, of: request)
        let now = room.configuration.wallClock()
        try room.signInGuard.admit(account, now: now)
        guard try await room.passwords.verify(body.currentPassword, hash: account.passwordHash) else {
            let count = try await store.recordFailedSignIn(accountID: account.id, atMilliseconds: now)
            room.signInGuard.failedSignIn(account, count: count)
            throw APIError(status: .unauthorized, code: .unauthorized, field: "current_password", message: "the current password is wrong")
        }
        if let problem = rules.problem(body.newPassword, username: account.username, displayName: account.displayName) {
            throw APIError.invalid("new_password", problem)
        }
        guard body.newPassword != body.currentPassword else { throw APIError.invalid("new_password", "must differ from the current password") }
        let hash = try await room.passwords.hash(body.newPassword)
        guard try await store.setPassword(accountID: account.id, passwordHash: hash, keepingSession: session.id) else {
            throw APIError.unauthorized()
        }
        return try json(.ok, LinkAnswer(username: account.username, status: "password_changed"))
    }

    // MARK: - Links

    /// Makes, stores and sends a link of `purpose` to the account's owner.
    func sendLink(_ purpose: AccountLinkPurpose, to account: Account, now: Int64, context: ServerRequestContext) async throws -> AccountLink {
        let lifetime = purpose == .verifyAccount ? settings.verificationLinkLifetime : settings.resetLinkLifetime
        let link = AccountLink.make(accountID: account.id, purpose: purpose, now: now, lifetime: lifetime)
        try await store.insertAccountLink(
            StoredAccountLink(
                id: link.id,
                accountID: account.id,
                purpose: purpose,
                nonceHash: link.nonceHash,
                createdMilliseconds: now,
                expiresMilliseconds: link.expiresMilliseconds
            )
        )
        // The token rides in the fragment: browsers send it neither to the server in the page's
        // request nor to anyone as a Referer.
        let page = purpose == .verifyAccount ? "/account/verify#" : "/account/reset#"
        let url = linkBase(context) + page + link.token(linkKey: room.configuration.console.contactLinkKey)
        notices.send(purpose == .verifyAccount ? .verifyAccount : .passwordReset, to: account, link: url)
        return link
    }

    /// `publicURL`, else this server as the connection reached it (never the request's Host
    /// header, which the sender of the request chooses).
    func linkBase(_ context: ServerRequestContext) -> String {
        if let base = console.publicURL, !base.isEmpty { return base }
        let port = context.localAddress?.port ?? room.configuration.port
        return "\(room.configuration.tls == nil ? "http" : "https")://\(room.configuration.host):\(port)"
    }

    /// The link a token names and its account, if the token is genuine, unexpired and unused.
    func check(_ token: String, purpose: AccountLinkPurpose) async throws -> (AccountLink, Account) {
        guard let link = AccountLink(token: token, linkKey: room.configuration.console.contactLinkKey), link.purpose == purpose else {
            throw Self.invalidLink
        }
        guard link.expiresMilliseconds > room.configuration.wallClock() else { throw Self.expiredLink }
        guard let stored = try await store.accountLink(id: link.id), stored.accountID == link.accountID,
            BearerToken.digestsEqual(stored.nonceHash, link.nonceHash), let account = try await store.account(id: link.accountID)
        else { throw Self.invalidLink }
        if stored.usedMilliseconds != nil { throw Self.usedLink }
        return (link, account)
    }

    static func answer(_ use: AccountLinkUse) throws {
        switch use {
        case .done: return
        case .used: throw usedLink
        case .expired: throw expiredLink
        case .unknown: throw invalidLink
        }
    }

    static let invalidLink = APIError(
        status: .forbidden,
        code: .invalidLink,
        field: "token",
        message: "this link is not valid (changed, cut short, or not one of ours): ask for a new one"
    )
    static let expiredLink = APIError(status: .gone, code: .linkExpired, field: "token", message: "this link has expired: ask for a new one")
    static let usedLink = APIError(status: .gone, code: .linkUsed, field: "token", message: "this link has been used already: ask for a new one")

    /// Something a message can go to: no spaces or control characters, text on both sides of
    /// one `@`, a dot in the domain, at most 254 bytes. Whether it is real, the link shows.
    static func isPlausibleAddress(_ text: String) -> Bool {
        guard (3...254).contains(text.utf8.count), text.utf8.allSatisfy({ $0 > 32 && $0 != 127 }) else { return false }
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return false }
        return parts[1].contains(".") && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
    }
}

extension APIError.Code {
    static let signUpClosed = APIError.Code(rawValue: "sign_up_closed")
    static let invalidLink = APIError.Code(rawValue: "invalid_link")
    static let linkExpired = APIError.Code(rawValue: "link_expired")
    static let linkUsed = APIError.Code(rawValue: "link_used")
    /// Signed up, address not verified yet.
    static let unverified = APIError.Code(rawValue: "unverified")
}

struct SignUpRequest: Codable, Sendable {
    var username: String
    var password: String
    var displayName: String?
    var email: String
    var role: Role

    enum CodingKeys: String, CodingKey {
        case username, password, email, role
        case displayName = "display_name"
    }
}

struct SignUpState: Codable, Sendable {
    var open: Bool
    var reason: String?
    var minimumPasswordCharacters: Int
    var resetByLink: Bool

    enum CodingKeys: String, CodingKey {
        case open, reason
        case minimumPasswordCharacters = "minimum_password_characters"
        case resetByLink = "reset_by_link"
    }
}

struct SignUpAnswer: Codable, Sendable {
    var status = "verification_sent"
    var username: String
    var email: String
    var linkExpiresMilliseconds: Int64

    init(username: String, email: String, linkExpiresMilliseconds: Int64) {
        self.username = username
        self.email = email
        self.linkExpiresMilliseconds = linkExpiresMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case status, username, email
        case linkExpiresMilliseconds = "link_expires_ms"
    }
}

struct LinkRequest: Codable, Sendable {
    var token: String
}

struct LinkAnswer: Codable, Sendable {
    var username: String
    var status: String
}

struct ResetRequest: Codable, Sendable {
    var username: String?
    var email: String?
}

struct ResetAnswer: Codable, Sendable {
    var status: String
    var message: String
}

struct ResetConfirmation: Codable, Sendable {
    var token: String
    var password: String
}

struct ChangePasswordRequest: Codable, Sendable {
    var currentPassword: String
    var newPassword: String

    enum CodingKeys: String, CodingKey {
        case currentPassword = "current_password"
        case newPassword = "new_password"
    }
}
