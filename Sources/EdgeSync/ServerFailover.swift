import Synchronization

/// Which of several server URLs the agent sends to (`server.url`, then `server.urls`).
/// Pure: it is told what happened and when, and says where to send next.
///
/// A connection failure or a 5xx answer moves to the next URL (round the list); any other
/// answer (2xx, and 4xx, which another instance of the same service would give alike) stays.
/// Away from the first URL, the policy goes back to it after `returnAfter`: the first is the
/// one the operator prefers (the nearest, the one not in maintenance), and it is tried again
/// instead of staying on a fallback for ever. Batches are keyed (`Idempotency-Key`), so sending
/// one again to another instance of the same database stores it once.
public struct ServerFailoverPolicy: Hashable, Sendable {
    public enum Outcome: Hashable, Sendable {
        /// An answer the server stands by (2xx, 4xx).
        case answered
        /// No answer (connection refused, reset, timeout) or a 5xx.
        case failed
    }

    public let count: Int
    public let returnAfter: Duration
    /// The URL in use.
    public private(set) var current = 0
    /// When to go back to the first URL; nil while on it.
    public private(set) var returnAt: Duration?

    public init(count: Int, returnAfter: Duration = .seconds(300)) {
        self.count = max(1, count)
        self.returnAfter = returnAfter
    }

    /// The URL to send to at `now` (a monotonic time); going back to the first is decided here.
    public mutating func target(now: Duration) -> Int {
        if let returnAt, now >= returnAt {
            current = 0
            self.returnAt = nil
        }
        return current
    }

    /// What the send to `index` gave at `now`. A failure of a URL no longer current (two sends
    /// in flight at once) does not move the list again.
    public mutating func receive(_ outcome: Outcome, from index: Int, now: Duration) {
        guard outcome == .failed, index == current, count > 1 else { return }
        current = (current + 1) % count
        returnAt = current == 0 ? nil : (returnAt ?? now + returnAfter)
    }

    /// 5xx and no answer fail over; the rest is the server's answer.
    public static func outcome(status: Int) -> Outcome { status >= 500 ? .failed : .answered }
}

/// `HTTPTransport` over several servers: each POST goes to the policy's current URL and, on a
/// connection failure or a 5xx, at once to the next (each URL at most once per POST), so the
/// sync engine sees an instance's death as a slower answer, not as a failed batch. When every
/// URL fails the last failure is returned as it was (an error, or the 5xx answer).
public final class FailoverTransport: HTTPTransport {
    private let transports: [any HTTPTransport]
    private let policy: Mutex<ServerFailoverPolicy>
    private let now: @Sendable () -> Duration

    /// - Parameters:
    ///   - transports: one per URL, in the configured order (`server.url` first).
    ///   - now: monotonic time for going back to the first URL (`ContinuousClock` in the agent).
    public init(transports: [any HTTPTransport], returnAfter: Duration = .seconds(300), now: @escaping @Sendable () -> Duration) {
        self.transports = transports
        policy = Mutex(ServerFailoverPolicy(count: transports.count, returnAfter: returnAfter))
        self.now = now
    }

    /// The index of the URL the next POST goes to.
    public var currentIndex: Int { policy.withLock { $0.current } }

    public func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        var last: Result<HTTPResponse, SyncError> = .failure(SyncError(code: .transport, message: "no server URL"))
        var tried = Set<Int>()
        while !transports.isEmpty {
            let index = policy.withLock { $0.target(now: now()) }
            guard tried.insert(index).inserted else { break }
            let outcome: ServerFailoverPolicy.Outcome
            do {
                let response = try await transports[index].post(path: path, headers: headers, body: body)
                last = .success(response)
                outcome = ServerFailoverPolicy.outcome(status: response.status)
            } catch {
                last = .failure(error)
                outcome = .failed
            }
            policy.withLock { $0.receive(outcome, from: index, now: now()) }
            if outcome == .answered { break }
        }
        return try last.get()
    }
}
