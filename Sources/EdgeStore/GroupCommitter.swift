import Synchronization
public import TrackMeCore

/// Buffers readings in memory and commits them to the store in groups: when `interval` has
/// passed on the injected clock, when `maxGroupSize` readings are waiting, or on `flush()`.
///
/// One commit is one fsync (see `ReadingStore`), so at 1 Hz heart rate and 1 Hz GPS the card
/// sees about one fsync per second instead of two. A reading is acknowledged (durable) only
/// when its commit returns; `onCommit` receives the sequence numbers then.
///
/// While the store cannot write (disk full, read-only, I/O error) readings stay in memory, up
/// to `memoryLimit`; beyond that the oldest are dropped and counted, and the drop count is
/// reported to the server like budget drops. Every tick retries, so the store recovers by
/// itself when space returns. (Checked by hand on a real 600 KB tmpfs: the crash child filled
/// it, the store reported `disk_full` and kept readings in memory, and after the tmpfs was
/// grown with `mount -o remount,size=20m` every buffered reading committed: 23,510 contiguous
/// sequence numbers, `integrity_check` ok. Tests inject the same `SQLITE_FULL` instead, as
/// they cannot rely on mounting file systems.)
///
/// Appending takes a short lock and never waits for a commit: the pipeline hands a reading over
/// without a hop or an fsync in its way. Commits are serialised by a lock of their own, so
/// groups reach the store in the order their readings were appended.
public final class GroupCommitter: Sendable {
    public let store: ReadingStore
    private let clock: any Clock<Duration>
    private let interval: Duration
    private let maxGroupSize: Int
    private let memoryLimit: Int
    private let onCommit: @Sendable ([Int64]) -> Void
    private struct Buffer {
        var readings: [NewReading] = []
        /// The last commit failure, cleared by the next successful commit.
        var lastError: StoreError?

        /// Drops the oldest readings past `limit`; returns how many.
        mutating func trim(to limit: Int) -> Int {
            let excess = max(0, readings.count - limit)
            readings.removeFirst(excess)
            return excess
        }
    }
    private let buffer = Mutex(Buffer())
    /// Held for a whole commit: one group at a time, in order.
    private let committing = Mutex(())

    public init(
        store: ReadingStore,
        clock: any Clock<Duration>,
        interval: Duration = .seconds(1),
        maxGroupSize: Int = 512,
        memoryLimit: Int = 100_000,
        onCommit: @escaping @Sendable ([Int64]) -> Void = { _ in }
    ) {
        self.store = store
        self.clock = clock
        self.interval = interval
        self.maxGroupSize = maxGroupSize
        self.memoryLimit = memoryLimit
        self.onCommit = onCommit
    }

    /// Queues a reading for the next group commit; commits at once when the group is full.
    public func append(_ payload: WireReading.Payload, at timestamp: ReadingTimestamp) {
        let (dropped, full) = buffer.withLock { buffer -> (Int, Bool) in
            buffer.readings.append(NewReading(timestamp: timestamp, payload: payload))
            let excess = buffer.trim(to: memoryLimit)
            return (excess, buffer.readings.count >= maxGroupSize && buffer.lastError == nil)
        }
        if dropped > 0 { store.countDroppedInMemory(dropped) }
        if full { flush() }
    }

    /// Readings waiting in memory for a commit.
    public var bufferedCount: Int { buffer.withLock { $0.readings.count } }

    /// The last commit failure, cleared by the next successful commit.
    public var lastError: StoreError? { buffer.withLock { $0.lastError } }

    /// Commits everything buffered now; returns the sequence numbers committed (empty when
    /// nothing was buffered or the store could not write, see `lastError`).
    @discardableResult
    public func flush() -> [Int64] {
        committing.withLock { _ in
            store.retryMemoryAlerts()
            let group = buffer.withLock { buffer in
                defer { buffer.readings.removeAll(keepingCapacity: true) }
                return buffer.readings
            }
            guard !group.isEmpty else { return [] }
            do throws(StoreError) {
                let seqs = try store.append(group)
                buffer.withLock { $0.lastError = nil }
                onCommit(seqs)
                return seqs
            } catch {
                // Kept, ahead of what came meanwhile, for the next tick to try again.
                let dropped = buffer.withLock { buffer in
                    buffer.readings.insert(contentsOf: group, at: 0)
                    buffer.lastError = error
                    return buffer.trim(to: memoryLimit)
                }
                if dropped > 0 { store.countDroppedInMemory(dropped) }
                return []
            }
        }
    }

    /// Commits on every tick of `interval` until cancelled, then commits what is left.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                break
            }
            flush()
        }
        flush()
    }
}
