/// Who made a request.
struct Principal: Hashable, Sendable {
    var role: Role
    /// The token's public id (`admin` for the configured admin token).
    var tokenID: String
    /// For a device token, the device it speaks for.
    var deviceID: String?
    /// For a signed-in person (session cookie), their account.
    var accountID: String? = nil
    /// The name to record on what they do (`acknowledged_by`, notes).
    var actor: String { accountID.map { "account:\($0)" } ?? tokenID }
}

/// Checks bearer tokens: the admin token from the configuration, device and dispatcher tokens
/// from the store. The row is read on every request (one primary-key lookup), never cached: a
/// revoked (deleted) token is refused on the next request, on every instance sharing the
/// database. The presented secret's hash is compared in constant time.
final class Authenticator: Sendable {
    private let adminHash: String?
    let store: any AuthenticatorStore
    /// Judges session expiry.
    let wallClock: @Sendable () -> Int64

    init(adminToken: String?, store: any AuthenticatorStore, wallClock: @escaping @Sendable () -> Int64 = ServerConfiguration.systemWallClock) {
        adminHash = adminToken.map(ServerDigest.sha256Hex)
        self.store = store
        self.wallClock = wallClock
    }

    /// The principal for an `Authorization` header value, if the token is right and its role is
    /// one of `roles`. Throws 401 for a missing or wrong token, 403 for a right token of another
    /// role.
    func authenticate(_ authorization: String?, roles: Set<Role>) async throws -> Principal {
        let principal = try await identify(authorization)
        guard roles.contains(principal.role) else {
            throw APIError.forbidden("a \(principal.role.rawValue) token may not do this")
        }
        return principal
    }

    /// Whether the token still authenticates (a long-lived stream asks on each wake).
    func isStillValid(_ authorization: String?, roles: Set<Role>) async -> Bool {
        (try? await authenticate(authorization, roles: roles)) != nil
    }

    private func identify(_ authorization: String?) async throws -> Principal {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { throw APIError.unauthorized() }
        let presented = String(authorization.dropFirst("bearer ".count))
        if let adminHash, BearerToken.digestsEqual(ServerDigest.sha256Hex(presented), adminHash) {
            return Principal(role: .admin, tokenID: "admin", deviceID: nil)
        }
        guard let token = BearerToken(authorization: authorization) else { throw APIError.unauthorized() }
        guard let stored = try await store.token(id: token.id) else { throw APIError.unauthorized() }
        guard BearerToken.digestsEqual(token.secretHash, stored.secretHash) else { throw APIError.unauthorized() }
        if let expires = stored.expiresMilliseconds, expires <= wallClock() {
            throw APIError.expiredToken()
        }
        return Principal(role: stored.role, tokenID: stored.id, deviceID: stored.deviceID)
    }
}

/// What telling who made a request reads: the token's row, the session's row with its account,
/// and the expired session it deletes.
protocol AuthenticatorStore: Sendable {
    func token(id: String) async throws -> StoredToken?
    func session(id: String) async throws -> (Session, Account)?
    func deleteSession(id: String) async throws
}
