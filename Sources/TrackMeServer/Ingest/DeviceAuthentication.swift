import HTTPTypes
import Hummingbird
import TrackMeCore

/// The door of the ingest room: a device token, or nothing gets in. The device's principal is
/// put in the request context for the handler (`authenticatedDevice()`); a missing or wrong
/// token is 401, a token of another role 403.
struct DeviceAuthentication: RouterMiddleware {
    typealias Context = ServerRequestContext
    let authenticator: Authenticator
    let store: any IngestStore
    /// Whether a token of an erased device is answered with 410 `device_erased` and the wipe
    /// order (where the device syncs, so that it learns to wipe its store) instead of 401.
    let answersWipeOrders: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let principal: Principal
        do {
            principal = try await authenticator.authenticate(request.headers[.authorization], roles: [.device])
        } catch let error as APIError where error.status == .unauthorized && answersWipeOrders {
            if let answer = try await wipeOrderResponse(request) { return answer }
            throw error
        }
        var context = context
        context.principal = principal
        return try await next(request, context)
    }

    /// For a token the server no longer knows: 410 `device_erased` with a wipe order when the
    /// token belonged to an erased device, else nil.
    private func wipeOrderResponse(_ request: Request) async throws -> Response? {
        guard let token = BearerToken(authorization: request.headers[.authorization] ?? "") else { return nil }
        guard let ordered = try await store.wipeOrder(tokenDigest: WipeOrderDigest.of(tokenID: token.id, secretHash: token.secretHash)) else {
            return nil
        }
        return try json(
            .gone,
            ErasedDeviceAnswer(
                error: .init(code: "device_erased", message: "this device's person asked for their data to be erased: wipe the store and stop"),
                orders: SyncOrders(wipe: WipeOrder(orderedMilliseconds: ordered))
            )
        )
    }
}

extension ServerRequestContext {
    /// The device a request behind `DeviceAuthentication` comes from; 401 anywhere else.
    func authenticatedDevice() throws -> Principal {
        guard let principal, principal.role == .device else { throw APIError.unauthorized() }
        return principal
    }
}

struct ErasedDeviceAnswer: Codable, Sendable {
    struct Body: Codable, Sendable {
        var code: String
        var message: String
    }
    var error: Body
    var orders: SyncOrders
}
