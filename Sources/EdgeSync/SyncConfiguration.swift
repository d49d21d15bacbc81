public import TrackMeCore

/// How a device syncs.
public struct SyncConfiguration: Hashable, Sendable {
    public var deviceID: String
    /// The device token, sent as `Authorization: Bearer TOKEN`.
    public var token: String
    /// At most this many readings per batch.
    public var maxBatchReadings: Int
    /// At most this many bytes of JSON per batch before compression (halved until it fits).
    public var maxBatchBytes: Int
    /// A batch (empty if need be, carrying the heartbeat) goes out at least this often, so the
    /// server can tell a silent device from a quiet one.
    public var heartbeatInterval: Duration
    /// How often an idle lane looks for new work.
    public var pollInterval: Duration
    /// A batch smaller than `maxBatchReadings` waits until this long after the previous batch,
    /// so that a device online in steady state reserves (and fsyncs) a batch every few seconds,
    /// not every second. Full batches, the latest-first batch and alerts never wait.
    public var sendInterval: Duration
    public var backoff: Backoff
    /// After a failure or a restart, send the newest heart rate and fix in a small batch of
    /// their own before resuming the backlog.
    public var latestFirst: Bool

    public init(
        deviceID: String,
        token: String,
        maxBatchReadings: Int = 1000,
        maxBatchBytes: Int = 512 * 1024,
        heartbeatInterval: Duration = .seconds(30),
        pollInterval: Duration = .seconds(1),
        sendInterval: Duration = .seconds(5),
        backoff: Backoff = Backoff.sync,
        latestFirst: Bool = true
    ) {
        self.deviceID = deviceID
        self.token = token
        self.maxBatchReadings = maxBatchReadings
        self.maxBatchBytes = maxBatchBytes
        self.heartbeatInterval = heartbeatInterval
        self.pollInterval = pollInterval
        self.sendInterval = sendInterval
        self.backoff = backoff
        self.latestFirst = latestFirst
    }
}
