import Synchronization

/// Tells a blocking reader on a thread of its own to stop: raised once, when the consumer goes
/// away (a cancelled stream, a closed bearer), and read by the thread between polls, so it ends
/// within one poll timeout. Raising is final; only the first `raise()` returns true, so a stop
/// that must act once (shut a listener down) can be called again safely.
public final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    public init() {}

    @discardableResult
    public func raise() -> Bool { !raised.exchange(true, ordering: .acquiringAndReleasing) }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }
}
