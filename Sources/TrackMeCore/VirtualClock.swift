import Synchronization

/// A clock that moves only when told to, for tests and the simulation's virtual time.
///
/// Components take `any Clock<Duration>`; production passes `ContinuousClock`, tests pass this
/// and call `advance(by:)`. Sleepers wake in deadline order as time passes their deadline.
/// Modelled on swift-clocks' `TestClock` (that package is not in the local list: its
/// issue-reporting dependency is not available here).
public final class VirtualClock: Clock, @unchecked Sendable {
    public struct Instant: InstantProtocol, Hashable, Sendable {
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var id: UInt64
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
    }

    // `@unchecked Sendable` is sound: all mutable state is inside this Mutex.
    private let state: Mutex<State>

    public init(now: Instant = Instant(offset: .zero)) {
        state = Mutex(State(now: now))
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// The number of tasks currently sleeping on this clock: tests wait for it to reach the
    /// expected count before advancing, instead of sleeping on the real clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s -> UInt64 in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                // A task cancelled before it got here has already run `onCancel` (which found no
                // sleeper to remove): it must not wait. Checked under the lock, so a cancel that
                // comes later finds the sleeper.
                enum Outcome { case sleep, wake, cancelled }
                let outcome = state.withLock { s -> Outcome in
                    if Task.isCancelled { return .cancelled }
                    if deadline <= s.now { return .wake }
                    s.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return .sleep
                }
                switch outcome {
                case .sleep: break
                case .wake: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let cancelled = state.withLock { s -> Sleeper? in
                guard let index = s.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return s.sleepers.remove(at: index)
            }
            cancelled?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration`, waking every sleeper whose deadline is reached, in
    /// deadline order.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    public func advance(to instant: Instant) {
        let due = state.withLock { s -> [Sleeper] in
            if instant > s.now { s.now = instant }
            let due = s.sleepers.filter { $0.deadline <= s.now }.sorted { $0.deadline < $1.deadline }
            s.sleepers.removeAll { $0.deadline <= s.now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Waits, without real sleeping, until at least `count` tasks sleep on this clock.
    public func waitForSleepers(_ count: Int = 1) async {
        while sleeperCount < count { await Task.yield() }
    }
}
