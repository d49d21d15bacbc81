#if canImport(Glibc)
import Glibc
#endif

/// The connection caps fitted under the process's open-file limit (`RLIMIT_NOFILE`) at start.
/// Every accepted connection is a descriptor; past the limit `accept` fails for everyone, the
/// database cannot open a file and `/health` starves. The soft limit is first raised as far as
/// the hard one allows; then `maxConnections` is lowered to what is left after the server's own
/// descriptors, and `maxConnectionsPerAddress` so that at least `addressesThatFit` addresses fit
/// under it. Too few left for even that is a refusal to start, saying what to raise.
struct DescriptorBudget: Equatable, Sendable {
    /// Standard streams, the listener, NIO's event loops (an epoll, an eventfd and a timerfd
    /// each), TLS files read at start and on SIGHUP, the contact notifier's pipes.
    static let serverOwn = 32
    /// SQLite: the writer, the readers and the token reader, each with the database and its WAL
    /// open, and the shared-memory index. PostgreSQL: the client's pool.
    static let sqliteConnections = 16
    static let postgresConnections = 32
    static let addressesThatFit = 8
    static let fewestConnections = 16

    var limits: ServerLimits
    /// What was lowered and why, for the warning at start; empty when nothing was.
    var changes: [String]

    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    static func fit(_ limits: ServerLimits, fileLimit: Int, postgres: Bool) throws(Refusal) -> DescriptorBudget {
        let reserved = serverOwn + (postgres ? postgresConnections : sqliteConnections)
        let room = fileLimit - reserved
        guard room >= fewestConnections else {
            throw Refusal(
                description: "the open-file limit is \(fileLimit) and the server needs \(reserved) of them for itself, which leaves "
                    + "fewer than \(fewestConnections) connections: raise it (`ulimit -n`, or LimitNOFILE= in the systemd unit)"
            )
        }
        var fitted = limits
        var changes: [String] = []
        if fitted.maxConnections > room {
            changes.append("max connections \(fitted.maxConnections) -> \(room) (open-file limit \(fileLimit), \(reserved) kept for the server)")
            fitted.maxConnections = room
        }
        let perAddress = max(1, fitted.maxConnections / addressesThatFit)
        if fitted.maxConnectionsPerAddress > perAddress {
            changes.append(
                "max connections per address \(fitted.maxConnectionsPerAddress) -> \(perAddress) (so that \(addressesThatFit) addresses fit)"
            )
            fitted.maxConnectionsPerAddress = perAddress
        }
        return DescriptorBudget(limits: fitted, changes: changes)
    }

    /// The soft open-file limit after raising it toward the hard one as far as `wanted`; nil if
    /// it cannot be read.
    static func raiseFileLimit(toward wanted: Int) -> Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        let wantedLimit = rlim_t(max(0, wanted))
        if limit.rlim_cur < wantedLimit, limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = min(wantedLimit, limit.rlim_max)
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }
}
