import GRDB
import HTTPTypes

#if PostgreSQL
import PostgresNIO
#endif

/// A database failure a request cannot fix by being sent differently, answered with 503 (and
/// `Retry-After`) instead of 500 `internal`: a damaged file is `database_damaged` and is
/// remembered for `/health`; a full disk, a read-only file or database, a standby, or a
/// PostgreSQL that went away is `unavailable`.
enum StoreFailures {
    /// Seconds a client is told to wait before it sends again.
    static let retryAfterSeconds = 30

    static func answer(for error: any Error, health: DatabaseHealth) -> APIError? {
        if let error = error as? DatabaseError {
            switch error.resultCode {
            case .SQLITE_CORRUPT, .SQLITE_NOTADB:
                let problem = "SQLite: \(error.message ?? "database disk image is malformed")"
                if health.databaseProblem == nil { health.databaseProblem = problem }
                return APIError(status: .serviceUnavailable, code: .databaseDamaged, message: "\(DatabaseHealth.whatToDo) (\(problem))")
            case .SQLITE_FULL:
                return unavailable("the server's disk is full: nothing was stored")
            case .SQLITE_READONLY, .SQLITE_IOERR, .SQLITE_CANTOPEN:
                return unavailable("the server cannot write its database (\(error.message ?? "\(error.resultCode)")): nothing was stored")
            default:
                return nil
            }
        }
        #if PostgreSQL
        if let error = error as? PSQLError {
            switch error.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
                return unavailable("the database is not reachable: nothing was stored")
            case .server:
                let state = error.serverInfo?[.sqlState] ?? ""
                // 08: connection exception, 53: insufficient resources (disk full), 57P: shut
                // down or starting, 25006: read-only transaction (a standby).
                if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state == "25006" {
                    return unavailable("the database cannot take writes now (SQLSTATE \(state)): nothing was stored")
                }
                return nil
            default:
                return nil
            }
        }
        #endif
        return nil
    }

    private static func unavailable(_ message: String) -> APIError {
        var error = APIError(status: .serviceUnavailable, code: .unavailable, message: message)
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }
}
