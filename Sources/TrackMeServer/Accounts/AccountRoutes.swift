import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// Sign-in, sign-out, the current session, organisations registering, and the admin's accounts API.
struct AccountRoutes: Sendable {
    let room: AccessRoom

    var store: any AccessRoomStore { room.store }
    var authenticator: Authenticator { room.services.authenticator }
    var console: ConsoleConfiguration { room.configuration.console }

    func register(on doors: RouteAccess.Doors) {
        doors.on(.post, "/v1/session") { request, context in try await signIn(request, peer: context.peerKey) }
        doors.on(.get, "/v1/session") { request, _ in try await current(request) }
        doors.on(.delete, "/v1/session") { _, context in try await signOut(try context.signedIn()) }
        doors.on(.post, "/v1/organisations") { request, context in try await registerOrganisation(request, peer: context.peerKey) }
        doors.on(.post, "/v1/accounts") { request, _ in try await createAccount(request) }
        doors.on(.get, "/v1/accounts") { request, _ in try await listAccounts(request) }
        doors.on(.post, "/v1/accounts/:id/disable") { _, context in
            try await setDisabled(try context.signedIn(), id: try context.pathID("id"), disabled: true)
        }
        doors.on(.post, "/v1/accounts/:id/enable") { _, context in
            try await setDisabled(try context.signedIn(), id: try context.pathID("id"), disabled: false)
        }
    }

    /// An organisation registers itself (no token): a `third_party` account that can ask people.
    func registerOrganisation(_ request: Request, peer: String) async throws -> Response {
        // The administrator's sign-up switch closes this way in too.
        if !room.configuration.accounts.signUpOpen {
            throw APIError(
                status: .forbidden,
                code: .signUpClosed,
                message: "sign-up is turned off on this server: ask its administrator for an account"
            )
        }
        let now = room.configuration.wallClock()
        try room.signInGuard.admitRegistration(from: peer, now: now)
        let body = try await room.services.body(CreateAccountRequest.self, of: request)
        guard body.role == .thirdParty else { throw APIError.invalid("role", "organisations register as third_party") }
        try AccessRoom.checkUsername(body.username)
        try AccessRoom.checkPasswordBytes(body.password)
        let displayName = (body.displayName ?? body.username).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(displayName.count) else { throw APIError.invalid("display_name", "must be 1-100 characters") }
        let account = Account(
            id: BearerToken.generate().id,
            username: body.username,
            displayName: displayName,
            role: .thirdParty,
            passwordHash: try await room.passwords.hash(body.password),
            disabled: false,
            createdMilliseconds: now
        )
        try await room.insertNew(account)
        return try json(.created, AccountBody(account))
    }

    func signIn(_ request: Request, peer: String) async throws -> Response {
        // Login CSRF: a page elsewhere must not sign a browser in to an account of its choosing.
        // Browsers send Origin with every cross-site POST; it must name this server.
        if let origin = request.headers[.origin], let host = request.head.authority {
            let named = URLComponents(string: origin).map { ($0.host ?? "") + ($0.port.map { ":\($0)" } ?? "") }
            guard named == host else { throw APIError.forbidden("sign-in from another site (Origin \(origin))") }
        }
        let now = room.configuration.wallClock()
        try room.signInGuard.admitSignIn(from: peer, now: now)
        let body = try await room.services.body(SignInRequest.self, of: request)
        let hasher = room.passwords
        let account = try await store.account(username: body.username)
        if let account { try room.signInGuard.admit(account, now: now) }
        // An unknown name costs one bcrypt too, so timing does not tell names apart.
        let verified = try await hasher.verify(body.password, hash: account?.passwordHash ?? hasher.decoyHash)
        if let account, !verified {
            let count = try await store.recordFailedSignIn(accountID: account.id, atMilliseconds: now)
            room.signInGuard.failedSignIn(account, count: count)
        }
        guard let account, verified, !account.disabled else {
            throw APIError(status: .unauthorized, code: .unauthorized, message: "wrong username or password, or the account is disabled")
        }
        // Said only to someone who knows the password: the address is not proven yet.
        guard !account.unverified else {
            throw APIError(
                status: .forbidden,
                code: .unverified,
                message:
                    "this account is not verified yet: open the link sent to \(account.email ?? "its address") (or sign up again once it expired)"
            )
        }
        if account.failedSignIns > 0 { try await store.recordSignIn(accountID: account.id) }
        let token = BearerToken.generate()
        let session = Session(
            id: token.id,
            secretHash: token.secretHash,
            accountID: account.id,
            csrfToken: BearerToken.generate().secret,
            createdMilliseconds: now,
            expiresMilliseconds: now + console.sessionLifetime.milliseconds
        )
        _ = try? await store.deleteExpiredSessions(now: now)
        try await store.insertSession(session)
        var response = try json(
            .ok,
            SessionBody(account: AccountBody(account), csrfToken: session.csrfToken, expiresMilliseconds: session.expiresMilliseconds)
        )
        response.setCookie(
            SessionCookie.make(token.text, maxAgeSeconds: Int(console.sessionLifetime.milliseconds / 1000), secure: console.secureCookies)
        )
        return response
    }

    func current(_ request: Request) async throws -> Response {
        let (session, account) = try await authenticator.session(of: request)
        return try json(
            .ok,
            SessionBody(account: AccountBody(account), csrfToken: session.csrfToken, expiresMilliseconds: session.expiresMilliseconds)
        )
    }

    func signOut(_ principal: Principal) async throws -> Response {
        guard principal.tokenID.hasPrefix("session:") else { throw APIError.forbidden("sign-out ends a browser session, not a token") }
        try await store.deleteSession(id: String(principal.tokenID.dropFirst("session:".count)))
        var response = Response(status: .noContent)
        response.setCookie(SessionCookie.cleared(secure: console.secureCookies))
        return response
    }

    func createAccount(_ request: Request) async throws -> Response {
        let body = try await room.services.body(CreateAccountRequest.self, of: request)
        try AccessRoom.checkUsername(body.username)
        try AccessRoom.checkPasswordBytes(body.password)
        let displayName = body.displayName ?? body.username
        guard (1...100).contains(displayName.count) else { throw APIError.invalid("display_name", "must be 1-100 characters") }
        guard body.role != .device else { throw APIError.invalid("role", "devices are enrolled with POST /v1/devices") }
        let email = body.email?.trimmingCharacters(in: .whitespaces)
        if let email, !email.isEmpty, !Self.isPlausibleAddress(email) { throw APIError.invalid("email", "not an address a message can go to") }
        let account = Account(
            id: BearerToken.generate().id,
            username: body.username,
            displayName: displayName,
            role: body.role,
            passwordHash: try await room.passwords.hash(body.password),
            disabled: false,
            createdMilliseconds: room.configuration.wallClock(),
            email: email?.isEmpty == false ? email : nil
        )
        try await room.insertNew(account)
        return try json(.created, AccountBody(account))
    }

    func listAccounts(_ request: Request) async throws -> Response {
        let page = try PageRequest(request, maxLimit: room.configuration.maxPageSize)
        let cut = page.cut(try await store.accounts(after: try page.after?.string(), limit: page.fetchLimit)) { PageCursor($0.username) }
        return try json(.ok, AccountList(accounts: cut.rows.map(AccountBody.init), next: cut.next))
    }

    func setDisabled(_ principal: Principal, id: String, disabled: Bool) async throws -> Response {
        guard principal.accountID != id else { throw APIError.forbidden("an admin may not disable their own account") }
        guard try await store.setAccountDisabled(id: id, disabled: disabled), let account = try await store.account(id: id) else {
            throw APIError.notFound("no account \(id)")
        }
        return try json(.ok, AccountBody(account))
    }
}

struct SignInRequest: Codable, Sendable {
    var username: String
    var password: String
}

struct CreateAccountRequest: Codable, Sendable {
    var username: String
    var password: String
    var displayName: String?
    var role: Role
    /// Where the owner hears of a burst of wrong passwords and gets reset links.
    var email: String?

    enum CodingKeys: String, CodingKey {
        case username, password, role, email
        case displayName = "display_name"
    }
}

/// An account as the API shows it (never the hash).
struct AccountBody: Codable, Hashable, Sendable {
    var id: String
    var username: String
    var displayName: String
    var role: Role
    var disabled: Bool
    /// Wrong passwords since the last successful sign-in, and before it: shown to the owner
    /// (`GET /v1/session`) and the admin (`GET /v1/accounts`).
    var failedSignIns: Int?
    var failedSignInsBeforeLastSignIn: Int?
    var lastFailedSignInMilliseconds: Int64?
    var email: String?
    var unverified: Bool

    init(_ account: Account) {
        id = account.id
        username = account.username
        displayName = account.displayName
        role = account.role
        disabled = account.disabled
        failedSignIns = account.failedSignIns
        failedSignInsBeforeLastSignIn = account.failedSignInsBeforeLastSignIn
        lastFailedSignInMilliseconds = account.lastFailedSignInMilliseconds
        email = account.email
        unverified = account.unverified
    }

    enum CodingKeys: String, CodingKey {
        case id, username, role, disabled, email, unverified
        case displayName = "display_name"
        case failedSignIns = "failed_sign_ins"
        case failedSignInsBeforeLastSignIn = "failed_sign_ins_before_last_sign_in"
        case lastFailedSignInMilliseconds = "last_failed_sign_in_ms"
    }
}

struct AccountList: Codable, Sendable {
    var accounts: [AccountBody]
    /// The next page (`after`); absent on the last page.
    var next: String?
}

struct SessionBody: Codable, Sendable {
    var account: AccountBody
    var csrfToken: String
    var expiresMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case account
        case csrfToken = "csrf_token"
        case expiresMilliseconds = "expires_ms"
    }
}
