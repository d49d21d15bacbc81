import HTTPTypes
import Hummingbird

/// The session cookie and the CSRF header.
enum SessionCookie {
    static let name = "trackme_session"
    static let csrfHeader = HTTPField.Name("X-CSRF-Token") ?? .contentLocation

    static func make(_ value: String, maxAgeSeconds: Int, secure: Bool) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAgeSeconds, path: "/", secure: secure, httpOnly: true, sameSite: .strict)
    }

    static func cleared(secure: Bool) -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/", secure: secure, httpOnly: true, sameSite: .strict)
    }
}

extension Authenticator {
    /// The principal of a request, by its bearer token (programs: devices, dispatcher tokens,
    /// the admin token) or else by its session cookie (people in a browser). One check for both,
    /// so whatever is revoked is refused on every route.
    ///
    /// With a cookie, a request that changes state (anything but GET and HEAD) must carry the
    /// session's CSRF token in `X-CSRF-Token`: 403 `csrf` without it. A bearer token is never sent
    /// by a browser on its own, so it needs none.
    func authenticate(_ request: Request, roles: Set<Role>) async throws -> Principal {
        if let authorization = request.headers[.authorization] {
            return try await authenticate(authorization, roles: roles)
        }
        let (session, account) = try await session(of: request)
        switch request.method {
        case .get, .head:
            break
        default:
            guard let presented = request.headers[SessionCookie.csrfHeader],
                BearerToken.digestsEqual(ServerDigest.sha256Hex(presented), ServerDigest.sha256Hex(session.csrfToken))
            else {
                throw APIError(status: .forbidden, code: .csrf, message: "missing or wrong X-CSRF-Token")
            }
        }
        let principal = Principal(role: account.role, tokenID: "session:\(session.id)", deviceID: nil, accountID: account.id)
        guard roles.contains(principal.role) else {
            throw APIError.forbidden("a \(principal.role.rawValue) account may not do this")
        }
        return principal
    }

    /// The live session of the request's cookie and its account: 401 if there is none, it
    /// expired, or the account is disabled.
    func session(of request: Request) async throws -> (Session, Account) {
        guard let value = request.cookies[SessionCookie.name]?.value, let token = BearerToken(authorization: "Bearer \(value)") else {
            throw APIError.unauthorized()
        }
        guard let (session, account) = try await store.session(id: token.id),
            BearerToken.digestsEqual(token.secretHash, session.secretHash)
        else { throw APIError.unauthorized() }
        guard session.expiresMilliseconds > wallClock() else {
            try await store.deleteSession(id: session.id)
            throw APIError(status: .unauthorized, code: .unauthorized, message: "the session expired; sign in again")
        }
        guard !account.disabled else { throw APIError(status: .unauthorized, code: .unauthorized, message: "this account is disabled") }
        return (session, account)
    }
}

extension APIError.Code {
    /// A state change made with a session cookie but without its CSRF token.
    static let csrf = APIError.Code(rawValue: "csrf")
}
