public import TrackMeCore

/// How a `ReadingStore` is set up. The defaults suit a Raspberry Pi with an SD card.
public struct StoreConfiguration: Hashable, Sendable {
    /// The SQLite file. Its directory must exist; `-wal` and `-shm` files sit next to it.
    public var path: String
    /// The most bytes the database's live pages may take (WAL excluded: it is bounded on its
    /// own by `journal_size_limit`). When reached, readings are dropped: ones the server
    /// already has first, then the oldest unsynced ones; never an alert nor the readings within
    /// `alertWindow` of one.
    public var diskBudgetBytes: Int64
    /// Readings taken this close (monotonic time, same boot) to an alert's first critical
    /// observation are never dropped by the budget: they are the alert's evidence.
    public var alertWindow: Duration
    /// What a commit survives once it returns. The agent keeps the default.
    public var durability: CommitDurability
    /// Seals reading bodies, the alert journal and `device_state` values (the device token among
    /// them) with ChaCha20-Poly1305 under this key (`RowCipher`). nil: a store in clear.
    /// A store created with a key needs the same key ever after (`StoreError.Code.wrongKey`,
    /// `.keyMissing`); a store in clear opened with a key is encrypted in place once.
    public var encryptionKey: StoreKey?

    public init(
        path: String,
        diskBudgetBytes: Int64 = 10_000_000,
        alertWindow: Duration = .seconds(300),
        durability: CommitDurability = .powerLoss,
        encryptionKey: StoreKey? = nil
    ) {
        self.encryptionKey = encryptionKey
        self.path = path
        self.diskBudgetBytes = diskBudgetBytes
        self.alertWindow = alertWindow
        self.durability = durability
    }
}
