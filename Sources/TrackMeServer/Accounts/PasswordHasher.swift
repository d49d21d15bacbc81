import Dispatch
import HummingbirdBcrypt

/// bcrypt (hummingbird-auth's `HummingbirdBcrypt`), run off the cooperative pool: one hash at
/// cost 12 takes a quarter of a second of CPU.
struct PasswordHasher: Sendable {
    /// log2 of the work; 4 is bcrypt's minimum (tests), 12 the default.
    let cost: UInt8
    /// A hash of nothing anyone knows, at the same cost, verified against when the username is
    /// unknown so that an unknown name takes as long to refuse as a wrong password.
    let decoyHash: String

    init(cost: UInt8) {
        self.cost = cost
        decoyHash = Bcrypt.hash("decoy password nobody has", cost: cost)
    }

    /// bcrypt reads at most 72 bytes; longer passwords are refused rather than cut silently.
    static let passwordBytes = 8...72

    func hash(_ password: String) async -> String {
        let cost = self.cost
        return await Self.offPool { Bcrypt.hash(password, cost: cost) }
    }

    func verify(_ password: String, hash: String) async -> Bool {
        await Self.offPool { Bcrypt.verify(password, hash: hash) }
    }

    private static func offPool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }
}
