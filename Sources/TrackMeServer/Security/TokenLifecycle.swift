import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// A rotated token: the new one, shown only this once, and what it speaks for.
public struct RotatedToken: Codable, Hashable, Sendable {
    public var replacedTokenID: String
    public var tokenID: String
    public var token: String
    public var role: Role
    public var deviceID: String?
    /// When the new token stops working (dispatcher tokens); nil: until revoked.
    public var expiresMilliseconds: Int64?

    enum CodingKeys: String, CodingKey {
        case replacedTokenID = "replaced_token_id"
        case tokenID = "token_id"
        case token, role
        case deviceID = "device_id"
        case expiresMilliseconds = "expires_ms"
    }
}

struct RevokedToken: Codable, Hashable, Sendable {
    var tokenID: String
    var revoked: Bool

    enum CodingKeys: String, CodingKey {
        case tokenID = "token_id"
        case revoked
    }
}

/// Revocation and rotation, one code path for the admin API and the `trackme-server token` CLI.
extension ServerAdministration {
    /// Every token (the command line's list).
    func tokens() async throws -> [TokenSummary] {
        try await store.tokens(after: nil, limit: nil)
    }

    /// Refused from the next request on, on every instance (the authenticator reads the store).
    func revokeToken(id: String) async throws {
        guard try await store.deleteToken(id: id) else { throw APIError.notFound("no token \(id)") }
    }

    /// A new token for the same role and device; the old one is refused from now on.
    func rotateToken(id: String) async throws -> RotatedToken {
        let token = BearerToken.generate()
        let now = wallClock()
        // A dispatcher's new token gets a full lifetime from now; a device's has no expiry.
        let expires = dispatcherTokenLifetime.map { now + $0.milliseconds }
        let replacement = StoredToken(id: token.id, secretHash: token.secretHash, role: .dispatcher, deviceID: nil, expiresMilliseconds: expires)
        guard let old = try await store.replaceToken(id: id, with: replacement, createdMilliseconds: now) else {
            throw APIError.notFound("no token \(id)")
        }
        return RotatedToken(
            replacedTokenID: id,
            tokenID: token.id,
            token: token.text,
            role: old.role,
            deviceID: old.deviceID,
            expiresMilliseconds: old.role == .dispatcher ? expires : nil
        )
    }
}

/// `GET /v1/tokens`, `POST /v1/tokens/{id}/revoke`, `POST /v1/tokens/{id}/rotate` (admin).
struct TokenRoutes: Sendable {
    let room: AccessRoom

    func register(on doors: RouteAccess.Doors) {
        let room = self.room
        doors.on(.get, "/v1/tokens") { request, _ in
            let page = try PageRequest(request, maxLimit: room.configuration.maxPageSize)
            let after = try page.after.map { try $0.timeAndID() }
            let tokens = try await room.store.tokens(after: after.map { ($0.milliseconds, $0.id) }, limit: page.fetchLimit)
            let cut = page.cut(tokens) { PageCursor(String($0.createdMilliseconds), $0.tokenID) }
            return try json(.ok, TokenList(tokens: cut.rows, next: cut.next))
        }
        doors.on(.post, "/v1/tokens/:id/revoke") { _, context in
            let id = try context.pathID("id")
            try await room.administration.revokeToken(id: id)
            room.services.logger.notice("token revoked", metadata: ["server.token": "\(id)"])
            return try json(.ok, RevokedToken(tokenID: id, revoked: true))
        }
        doors.on(.post, "/v1/tokens/:id/rotate") { _, context in
            let id = try context.pathID("id")
            let rotated = try await room.administration.rotateToken(id: id)
            room.services.logger.notice("token rotated", metadata: ["server.token": "\(id)", "server.new_token": "\(rotated.tokenID)"])
            return try json(.created, rotated)
        }
    }
}

struct TokenList: Codable, Sendable {
    var tokens: [TokenSummary]
    /// The next page (`after`); absent on the last page.
    var next: String?
}
