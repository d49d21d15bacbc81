/// Time elapsed on an injected clock since the stopwatch was made. The clock's instants stay
/// inside, so a caller holding any clock (an existential too) sees durations only: tests drive
/// it with a virtual clock, production with the continuous one.
public struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration

    public init<C: Clock<Duration>>(_ clock: C) {
        let start = clock.now
        read = { start.duration(to: clock.now) }
    }

    public var elapsed: Duration { read() }
}
