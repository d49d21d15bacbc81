import Synchronization

extension Task {
    /// The task's result, or nil if it has not ended within `limit` on `clock` (the task goes on
    /// either way): for a wait that must not last for ever on a part that may never end, such as
    /// a client library's shutdown, or that may not end when cancelled, such as a blocking call
    /// or a connection pool's lease (a task group would wait for it).
    public func result(
        within limit: Duration,
        on clock: any Clock<Duration> = ContinuousClock()
    ) async -> Result<Success, Failure>? {
        let waiting = Mutex<CheckedContinuation<Result<Success, Failure>?, Never>?>(nil)
        let settle: @Sendable (Result<Success, Failure>?) -> Void = { value in
            waiting.withLock { continuation in
                continuation?.resume(returning: value)
                continuation = nil
            }
        }
        let timer = Mutex<Task<Void, Never>?>(nil)
        let value = await withCheckedContinuation { continuation in
            waiting.withLock { $0 = continuation }
            Task<Void, Never> { settle(await self.result) }
            timer.withLock {
                $0 = Task<Void, Never> {
                    try? await clock.sleep(for: limit, tolerance: nil)
                    settle(nil)
                }
            }
        }
        timer.withLock { $0?.cancel() }
        return value
    }
}
