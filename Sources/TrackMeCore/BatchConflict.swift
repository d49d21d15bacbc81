/// The server's 409 answer to a batch it will not take under its key (WIRE.md, "Store epochs
/// and conflicts"): nothing of the batch was stored, and the device must re-base its numbering
/// at or above the floors given before it sends again. Never a silent 200.
public struct BatchConflict: Hashable, Sendable, Codable {
    public struct Reason: RawRepresentable, Hashable, Sendable, Codable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A store epoch the server has not seen for this device, whose numbers are below what
        /// the device's earlier stores used: the device's store started its numbering over.
        public static let storeEpochRebase = Reason(rawValue: "store_epoch_rebase")
        /// The idempotency key is known with other content (a digest of the readings differs).
        public static let idempotencyKeyReused = Reason(rawValue: "idempotency_key_reused")
    }

    public struct Detail: Hashable, Sendable, Codable {
        public var code: Reason
        public var field: String?
        public var message: String

        public init(code: Reason, field: String?, message: String) {
            self.code = code
            self.field = field
            self.message = message
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(code, forKey: .code)
            try c.encode(field, forKey: .field)
            try c.encode(message, forKey: .message)
        }

        enum CodingKeys: String, CodingKey { case code, field, message }
    }

    public var error: Detail
    /// The lowest reading `seq` the device may use from now on (above every one the server
    /// holds for the device).
    public var sequenceFloor: Int64
    /// The lowest `batch_seq` the device may use from now on.
    public var batchSequenceFloor: Int64

    public init(reason: Reason, field: String?, message: String, sequenceFloor: Int64, batchSequenceFloor: Int64) {
        self.error = Detail(code: reason, field: field, message: message)
        self.sequenceFloor = sequenceFloor
        self.batchSequenceFloor = batchSequenceFloor
    }

    enum CodingKeys: String, CodingKey {
        case error
        case sequenceFloor = "seq_floor"
        case batchSequenceFloor = "batch_seq_floor"
    }
}

/// `POST /v1/heartbeats`: the heartbeat alone, sent when the device's store cannot reserve a
/// batch (a full or read-only disk), so that the device is not taken for silent.
public struct HeartbeatMessage: Hashable, Sendable, Codable {
    public var version: Int
    public var deviceID: String
    public var heartbeat: DeviceHeartbeat

    public init(version: Int = SyncBatch.currentVersion, deviceID: String, heartbeat: DeviceHeartbeat) {
        self.version = version
        self.deviceID = deviceID
        self.heartbeat = heartbeat
    }

    enum CodingKeys: String, CodingKey {
        case version
        case deviceID = "device_id"
        case heartbeat
    }
}
