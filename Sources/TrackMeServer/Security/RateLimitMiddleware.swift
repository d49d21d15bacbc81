import CoreMetrics
import HTTPTypes
import Hummingbird

/// 429 with `Retry-After` past the per-address or the per-token limit (`ServerLimits`). Runs
/// before authentication: a token id is limited whether or not its secret is right, so guessing
/// costs the guesser, and the address limit covers requests with no token at all.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let perAddress: RateLimiter?
    let perToken: RateLimiter?
    let metrics: ServerMetrics
    let wallClock: @Sendable () -> Int64

    init(limits: ServerLimits, metrics: ServerMetrics, wallClock: @escaping @Sendable () -> Int64) {
        perAddress = limits.requestsPerAddress.map(RateLimiter.init(limit:))
        perToken = limits.requestsPerToken.map(RateLimiter.init(limit:))
        self.metrics = metrics
        self.wallClock = wallClock
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let now = wallClock()
        if let perAddress, case .refused(let seconds) = perAddress.take(context.peerKey, now: now) {
            metrics.rateLimited.increment()
            throw APIError.tooManyRequests("too many requests from this address", retryAfterSeconds: seconds)
        }
        if let perToken, let token = BearerToken(authorization: request.headers[.authorization]),
            case .refused(let seconds) = perToken.take(token.id, now: now)
        {
            metrics.rateLimited.increment()
            throw APIError.tooManyRequests("too many requests with this token", retryAfterSeconds: seconds)
        }
        return try await next(request, context)
    }
}
