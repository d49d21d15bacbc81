import Synchronization

/// Group commit across devices (issue 22), for both stores: batches that arrive while a write
/// is in progress wait for it and then go together in the next transaction, so a thousand
/// devices sending at once cost a few commits (and fsyncs) rather than a thousand. Nothing waits
/// on a timer: the first batch of a quiet moment is written at once, alone. The store's `write`
/// runs each batch in a savepoint of its own inside the group's transaction: one that throws is
/// rolled back alone and its caller gets the error; the others commit. A batch is acknowledged
/// (its caller resumed) only after the group's transaction is committed.
final class IngestGroupCommit: Sendable {
    private struct Waiting {
        var batch: IncomingBatch
        var continuation: CheckedContinuation<IngestResult, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writers = 0
        var transactions = 0
    }

    /// Writes one group in one transaction; a result per batch, in order.
    typealias WriteGroup = @Sendable ([IncomingBatch]) async throws -> [Result<IngestResult, any Error>]

    /// At most this many batches in one transaction (bounds one transaction's time and memory).
    let maxGroup: Int
    /// Groups in flight at once: 1 for SQLite (one writer anyway); more for PostgreSQL, whose
    /// cost per batch is round trips more than the commit, so that a quiet moment still writes
    /// batches side by side and only a busy one makes groups.
    let maxWriters: Int
    private let write: WriteGroup
    private let state = Mutex(State())

    /// Transactions written so far (each holds one group).
    var transactions: Int { state.withLock { $0.transactions } }

    init(maxGroup: Int = 512, maxWriters: Int = 1, write: @escaping WriteGroup) {
        self.write = write
        self.maxGroup = maxGroup
        self.maxWriters = max(1, maxWriters)
    }

    func ingest(_ batch: IncomingBatch) async throws -> IngestResult {
        try await withCheckedThrowingContinuation { continuation in
            let startWriter = state.withLock { state -> Bool in
                state.waiting.append(Waiting(batch: batch, continuation: continuation))
                guard state.writers < maxWriters else { return false }
                state.writers += 1
                return true
            }
            if startWriter { Task { await self.writeWhileWaiting() } }
        }
    }

    /// Writes groups until nobody waits.
    private func writeWhileWaiting() async {
        while true {
            let group = state.withLock { state -> [Waiting] in
                let group = Array(state.waiting.prefix(maxGroup))
                state.waiting.removeFirst(group.count)
                if group.isEmpty { state.writers -= 1 } else { state.transactions += 1 }
                return group
            }
            guard !group.isEmpty else { return }
            do {
                let results = try await write(group.map(\.batch))
                for (waiting, result) in zip(group, results) { waiting.continuation.resume(with: result) }
            } catch {
                // The transaction itself failed (disk full, I/O error): nothing of the group is stored.
                for waiting in group { waiting.continuation.resume(throwing: error) }
            }
        }
    }
}
