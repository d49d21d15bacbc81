import HTTPTypes

extension TrackMeServer {
    /// Creates a console account (as `POST /v1/accounts` does), for in-process callers such as
    /// `trackme-sim run --serve`. Throws `APIError` for a bad or taken username or password.
    public func createAccount(username: String, password: String, displayName: String, dispatcher: Bool = true) async throws {
        guard Account.isValidUsername(username) else { throw APIError.invalid("username", "1-64 characters of A-Z a-z 0-9 . _ - @") }
        guard PasswordHasher.passwordBytes.contains(password.utf8.count) else { throw APIError.invalid("password", "must be 8-72 bytes") }
        let account = Account(
            id: BearerToken.generate().id,
            username: username,
            displayName: displayName,
            role: dispatcher ? .dispatcher : .admin,
            passwordHash: try await api.passwords.hash(password),
            disabled: false,
            createdMilliseconds: configuration.wallClock()
        )
        guard try await store.insertAccount(account) else {
            throw APIError(status: .conflict, code: .conflict, field: "username", message: "username \(username) is taken")
        }
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

    /// How many clients follow the dispatcher feed now (a console that is open).
    public var feedFollowers: Int { api.notifier.subscriberCount }
}
