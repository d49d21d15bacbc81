/// A token as listed to an admin: never its secret or hash.
public struct TokenSummary: Codable, Hashable, Sendable {
    public var tokenID: String
    public var role: Role
    public var deviceID: String?
    public var createdMilliseconds: Int64
    /// When it stops working (dispatcher tokens); nil: until revoked.
    public var expiresMilliseconds: Int64? = nil

    enum CodingKeys: String, CodingKey {
        case tokenID = "token_id"
        case role
        case deviceID = "device_id"
        case createdMilliseconds = "created_ms"
        case expiresMilliseconds = "expires_ms"
    }
}

/// The storage side of token revocation and rotation and of the feed events the limits add.
/// Revoking deletes the row: the authenticator reads the row on every request (no cache), so a
/// deleted token is refused on the next request on every instance sharing the database.
protocol TokenLifecycleStore: Sendable {
    /// Tokens in creation order (the id breaking ties) after `after`, at most `limit` (nil: every
    /// one, for the command line).
    func tokens(after: (createdMilliseconds: Int64, tokenID: String)?, limit: Int?) async throws -> [TokenSummary]
    /// Deletes a token; false if there was none.
    func deleteToken(id: String) async throws -> Bool
    /// In one transaction, inserts `replacement` with the role and device of token `id` and
    /// deletes `id`; returns the replaced token, or nil (and changes nothing) if there was none.
    func replaceToken(id: String, with replacement: StoredToken, createdMilliseconds: Int64) async throws -> StoredToken?
    /// Appends one event to the dispatcher feed.
    func appendFeedEvent(kind: String, data: String) async throws
}
