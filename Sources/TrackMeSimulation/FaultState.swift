import Synchronization

/// The faults in force at the current virtual moment, shared with the transport and the strap
/// connector that consult them from other tasks.
final class FaultState: Sendable {
    struct Flags: Sendable {
        var networkDown = false
        var serverErrorStatus: Int?
        var strapOutOfRange = false
    }

    private let flags = Mutex(Flags())

    var current: Flags { flags.withLock { $0 } }

    func update(_ body: (inout Flags) -> Void) {
        flags.withLock { body(&$0) }
    }
}
