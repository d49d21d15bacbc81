import Synchronization

/// Who made a request.
struct Principal: Hashable, Sendable {
    var role: Role
    /// The token's public id (`admin` for the configured admin token).
    var tokenID: String
    /// For a device token, the device it speaks for.
    var deviceID: String?
}

/// Checks bearer tokens: the admin token from the configuration, device and dispatcher tokens
/// from the store. Tokens never change once issued, so verified rows are cached (the hash, not
/// the secret); every request still compares the presented secret's hash in constant time.
final class Authenticator: Sendable {
    private let adminHash: String?
    private let store: any ServerStore
    private let cache = Mutex<[String: StoredToken]>([:])

    init(adminToken: String?, store: any ServerStore) {
        adminHash = adminToken.map(SHA256.hexHash)
        self.store = store
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

    private func identify(_ authorization: String?) async throws -> Principal {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { throw APIError.unauthorized() }
        let presented = String(authorization.dropFirst("bearer ".count))
        if let adminHash, BearerToken.digestsEqual(SHA256.hexHash(presented), adminHash) {
            return Principal(role: .admin, tokenID: "admin", deviceID: nil)
        }
        guard let token = BearerToken(authorization: authorization) else { throw APIError.unauthorized() }
        let stored: StoredToken
        if let cached = cache.withLock({ $0[token.id] }) {
            stored = cached
        } else {
            guard let fetched = try await store.token(id: token.id) else { throw APIError.unauthorized() }
            cache.withLock { $0[token.id] = fetched }
            stored = fetched
        }
        guard BearerToken.digestsEqual(token.secretHash, stored.secretHash) else { throw APIError.unauthorized() }
        return Principal(role: stored.role, tokenID: stored.id, deviceID: stored.deviceID)
    }
}
