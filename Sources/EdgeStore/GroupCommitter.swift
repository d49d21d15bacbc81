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
public actor GroupCommitter {
    public let store: ReadingStore
    private let clock: any Clock<Duration>
    private let interval: Duration
    private let maxGroupSize: Int
    private let memoryLimit: Int
    private let onCommit: @Sendable ([Int64]) -> Void
    private var buffer: [NewReading] = []
    /// The last commit failure, cleared by the next successful commit.
    public private(set) var lastError: StoreError?

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
        buffer.append(NewReading(timestamp: timestamp, payload: payload))
        if buffer.count > memoryLimit {
            let excess = buffer.count - memoryLimit
            buffer.removeFirst(excess)
            store.countDroppedInMemory(excess)
        }
        if buffer.count >= maxGroupSize, lastError == nil { flush() }
    }

    /// Readings waiting in memory for a commit.
    public var bufferedCount: Int { buffer.count }

    /// Commits everything buffered now; returns the sequence numbers committed (empty when
    /// nothing was buffered or the store could not write, see `lastError`).
    @discardableResult
    public func flush() -> [Int64] {
        store.retryMemoryAlerts()
        guard !buffer.isEmpty else { return [] }
        do {
            let seqs = try store.append(buffer)
            buffer.removeAll(keepingCapacity: true)
            lastError = nil
            onCommit(seqs)
            return seqs
        } catch {
            lastError = error
            return []
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
