import Synchronization

/// One token bucket; time is the server's wall clock in ms (a step backwards refills nothing).
struct TokenBucket: Hashable, Sendable {
    var tokens: Double
    var updatedMilliseconds: Int64

    init(limit: RateLimit, now: Int64) {
        tokens = Double(limit.burst)
        updatedMilliseconds = now
    }

    mutating func refill(limit: RateLimit, now: Int64) {
        let elapsed = max(0, now - updatedMilliseconds)
        tokens = min(Double(limit.burst), tokens + Double(elapsed) * limit.perSecond / 1000)
        updatedMilliseconds = max(updatedMilliseconds, now)
    }

    /// Takes one request's token, or says after how many whole seconds one will be there.
    mutating func take(limit: RateLimit, now: Int64) -> RateDecision {
        take(1, limit: limit, now: now)
    }

    /// Takes `cost` tokens at once (a request that costs more than one), or none and says after
    /// how many whole seconds that many will be there. A cost above the burst is charged as the
    /// whole burst: such a request waits for a full bucket and empties it, rather than being
    /// refused for ever.
    mutating func take(_ cost: Double, limit: RateLimit, now: Int64) -> RateDecision {
        refill(limit: limit, now: now)
        let charged = min(max(0, cost), Double(max(1, limit.burst)))
        if tokens >= charged {
            tokens -= charged
            return .allowed
        }
        guard limit.perSecond > 0 else { return .refused(retryAfterSeconds: 3600) }
        let seconds = (charged - tokens) / limit.perSecond
        return .refused(retryAfterSeconds: max(1, Int(seconds.rounded(.up))))
    }

    func isFull(limit: RateLimit) -> Bool { tokens >= Double(limit.burst) }
}

enum RateDecision: Hashable, Sendable {
    case allowed
    case refused(retryAfterSeconds: Int)
}

/// Buckets by key, bounded: past `maxKeys` the full buckets (keys that have been quiet long
/// enough to be back at their burst) are forgotten, which changes no decision.
struct RateLimiterState: Sendable {
    let limit: RateLimit
    let maxKeys: Int
    private(set) var buckets: [String: TokenBucket] = [:]

    init(limit: RateLimit, maxKeys: Int = 100_000) {
        self.limit = limit
        self.maxKeys = maxKeys
    }

    mutating func take(_ key: String, cost: Double = 1, now: Int64) -> RateDecision {
        if buckets.count >= maxKeys, buckets[key] == nil { prune(now: now) }
        var bucket = buckets[key] ?? TokenBucket(limit: limit, now: now)
        let decision = bucket.take(cost, limit: limit, now: now)
        buckets[key] = bucket
        return decision
    }

    private mutating func prune(now: Int64) {
        let limit = self.limit
        buckets = buckets.filter { _, bucket in
            var refilled = bucket
            refilled.refill(limit: limit, now: now)
            return !refilled.isFull(limit: limit)
        }
    }
}

/// The shared, locked form of `RateLimiterState` the middleware uses.
final class RateLimiter: Sendable {
    private let state: Mutex<RateLimiterState>

    init(limit: RateLimit) {
        state = Mutex(RateLimiterState(limit: limit))
    }

    func take(_ key: String, cost: Double = 1, now: Int64) -> RateDecision {
        state.withLock { $0.take(key, cost: cost, now: now) }
    }
}

/// New alerts per device: the bucket of `ServerLimits.alertRaisesPerDevice`, and whether the
/// device is flooding. A flood starts with the first refused alert and ends when the device
/// has been quiet long enough for its bucket to be full again; each flood is told once.
struct AlertFloodState: Sendable {
    enum Decision: Hashable, Sendable {
        case allowed
        /// Refused; `floodStarted` is true for the first refusal of a flood only.
        case refused(retryAfterSeconds: Int, floodStarted: Bool)
    }

    let limit: RateLimit
    private var buckets: [String: TokenBucket] = [:]
    private var flooding: Set<String> = []

    init(limit: RateLimit) {
        self.limit = limit
    }

    mutating func raise(deviceID: String, now: Int64) -> Decision {
        var bucket = buckets[deviceID] ?? TokenBucket(limit: limit, now: now)
        bucket.refill(limit: limit, now: now)
        if bucket.isFull(limit: limit) { flooding.remove(deviceID) }
        let decision = bucket.take(limit: limit, now: now)
        buckets[deviceID] = bucket
        switch decision {
        case .allowed:
            return .allowed
        case .refused(let seconds):
            let started = flooding.insert(deviceID).inserted
            return .refused(retryAfterSeconds: seconds, floodStarted: started)
        }
    }
}

final class AlertFloodGuard: Sendable {
    private let state: Mutex<AlertFloodState>

    init(limit: RateLimit) {
        state = Mutex(AlertFloodState(limit: limit))
    }

    func raise(deviceID: String, now: Int64) -> AlertFloodState.Decision {
        state.withLock { $0.raise(deviceID: deviceID, now: now) }
    }
}
