import Foundation
import HTTPTypes
import HummingbirdBcrypt
import TrackMeCore

/// bcrypt (hummingbird-auth's `HummingbirdBcrypt`) on threads of its own: one hash at cost 12
/// takes a quarter of a second of CPU, so a flood of sign-ins must not take the cores that
/// device intake runs on. At most `threads` hashes run at once, at a lower CPU priority than
/// everything else in the process; at most `queueLimit` wait; past that a sign-in is told to come
/// back (503 with `Retry-After`) without costing a hash.
struct PasswordHasher: Sendable {
    /// log2 of the work; 4 is bcrypt's minimum (tests), 12 the default.
    let cost: UInt8
    /// A hash of nothing anyone knows, at the same cost, verified against when the username is
    /// unknown so that an unknown name takes as long to refuse as a wrong password.
    let decoyHash: String
    /// The hashing threads and their queue.
    let pool: WorkPool

    /// Nice value of the hashing threads (Linux's nice is per thread): intake preempts them.
    static let niceness: Int32 = 10

    init(cost: UInt8, threads: Int, queueLimit: Int) {
        self.cost = cost
        decoyHash = Bcrypt.hash("decoy password nobody has", cost: cost)
        pool = WorkPool(threads: threads, queueLimit: queueLimit, niceness: Self.niceness)
    }

    /// bcrypt reads at most 72 bytes; longer passwords are refused rather than cut silently.
    static let passwordBytes = 8...72

    func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await run { Bcrypt.hash(password, cost: cost) }
    }

    func verify(_ password: String, hash: String) async throws -> Bool {
        try await run { Bcrypt.verify(password, hash: hash) }
    }

    /// Hashes waiting or running now (for tests and `/metrics`).
    var inFlight: Int { pool.inFlight }

    private func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws -> T {
        var busy = APIError(status: .serviceUnavailable, code: .unavailable, message: "too many sign-ins at once: try again shortly")
        busy.retryAfterSeconds = 1
        return try await pool.run(busy: busy, work)
    }
}
