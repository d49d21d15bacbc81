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

extension Task where Failure == Never {
    /// `operation`'s value, run in a task of its own, or nil when it has not ended within `limit`
    /// on `clock`: that task is then cancelled and not waited for, so that work which does not end
    /// when cancelled (a blocking call, a connection pool's lease) cannot hold the caller past its
    /// limit. Cancelling the caller cancels the task too.
    public static func value(
        within limit: Duration,
        on clock: any Clock<Duration> = ContinuousClock(),
        _ operation: @escaping @Sendable () async -> Success
    ) async -> Success? {
        let task = Task { await operation() }
        let result = await withTaskCancellationHandler {
            await task.result(within: limit, on: clock)
        } onCancel: {
            task.cancel()
        }
        guard let result else {
            task.cancel()
            return nil
        }
        return result.get()
    }
}
