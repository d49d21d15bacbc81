import Synchronization

/// Wakes the open `/v1/alerts/stream` connections when the feed may have grown.
///
/// The store is the feed's source of truth; a wake-up only says "look again". Local changes wake
/// at once; a periodic tick also wakes every stream, so that events appended by another server
/// instance sharing the PostgreSQL database are found, and so that idle streams send something:
/// the alert feed's `heartbeat` event (how a page knows its connection is alive), a keep-alive
/// comment on people's streams (which is how a vanished client is noticed).
final class FeedNotifier: Sendable {
    enum Wake: Sendable {
        case changed
        case tick
    }

    private struct State {
        var nextID = 0
        var subscribers: [Int: AsyncStream<Wake>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())

    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    func subscribe() -> (id: Int, wakes: AsyncStream<Wake>) {
        let (stream, continuation) = AsyncStream.makeStream(of: Wake.self, bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { s -> Int? in
            if s.finished { return nil }
            s.nextID += 1
            s.subscribers[s.nextID] = continuation
            return s.nextID
        }
        guard let id else {
            continuation.finish()
            return (0, stream)
        }
        return (id, stream)
    }

    func unsubscribe(_ id: Int) {
        let continuation = state.withLock { $0.subscribers.removeValue(forKey: id) }
        continuation?.finish()
    }

    func notify(_ wake: Wake = .changed) {
        let continuations = state.withLock { Array($0.subscribers.values) }
        for continuation in continuations { continuation.yield(wake) }
    }

    /// Ends every stream (graceful shutdown) and refuses new ones.
    func finishAll() {
        let continuations = state.withLock { s -> [AsyncStream<Wake>.Continuation] in
            s.finished = true
            let all = Array(s.subscribers.values)
            s.subscribers.removeAll()
            return all
        }
        for continuation in continuations { continuation.finish() }
    }
}
