/// What a committed transaction of a SQLite file (the agent's store, the server's database)
/// survives once the commit has returned.
public enum CommitDurability: Hashable, Sendable {
    /// The WAL is fsynced at every commit (`synchronous=FULL`): a commit survives a power cut.
    /// The default, and what the agent and a deployed server use.
    case powerLoss
    /// The WAL is written at every commit but not fsynced (`synchronous=NORMAL`): a commit
    /// survives the process being killed, not the machine losing power. For the simulation's
    /// fast mode, which kills the agent but never the power, and where an fsync per trace
    /// second and per batch would make a day of trace take minutes of disk waits.
    case processCrash
}

extension CommitDurability {
    /// The SQLite setting that gives this durability (the device store and the server's file).
    public var synchronousPragma: String {
        switch self {
        case .powerLoss: "PRAGMA synchronous = FULL"
        case .processCrash: "PRAGMA synchronous = NORMAL"
        }
    }
}
