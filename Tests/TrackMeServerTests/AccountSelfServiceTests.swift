import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Accounts people manage themselves: sign-up verified by a link, reset by a single-use
/// expiring link, change of password, the password rules, and the owner told of a burst of
/// wrong passwords, all through a real notifier script that writes each message to a file.
@Suite("Accounts people manage themselves")
struct AccountSelfServiceTests {
    typealias Scratch = ContactNotifierTests.Scratch

    /// One line per message: purpose|username|email|link|failed sign-ins.
    static func notifier(_ scratch: Scratch) throws -> String {
        try scratch.script(
            #"echo "$TRACKME_PURPOSE|$TRACKME_ACCOUNT|$TRACKME_EMAIL|$TRACKME_LINK|$TRACKME_FAILED_SIGN_INS" >> "$DIR/notices.txt""#
        )
    }

    static func with(
        _ backend: Backend,
        signUpOpen: Bool = true,
        breachedPasswordsFile: String? = nil,
        _ body: (TestServer, Scratch) async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let command = try notifier(scratch)
        try await TestServer.with(
            backend,
            configure: { configuration in
                configuration.accounts.notifierCommand = command
                configuration.accounts.signUpOpen = signUpOpen
                configuration.accounts.breachedPasswordsFile = breachedPasswordsFile
            },
            { s in try await body(s, scratch) }
        )
    }

    /// The notices sent so far (after every run ended), as fields.
    static func notices(_ s: TestServer, _ scratch: Scratch) async -> [[String]] {
        await s.server.accountNoticesSettled()
        return scratch.lines("notices.txt").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }

    /// The token of the last link of `purpose` sent to `username`.
    static func token(_ s: TestServer, _ scratch: Scratch, _ purpose: String, _ username: String) async throws -> String {
        let line = try #require(await notices(s, scratch).last { $0.count == 5 && $0[0] == purpose && $0[1] == username })
        return String(try #require(line[3].split(separator: "#").last))
    }

    static let password = "a walk along the river"

    func signUp(_ s: TestServer, _ username: String, role: String = "wearer", password: String = password) async throws -> HTTPTestClient.Response {
        try await s.client.send(
            "POST",
            "/v1/sign-up",
            json: ["username": username, "password": password, "display_name": "Ada L.", "email": "\(username)@example.org", "role": role]
        )
    }

    func signIn(_ s: TestServer, _ username: String, _ password: String) async throws -> HTTPTestClient.Response {
        try await s.client.send("POST", "/v1/session", json: ["username": username, "password": password])
    }

    static func code(_ response: HTTPTestClient.Response) -> String? {
        (response.object["error"] as? [String: Any])?["code"] as? String
    }

    // MARK: - Sign-up

    @Test("a wearer and an organisation sign up; neither signs in until the link is opened; the link works once", arguments: Backend.enabled)
    func signUpVerified(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            let wearer = try await signUp(s, "ada")
            #expect(wearer.status == 202, "\(wearer.text)")
            #expect(try await signUp(s, "acme", role: "third_party").status == 202)
            #expect(try await signUp(s, "mallory", role: "dispatcher").status == 400)
            #expect(try await signUp(s, "ada").status == 409, "the username is held while its link works")

            let early = try await signIn(s, "ada", Self.password)
            #expect(early.status == 403, "\(early.text)")
            #expect(Self.code(early) == "unverified")

            let lines = await Self.notices(s, scratch)
            #expect(
                lines.map { $0[0] + " " + $0[1] + " " + $0[2] } == ["verify_account ada ada@example.org", "verify_account acme acme@example.org"]
            )
            #expect(lines.first?[3].hasPrefix("http://127.0.0.1:\(s.port)/account/verify#") == true, "\(lines)")

            let token = try await Self.token(s, scratch, "verify_account", "ada")
            let verified = try await s.client.send("POST", "/v1/sign-up/verify", json: ["token": token])
            #expect(verified.status == 200, "\(verified.text)")
            #expect(try await signIn(s, "ada", Self.password).status == 200)
            #expect(try await signIn(s, "acme", Self.password).status == 403, "the organisation has not verified yet")

            let again = try await s.client.send("POST", "/v1/sign-up/verify", json: ["token": token])
            #expect(again.status == 410)
            #expect(Self.code(again) == "link_used")
        }
    }

    @Test(
        "a sign-up nobody verified expires: the link is refused, the account cannot sign in, the username is free again",
        arguments: Backend.enabled
    )
    func signUpLapses(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            #expect(try await signUp(s, "ada").status == 202)
            let token = try await Self.token(s, scratch, "verify_account", "ada")
            s.wall.advance(milliseconds: 24 * 3600 * 1000)
            let late = try await s.client.send("POST", "/v1/sign-up/verify", json: ["token": token])
            #expect(late.status == 410)
            #expect(Self.code(late) == "link_expired")
            #expect(try await signIn(s, "ada", Self.password).status == 403)
            #expect(try await signUp(s, "ada", password: "another long passphrase").status == 202)
            let fresh = try await Self.token(s, scratch, "verify_account", "ada")
            #expect(try await s.client.send("POST", "/v1/sign-up/verify", json: ["token": fresh]).status == 200)
            #expect(try await signIn(s, "ada", "another long passphrase").status == 200)
        }
    }

    @Test(
        "sign-up turned off by configuration, or with no notifier to send the link: 403 sign_up_closed, no account made",
        arguments: Backend.enabled
    )
    func signUpClosed(backend: Backend) async throws {
        try await Self.with(backend, signUpOpen: false) { s, scratch in
            let refused = try await signUp(s, "ada")
            #expect(refused.status == 403, "\(refused.text)")
            #expect(Self.code(refused) == "sign_up_closed")
            #expect(
                (refused.object["error"] as? [String: Any])?["message"] as? String
                    == "sign-up is turned off on this server: ask its administrator for an account"
            )
            let state = try await s.client.send("GET", "/v1/sign-up")
            #expect(state.object["open"] as? Bool == false)
            let organisation = try await s.client.send(
                "POST",
                "/v1/organisations",
                json: ["username": "acme", "password": Self.password, "role": "third_party"]
            )
            #expect(organisation.status == 403, "the organisations' own way in is closed too: \(organisation.text)")
            #expect(Self.code(organisation) == "sign_up_closed")
            #expect(await Self.notices(s, scratch).isEmpty)
            #expect(try await s.server.store.account(username: "ada") == nil)
        }
        try await TestServer.with(backend) { s in
            let refused = try await signUp(s, "ada")
            #expect(refused.status == 403)
            #expect(Self.code(refused) == "sign_up_closed")
            #expect(try await s.server.store.account(username: "ada") == nil)
            let reset = try await s.client.send("POST", "/v1/password-reset", json: ["username": "ada"])
            #expect(reset.status == 404, "\(reset.text)")
            #expect(
                (reset.object["error"] as? [String: Any])?["message"] as? String
                    == "password reset by link is not set up on this server: ask its administrator to set a new password"
            )
        }
    }

    // MARK: - Password rules

    @Test(
        "chosen passwords: at least 12 characters, at most 72 bytes, not the username, not on the operator's breached list; no character-class rules",
        arguments: Backend.enabled
    )
    func passwordRules(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let list = scratch.path("breached.txt")
        try "123456\npassword\ncorrect horse battery staple\r\nletmein123456\n".write(toFile: list, atomically: true, encoding: .utf8)
        try await Self.with(backend, breachedPasswordsFile: list) { s, _ in
            for (password, reason) in [
                ("short pass", "at least 12"), (String(repeating: "é", count: 40), "at most 72 bytes"), ("ada-lovelace", "username"),
                ("Correct Horse Battery Staple", "breaches"), ("letmein123456", "breaches"),
            ] {
                let refused = try await signUp(s, password == "ada-lovelace" ? "ada-lovelace" : "ada", password: password)
                #expect(refused.status == 400, "\(password): \(refused.text)")
                let error = refused.object["error"] as? [String: Any]
                #expect(error?["field"] as? String == "password")
                #expect((error?["message"] as? String)?.contains(reason) == true, "\(password): \(refused.text)")
            }
            // Only lower-case letters and spaces: fine.
            #expect(try await signUp(s, "ada", password: "plain lower case words").status == 202)
            #expect(try await signUp(s, "bea", password: "twelve chars").status == 202)
        }
    }

    @Test("the breached list: loaded and counted when the file is there; an absent file skips the check and the log says so")
    func breachedListLoading() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let records = RecordedLog()
        let logger = Logger(label: "test") { _ in records }
        var configuration = AccountsConfiguration()
        configuration.breachedPasswordsFile = scratch.path("absent.txt")
        let none = try TrackMeServer.passwordRules(configuration, logger: logger)
        #expect(!none.checksBreaches)
        #expect(none.problem("correct horse battery staple", username: "ada", displayName: "Ada") == nil)
        #expect(records.messages.contains { $0.hasPrefix("warning breached-password check skipped") }, "\(records.messages)")

        try "hunter2hunter2\n".write(toFile: scratch.path("list.txt"), atomically: true, encoding: .utf8)
        configuration.breachedPasswordsFile = scratch.path("list.txt")
        let rules = try TrackMeServer.passwordRules(configuration, logger: logger)
        #expect(rules.checksBreaches && rules.breachedCount == 1)
        #expect(rules.problem("HUNTER2hunter2", username: "ada", displayName: "Ada") != nil)
        #expect(rules.problem("hunter2hunter3", username: "ada", displayName: "Ada") == nil)
        #expect(records.messages.contains { $0.hasPrefix("info breached-password list loaded") })
    }

    // MARK: - Reset

    @Test(
        "reset: the same answer for a known and an unknown name; the link sets a new password once and ends every session",
        arguments: Backend.enabled
    )
    func reset(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            try await Self.createAccount(s, "dana", email: "dana@example.org")
            try await Self.createAccount(s, "noaddress", email: nil)
            let session = try await s.signIn("dana")
            let known = try await s.client.send("POST", "/v1/password-reset", json: ["username": "dana"])
            let unknown = try await s.client.send("POST", "/v1/password-reset", json: ["username": "nobody"])
            let noAddress = try await s.client.send("POST", "/v1/password-reset", json: ["username": "noaddress"])
            let byEmail = try await s.client.send("POST", "/v1/password-reset", json: ["email": "nobody@example.org"])
            #expect(known.status == 202)
            #expect([unknown, noAddress, byEmail].allSatisfy { $0.status == known.status && $0.text == known.text }, "\(unknown.text)")
            let sent = await Self.notices(s, scratch)
            #expect(sent.map { $0[0] + " " + $0[1] } == ["password_reset dana"], "\(sent)")
            let token = try await Self.token(s, scratch, "password_reset", "dana")
            #expect(sent.first?[3].contains("/account/reset#") == true)

            // A refused password leaves the link as it was.
            let weak = try await s.client.send("POST", "/v1/password-reset/confirm", json: ["token": token, "password": "short"])
            #expect(weak.status == 400)
            #expect(try await s.signIn("dana").csrf.isEmpty == false, "the old password still works")

            let done = try await s.client.send("POST", "/v1/password-reset/confirm", json: ["token": token, "password": "a new long passphrase"])
            #expect(done.status == 200, "\(done.text)")
            #expect(try await s.page("GET", "/v1/session", session).status == 401, "every session ended")
            #expect(try await signIn(s, "dana", "correct horse").status == 401)
            #expect(try await signIn(s, "dana", "a new long passphrase").status == 200)

            let twice = try await s.client.send("POST", "/v1/password-reset/confirm", json: ["token": token, "password": "yet another passphrase"])
            #expect(twice.status == 410)
            #expect(Self.code(twice) == "link_used")
            #expect(try await signIn(s, "dana", "a new long passphrase").status == 200, "nothing changed")
        }
    }

    @Test("reset links tampered with or expired are refused with a clear error and change nothing", arguments: Backend.enabled)
    func resetRefused(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            try await Self.createAccount(s, "dana", email: "dana@example.org")
            try await Self.createAccount(s, "erik", email: "erik@example.org")
            #expect(try await s.client.send("POST", "/v1/password-reset", json: ["email": "DANA@example.org"]).status == 202)
            let token = try await Self.token(s, scratch, "password_reset", "dana")

            // Another account's id in the signed fields, a changed MAC, a contact's link.
            let parts = token.split(separator: ".").map(String.init)
            var fields = try #require(ContactLink.unbase64url(parts[0]).map { String(decoding: $0, as: UTF8.self) }).split(separator: "\n").map(
                String.init
            )
            let erik = try #require(try await s.server.store.account(username: "erik"))
            fields[3] = erik.id
            let forgedPayload = ContactLink.base64url(Array(fields.joined(separator: "\n").utf8)) + "." + parts[1]
            let flipped = parts[0] + "." + String(parts[1].dropLast()) + (parts[1].hasSuffix("0") ? "1" : "0")
            let contactKey = s.server.configuration.console.contactLinkKey
            let contact = ContactLink(alertID: "a1", contactIndex: 0, expiresMilliseconds: TestServer.startWall + 60_000, nonce: "n").token(
                key: contactKey
            )
            for bad in [forgedPayload, flipped, contact, "", "garbage"] {
                let refused = try await s.client.send(
                    "POST",
                    "/v1/password-reset/confirm",
                    json: ["token": bad, "password": "a new long passphrase"]
                )
                #expect(refused.status == 403, "\(bad): \(refused.text)")
                #expect(Self.code(refused) == "invalid_link")
            }
            s.wall.advance(milliseconds: 3600 * 1000)
            let late = try await s.client.send("POST", "/v1/password-reset/confirm", json: ["token": token, "password": "a new long passphrase"])
            #expect(late.status == 410)
            #expect(Self.code(late) == "link_expired")
            #expect(try await signIn(s, "dana", "correct horse").status == 200, "nothing changed")
            #expect(try await signIn(s, "erik", "correct horse").status == 200, "nothing changed")
        }
    }

    @Test("a verification link is not a reset link, and the other way round", arguments: Backend.enabled)
    func purposesKeptApart(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            #expect(try await signUp(s, "ada").status == 202)
            let verify = try await Self.token(s, scratch, "verify_account", "ada")
            let refused = try await s.client.send("POST", "/v1/password-reset/confirm", json: ["token": verify, "password": "a new long passphrase"])
            #expect(refused.status == 403)
            #expect(try await s.client.send("POST", "/v1/sign-up/verify", json: ["token": verify]).status == 200)
        }
    }

    @Test(
        "the store uses a link once, in its transaction: a second use, an expired link, another account's or purpose's are refused",
        arguments: Backend.enabled
    )
    func storeUsesLinkOnce(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let store = s.server.store
            try await Self.createAccount(s, "dana", email: "dana@example.org")
            let dana = try #require(try await store.account(username: "dana"))
            let now = s.wall.now
            let link = AccountLink.make(accountID: dana.id, purpose: .passwordReset, now: now, lifetime: .seconds(60))
            try await store.insertAccountLink(
                StoredAccountLink(
                    id: link.id,
                    accountID: dana.id,
                    purpose: .passwordReset,
                    nonceHash: link.nonceHash,
                    createdMilliseconds: now,
                    expiresMilliseconds: link.expiresMilliseconds
                )
            )
            var otherNonce = link
            otherNonce.nonce = "not the nonce"
            var otherPurpose = link
            otherPurpose.purpose = .verifyAccount
            #expect(try await store.useAccountLink(otherNonce, atMilliseconds: now, newPasswordHash: "h1") == .unknown)
            #expect(try await store.useAccountLink(otherPurpose, atMilliseconds: now, newPasswordHash: nil) == .unknown)
            #expect(try await store.useAccountLink(link, atMilliseconds: link.expiresMilliseconds, newPasswordHash: "h1") == .expired)
            #expect(try await store.account(id: dana.id)?.passwordHash == dana.passwordHash, "nothing changed")
            #expect(try await store.useAccountLink(link, atMilliseconds: now, newPasswordHash: "h2") == .done)
            #expect(try await store.useAccountLink(link, atMilliseconds: now, newPasswordHash: "h3") == .used)
            #expect(try await store.account(id: dana.id)?.passwordHash == "h2")
            #expect(try await store.accountLink(id: link.id)?.usedMilliseconds == now)
        }
    }

    // MARK: - Change of password

    @Test(
        "change of password: needs the current one (wrong: 401, nothing changed); ends the other sessions, keeps this one",
        arguments: Backend.enabled
    )
    func changePassword(backend: Backend) async throws {
        try await Self.with(backend) { s, _ in
            try await Self.createAccount(s, "dana", email: "dana@example.org")
            let here = try await s.signIn("dana")
            let elsewhere = try await s.signIn("dana")
            let wrong = try await s.page(
                "POST",
                "/v1/session/password",
                here,
                json: ["current_password": "not my password", "new_password": "a new long passphrase"]
            )
            #expect(wrong.status == 401)
            #expect(try await s.page("GET", "/v1/session", elsewhere).status == 200, "nothing changed")
            let weak = try await s.page("POST", "/v1/session/password", here, json: ["current_password": "correct horse", "new_password": "short"])
            #expect(weak.status == 400)
            let noCSRF = try await s.page(
                "POST",
                "/v1/session/password",
                here,
                json: ["current_password": "correct horse", "new_password": "a new long passphrase"],
                csrf: false
            )
            #expect(noCSRF.status == 403)
            let bearer = try await s.client.send(
                "POST",
                "/v1/session/password",
                token: TestServer.adminToken,
                json: ["current_password": "x", "new_password": "a new long passphrase"]
            )
            #expect(bearer.status == 403)
            #expect(try await signIn(s, "dana", "correct horse").status == 200, "nothing changed yet")

            let changed = try await s.page(
                "POST",
                "/v1/session/password",
                here,
                json: ["current_password": "correct horse", "new_password": "a new long passphrase"]
            )
            #expect(changed.status == 200, "\(changed.text)")
            #expect(try await s.page("GET", "/v1/session", here).status == 200, "this session stays")
            #expect(try await s.page("GET", "/v1/session", elsewhere).status == 401, "the others end")
            #expect(try await signIn(s, "dana", "correct horse").status == 401)
            #expect(try await signIn(s, "dana", "a new long passphrase").status == 200)
        }
    }

    // MARK: - Wrong passwords

    @Test(
        "the owner is told of a burst of wrong passwords once, when the delay starts, not per attempt; a new burst after a sign-in tells again",
        arguments: Backend.enabled
    )
    func failedSignInsTold(backend: Backend) async throws {
        try await Self.with(backend) { s, scratch in
            try await Self.createAccount(s, "dana", email: "dana@example.org")
            for _ in 0..<4 { #expect(try await signIn(s, "dana", "wrong password").status == 401) }
            #expect(await Self.notices(s, scratch).isEmpty, "four wrong passwords are not yet a burst")
            #expect(try await signIn(s, "dana", "wrong password").status == 401)
            for _ in 0..<3 {
                s.wall.advance(milliseconds: 60_000)
                #expect(try await signIn(s, "dana", "wrong password").status == 401)
            }
            let told = await Self.notices(s, scratch)
            #expect(told.map { $0[0] + " " + $0[1] + " " + $0[2] + " " + $0[4] } == ["failed_sign_ins dana dana@example.org 5"], "\(told)")

            s.wall.advance(milliseconds: 60_000)
            #expect(try await signIn(s, "dana", "correct horse").status == 200)
            for _ in 0..<5 { #expect(try await signIn(s, "dana", "wrong password").status == 401) }
            #expect(await Self.notices(s, scratch).filter { $0[0] == "failed_sign_ins" }.count == 2)
        }
    }

    // MARK: - Pages

    @Test("the account pages are files served with the pages' headers, on the shared head and stylesheet")
    func pages() async throws {
        try await TestServer.with(.sqlite) { s in
            for path in ["/account/sign-up", "/account/verify", "/account/reset", "/account/password"] {
                let page = try await s.client.send("GET", path)
                #expect(page.status == 200)
                #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
                #expect(page.text.contains("/assets/account.js"))
            }
            #expect(try await s.client.send("GET", "/assets/account.js").text.contains("/v1/password-reset/confirm"))
            // One stylesheet for every page, the account pages' rules among them.
            #expect(try await s.client.send("GET", "/assets/trackme.css").text.contains(".account-page"))
            #expect(try await s.client.send("GET", "/account/reset").text.contains("/assets/trackme.css"))
        }
    }

    static func createAccount(_ s: TestServer, _ username: String, email: String?) async throws {
        var body: [String: Any] = ["username": username, "password": "correct horse", "role": "dispatcher"]
        if let email { body["email"] = email }
        let response = try await s.client.send("POST", "/v1/accounts", token: TestServer.adminToken, json: body)
        try #require(response.status == 201, "create account: \(response.text)")
    }
}

/// Messages logged, as `level message`.
final class RecordedLog: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    var messages: [String] { lines.withLock { $0 } }

    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
    subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    func log(event: LogEvent) {
        lines.withLock { $0.append("\(event.level) \(event.message)") }
    }
}
