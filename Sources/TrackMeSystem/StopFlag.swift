import Synchronization

/// Tells a blocking reader on a thread of its own to stop: raised once, when the consumer goes
/// away (a cancelled stream, a closed bearer), and read by the thread between polls, so it ends
/// within one poll timeout. Raising is final.
public final class StopFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    public init() {}

    public func raise() { raised.store(true, ordering: .releasing) }

    public var isRaised: Bool { raised.load(ordering: .acquiring) }
}
