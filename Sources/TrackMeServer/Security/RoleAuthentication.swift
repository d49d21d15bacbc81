import HTTPTypes
import Hummingbird

/// The door of a room's routes for people and programs: a bearer token, or a browser session
/// (with its CSRF token on anything that changes state), of one of `roles`, or nothing gets in.
/// The principal is put in the request context for the handler (`signedIn()`); no credentials
/// is 401, a credential of another role 403.
struct RoleAuthentication: RouterMiddleware {
    typealias Context = ServerRequestContext
    let authenticator: Authenticator
    let roles: Set<Role>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.principal = try await authenticator.authenticate(request, roles: roles)
        return try await next(request, context)
    }
}

extension ServerRequestContext {
    /// Who a request behind `RoleAuthentication` comes from; 401 anywhere else.
    func signedIn() throws -> Principal {
        guard let principal, principal.role != .device else { throw APIError.unauthorized() }
        return principal
    }
}
