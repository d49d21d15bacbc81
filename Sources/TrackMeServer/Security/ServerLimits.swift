import Foundation

/// How many requests a key (a peer address, a token, a device's new alerts) may make: a bucket
/// of `burst` requests, refilled at `perSecond`.
public struct RateLimit: Hashable, Sendable {
    public var burst: Int
    public var perSecond: Double

    public init(burst: Int, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }
}

/// What one connection, one peer and one token may take of the server. The defaults suit a
/// server facing the Internet directly; every value is a `trackme-server` option.
///
/// Behind a reverse proxy every request comes from the proxy's address: raise or switch off
/// (`nil`) the per-address limits there and let the proxy limit per client.
public struct ServerLimits: Hashable, Sendable {
    /// A connection with no request in progress (new, or kept alive after a response) is closed
    /// when no complete request head arrived for this long. Bounds a slowloris header too: the
    /// clock does not restart with each byte, only with each request.
    public var idleTimeout: Duration
    /// From a request's head to the end of its body: a body trickled in slowly is cut off here.
    public var bodyTimeout: Duration
    /// Open connections from one address; more are closed as soon as they are accepted.
    public var maxConnectionsPerAddress: Int
    /// Open connections in all; past this the server stops accepting until one closes (the
    /// kernel's backlog holds the rest). Keep it under the process's file-descriptor limit.
    public var maxConnections: Int
    /// Requests from one peer address; `nil` for none.
    public var requestsPerAddress: RateLimit?
    /// Requests with one bearer token id; `nil` for none.
    public var requestsPerToken: RateLimit?
    /// New alerts (`update_seq` 0) from one device. Past it the device is told to retry later
    /// (429, which it honours) and the flood is one `alert_flood` event on the feed.
    public var alertRaisesPerDevice: RateLimit?
    /// Sign-in attempts (`POST /v1/session`) from one address, right or wrong; `nil` for none.
    public var signInsPerAddress: RateLimit? = RateLimit(burst: 30, perSecond: 0.5)
    /// Organisations registering (`POST /v1/organisations`, no token) from one address.
    public var registrationsPerAddress: RateLimit? = RateLimit(burst: 3, perSecond: 1.0 / 600)
    /// Wrong passwords in a row after which an account takes one attempt per `signInDelay`.
    public var failedSignInsBeforeDelay = 5
    public var signInDelay: Duration = .seconds(60)
    /// Threads that hash passwords (bcrypt) at once: half the cores, so a sign-in flood leaves
    /// the rest to device intake; and hashes that may wait for them before a sign-in is a 503.
    public var passwordHashThreads = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
    public var passwordHashQueue = 32
    /// Readings one principal (an account, else a token) may have its exports, GPX tracks and
    /// statistics read: a bucket of `burst` readings refilled at `perSecond`. Each such request
    /// counts the readings it would read (in the store, at most the burst) and is charged that
    /// before it starts; past the budget it is 429 with `Retry-After` and nothing is read. A
    /// request over the whole burst waits for a full bucket. The default lets anyone download
    /// two months of 1 Hz heart rate and positions (six million readings) at once, and then
    /// 600,000 readings a minute; `nil` for none.
    public var readingsPerPrincipal: RateLimit? = RateLimit(burst: 6_000_000, perSecond: 10_000)
    /// Exports, GPX tracks, statistics and group figures running at once in the server (one
    /// per principal): half the cores, the rest stay for device intake.
    public var heavyRequests = max(1, ProcessInfo.processInfo.activeProcessorCount / 2)
    /// Threads that inflate, decode and check device batches: every core but one, so that a
    /// flood of batches leaves a core to alerts; and batches that may wait for them before one
    /// is told to come back (503 with `Retry-After`, which devices honour; they keep the batch).
    public var batchThreads = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
    public var batchQueue = 4096

    public init(
        idleTimeout: Duration = .seconds(30),
        bodyTimeout: Duration = .seconds(30),
        maxConnectionsPerAddress: Int = 32,
        maxConnections: Int = 1024,
        requestsPerAddress: RateLimit? = RateLimit(burst: 600, perSecond: 100),
        requestsPerToken: RateLimit? = RateLimit(burst: 120, perSecond: 20),
        alertRaisesPerDevice: RateLimit? = RateLimit(burst: 10, perSecond: 1.0 / 6)
    ) {
        self.idleTimeout = idleTimeout
        self.bodyTimeout = bodyTimeout
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.maxConnections = maxConnections
        self.requestsPerAddress = requestsPerAddress
        self.requestsPerToken = requestsPerToken
        self.alertRaisesPerDevice = alertRaisesPerDevice
    }

    /// No rate limits (timeouts and connection caps stay): for the simulation, which replays a
    /// day in seconds, and for benchmarks that hammer one loopback address on purpose.
    public static var withoutRateLimits: ServerLimits {
        var limits = ServerLimits()
        limits.requestsPerAddress = nil
        limits.requestsPerToken = nil
        limits.alertRaisesPerDevice = nil
        limits.signInsPerAddress = nil
        limits.registrationsPerAddress = nil
        limits.readingsPerPrincipal = nil
        return limits
    }
}
