import Synchronization

/// Group commit across devices, for both stores: batches that arrive while a write
/// is in progress wait for it and then go together in the next transaction, so a thousand
/// devices sending at once cost a few commits (and fsyncs) rather than a thousand. Nothing waits
/// on a timer: the first batch of a quiet moment is written at once, alone. The store's `write`
/// runs each batch in a savepoint of its own inside the group's transaction: one that throws is
/// rolled back alone and its caller gets the error; the others commit. A batch is acknowledged
/// (its caller resumed) only after the group's transaction is committed.
final class IngestGroupCommit: Sendable {
    fileprivate struct Waiting: Sendable {
        var batch: IncomingBatch
        var continuation: CheckedContinuation<IngestResult, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var writers = 0
        var transactions = 0
    }

    /// A group taken by a writer: its batches, to be written in one transaction, and their
    /// callers, resumed by `complete` or `fail` once it is committed or not.
    struct Group: Sendable {
        fileprivate let waiting: [Waiting]

        var batches: [IncomingBatch] { waiting.map(\.batch) }

        /// The transaction committed: a result per batch, in order.
        func complete(_ results: [Result<IngestResult, any Error>]) {
            for (waiting, result) in zip(waiting, results) { waiting.continuation.resume(with: result) }
        }

        /// The transaction itself failed (disk full, I/O error): nothing of the group is stored.
        func fail(_ error: any Error) {
            for waiting in waiting { waiting.continuation.resume(throwing: error) }
        }
    }

    /// Starts a writer: it takes groups with `nextGroup()` and writes each, until `nextGroup()`
    /// says nobody waits. SQLite's runs on GRDB's writer queue itself (a batch then costs two
    /// thread wake-ups, to the writer and back, not four through a task); PostgreSQL's is a task.
    typealias StartWriter = @Sendable (IngestGroupCommit) -> Void

    /// Writes one group in one transaction; a result per batch, in order.
    typealias WriteGroup = @Sendable ([IncomingBatch]) async throws -> [Result<IngestResult, any Error>]

    /// At most this many batches in one transaction (bounds one transaction's time and memory).
    let maxGroup: Int
    /// At most this many readings in one transaction (a group's first batch is taken whatever
    /// its size). A transaction's time is mostly its rows, and on SQLite an alert written
    /// between two groups waits for the one in progress: bounding the rows bounds that wait,
    /// where 512 batches of a busy moment could be thousands of rows. The price is more commits
    /// (each an fsync) at high load; neither side is measured yet in a release build.
    let maxGroupReadings: Int
    /// Groups in flight at once: 1 for SQLite (one writer anyway); more for PostgreSQL, whose
    /// cost per batch is round trips more than the commit, so that a quiet moment still writes
    /// batches side by side and only a busy one makes groups.
    let maxWriters: Int
    private let startWriter: StartWriter
    private let state = Mutex(State())

    /// Transactions written so far (each holds one group).
    var transactions: Int { state.withLock { $0.transactions } }

    /// Batches waiting for a writer to take them.
    var waitingBatches: Int { state.withLock { $0.waiting.count } }

    init(maxGroup: Int = 512, maxGroupReadings: Int = 2048, maxWriters: Int = 1, startWriter: @escaping StartWriter) {
        self.startWriter = startWriter
        self.maxGroup = maxGroup
        self.maxGroupReadings = max(1, maxGroupReadings)
        self.maxWriters = max(1, maxWriters)
    }

    /// Writers that are tasks awaiting `write` for each group.
    convenience init(maxGroup: Int = 512, maxGroupReadings: Int = 2048, maxWriters: Int = 1, write: @escaping WriteGroup) {
        self.init(maxGroup: maxGroup, maxGroupReadings: maxGroupReadings, maxWriters: maxWriters) { commit in
            Task {
                while let group = commit.nextGroup() {
                    do {
                        group.complete(try await write(group.batches))
                    } catch {
                        group.fail(error)
                    }
                }
            }
        }
    }

    func ingest(_ batch: IncomingBatch) async throws -> IngestResult {
        try await withCheckedThrowingContinuation { continuation in
            let needsWriter = state.withLock { state -> Bool in
                state.waiting.append(Waiting(batch: batch, continuation: continuation))
                guard state.writers < maxWriters else { return false }
                state.writers += 1
                return true
            }
            if needsWriter { startWriter(self) }
        }
    }

    /// For a writer: the next group, or nil when nobody waits (the writer then ends; a batch
    /// arriving after that starts another).
    func nextGroup() -> Group? {
        state.withLock { state -> Group? in
            var count = 0
            var readings = 0
            for waiting in state.waiting.prefix(maxGroup) {
                readings += waiting.batch.readings.count
                if count > 0, readings > maxGroupReadings { break }
                count += 1
            }
            let group = Array(state.waiting.prefix(count))
            state.waiting.removeFirst(count)
            if group.isEmpty {
                state.writers -= 1
                return nil
            }
            state.transactions += 1
            return Group(waiting: group)
        }
    }
}
