import BlueZHeartRate

/// Buffers the heart-rate link's events so the event loop can wait for the next one with a
/// real-time limit (a safety net: the loop waits on the event itself, not on time).
actor LinkInbox {
    private var buffer: [HeartRateEvent] = []
    private var waiter: (id: Int, continuation: CheckedContinuation<HeartRateEvent?, Never>)?
    private var nextID = 0

    func put(_ event: HeartRateEvent) {
        if let waiter {
            self.waiter = nil
            waiter.continuation.resume(returning: event)
        } else {
            buffer.append(event)
        }
    }

    /// The next event, or nil if none arrives within `limit` of real time.
    func next(limit: Duration) async -> HeartRateEvent? {
        if !buffer.isEmpty { return buffer.removeFirst() }
        nextID += 1
        let id = nextID
        return await withCheckedContinuation { continuation in
            waiter = (id, continuation)
            Task {
                try? await Task.sleep(for: limit)
                self.expire(id)
            }
        }
    }

    private func expire(_ id: Int) {
        guard let waiter, waiter.id == id else { return }
        self.waiter = nil
        waiter.continuation.resume(returning: nil)
    }

    /// Drops buffered events (after a crash, the old link's leftovers mean nothing).
    func clear() { buffer.removeAll() }
}
