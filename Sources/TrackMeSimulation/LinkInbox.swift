import BlueZHeartRate

/// Buffers the heart-rate link's events, each with the real time it arrived, so the event loop
/// can take them in order and wait for the next one with a real-time limit (a safety net: the
/// loop waits on the event itself, not on time).
actor LinkInbox {
    struct Arrival: Sendable {
        var event: HeartRateEvent
        var at: ContinuousClock.Instant
    }

    private var buffer: [Arrival] = []
    private var head = 0
    private var waiter: (continuation: CheckedContinuation<Arrival?, Never>, deadline: ContinuousClock.Instant)?
    /// One watchdog for the inbox's life rather than a timer per wait: a day of trace waits
    /// some 90,000 times, nearly always for microseconds.
    private var watchdog: Task<Void, Never>?

    func put(_ event: HeartRateEvent) {
        let arrival = Arrival(event: event, at: .now)
        if let waiter {
            self.waiter = nil
            waiter.continuation.resume(returning: arrival)
        } else {
            buffer.append(arrival)
        }
    }

    /// The next event, or nil if none arrives within `limit` of real time.
    func next(limit: Duration) async -> Arrival? {
        if head < buffer.count {
            defer {
                head += 1
                if head == buffer.count {
                    buffer.removeAll(keepingCapacity: true)
                    head = 0
                }
            }
            return buffer[head]
        }
        if watchdog == nil {
            watchdog = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    await self?.expireOverdue()
                }
            }
        }
        return await withCheckedContinuation { continuation in
            waiter = (continuation, .now.advanced(by: limit))
        }
    }

    private func expireOverdue() {
        guard let waiter, waiter.deadline <= .now else { return }
        self.waiter = nil
        waiter.continuation.resume(returning: nil)
    }

    /// Stops the watchdog; a waiter still waiting gets nil.
    func close() {
        watchdog?.cancel()
        watchdog = nil
        if let waiter {
            self.waiter = nil
            waiter.continuation.resume(returning: nil)
        }
    }
}
