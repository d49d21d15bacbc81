import GRDB
import Synchronization

/// Fault injection for tests: a full disk or a read-only file system, injected in front of every
/// write transaction (`write`, `writeWithoutFsync`).
extension ReadingStore {
    /// Makes SQLite behave as on a full disk (`SQLITE_FULL` once the file would grow) or a
    /// read-only file system (`SQLITE_READONLY` on every write), or removes either.
    package enum SimulatedFault: Sendable { case none, diskFull, readOnly }

    /// The fault is injected in front of every write transaction, as the error SQLite reports
    /// for it (`SQLITE_FULL`, `SQLITE_READONLY`), so the whole error path from SQLite's result
    /// code up is exercised. (Limiting `max_page_count` alone is not enough: in WAL mode a
    /// commit that fits into free pages still succeeds, where a full disk refuses the WAL append.)
    package func simulate(_ fault: SimulatedFault) throws {
        state.withLock { $0.simulatedFault = fault }
    }

    func injectedFault() throws {
        switch state.withLock({ $0.simulatedFault }) {
        case .none: break
        case .diskFull: throw DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full (simulated)")
        case .readOnly: throw DatabaseError(resultCode: .SQLITE_READONLY, message: "attempt to write a readonly database (simulated)")
        }
    }
}
