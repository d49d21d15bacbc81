/// What one principal's exports, GPX tracks, statistics and group figures may read
/// (`ServerLimits.readingsPerPrincipal`): the request's readings (for a group query, the daily
/// summaries it scans: `GroupFigureDesk.cost`) are counted before any is read
/// and charged to the principal's bucket, so that one person asking again and again for years
/// of data waits rather than holding a core and the disk in front of everyone else. The count
/// itself is bounded by the burst: estimating never costs more than the most it may admit.
final class ReadingBudget: Sendable {
    let limit: RateLimit
    private let buckets: RateLimiter

    init(limit: RateLimit) {
        self.limit = limit
        buckets = RateLimiter(limit: limit)
    }

    /// The most a count needs to find: beyond the burst every cost is charged as the burst.
    var countCeiling: Int64 { Int64(max(1, limit.burst)) }

    /// The principal's key: the account, so that signing in again does not refill it; a
    /// program's token otherwise.
    static func key(_ principal: Principal) -> String {
        principal.accountID.map { "account:\($0)" } ?? "token:\(principal.tokenID)"
    }

    /// Charges `readings` to the principal, or throws 429 with `Retry-After` (nothing charged).
    func charge(_ readings: Int64, to principal: Principal, now: Int64) throws {
        switch buckets.take(Self.key(principal), cost: Double(readings), now: now) {
        case .allowed:
            return
        case .refused(let seconds):
            throw APIError.tooManyRequests(
                "this request would read \(readings) readings, more than is left of your budget of \(limit.burst) "
                    + "(refilled at \(Int(limit.perSecond * 60)) a minute): try again in \(seconds) s, or ask for a shorter span",
                retryAfterSeconds: seconds
            )
        }
    }
}
