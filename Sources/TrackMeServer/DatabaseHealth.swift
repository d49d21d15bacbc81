import Synchronization

/// What the start-up check found in the database, and what the retention job last decided:
/// shown by `/health` and `/metrics`; a database that failed its check refuses ingest.
final class DatabaseHealth: Sendable {
    private struct State {
        var databaseProblem: String?
        var retentionRefusal: String?
        var readiness: StoreReadiness?
    }

    private let state = Mutex(State())

    /// Nil when the database passed its check at start.
    var databaseProblem: String? {
        get { state.withLock { $0.databaseProblem } }
        set { state.withLock { $0.databaseProblem = newValue } }
    }

    /// Nil when the last retention pass ran; else why it refused (a wall clock that jumped).
    var retentionRefusal: String? {
        get { state.withLock { $0.retentionRefusal } }
        set { state.withLock { $0.retentionRefusal = newValue } }
    }

    /// What the last `/health` or `/metrics` probe found; nil before the first.
    var readiness: StoreReadiness? {
        get { state.withLock { $0.readiness } }
        set { state.withLock { $0.readiness = newValue } }
    }

    /// The operator's instruction given with every refused ingest and in `/health`.
    static let whatToDo =
        "the server database failed its integrity check at start: stop the server, keep a copy of the database file, "
        + "restore it from a backup or rebuild it with `sqlite3 FILE .recover`, then start again; devices keep their readings "
        + "and resend them"
}
