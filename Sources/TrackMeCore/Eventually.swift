/// A condition that did not hold within its time limit.
public struct ConditionTimeout: Error, CustomStringConvertible {
    public var what: String
    public var limit: Duration
    public var description: String { "\(what): not within \(limit)" }
}

/// Checks `condition` every `interval` on `clock` until it holds, or throws `ConditionTimeout`
/// once `limit` has passed on that clock. The one way tests wait for something another process
/// or task does: they say what they wait for and how long is too long, not how long to sleep.
/// A `VirtualClock` moves only when advanced, so the limit and the checks follow the test's time.
public func eventually(
    _ what: String,
    within limit: Duration,
    every interval: Duration = .milliseconds(20),
    clock: any Clock<Duration> = ContinuousClock(),
    _ condition: () async throws -> Bool
) async throws {
    func wait<C: Clock<Duration>>(on clock: C) async throws {
        let deadline = clock.now.advanced(by: limit)
        while true {
            if try await condition() { return }
            guard clock.now < deadline else { throw ConditionTimeout(what: what, limit: limit) }
            try await clock.sleep(until: min(clock.now.advanced(by: interval), deadline), tolerance: nil)
        }
    }
    try await wait(on: clock)
}
