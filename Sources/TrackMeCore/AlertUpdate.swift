/// A message to `POST /v1/alerts`: a new alert, a position update while it is open, a cancel
/// with its reason, or its resolution. Idempotent by `(alert_id, update_seq)`.
public struct AlertUpdate: Hashable, Sendable, Codable {
    public enum UpdateType: String, Hashable, Sendable, Codable, CaseIterable {
        case raised
        case position
        case cancelled
        case resolved
        /// A graver rule fired while the alert was open; `alert.kind` is the new kind.
        case kindChanged = "kind_changed"
    }

    public var version: Int
    public var alert: AlertRecord
    /// 0 for the first message of an alert, then 1, 2, ... per update.
    public var updateSequence: Int
    public var type: UpdateType
    /// When this update was made on the device.
    public var sent: ReadingTimestamp

    public init(version: Int = SyncBatch.currentVersion, alert: AlertRecord, updateSequence: Int, type: UpdateType, sent: ReadingTimestamp) {
        self.version = version
        self.alert = alert
        self.updateSequence = updateSequence
        self.type = type
        self.sent = sent
    }

    enum CodingKeys: String, CodingKey {
        case version, alert
        case updateSequence = "update_seq"
        case type, sent
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        guard version == SyncBatch.currentVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version,
                in: c,
                debugDescription: "unsupported version \(version), expected \(SyncBatch.currentVersion)"
            )
        }
        alert = try c.decode(AlertRecord.self, forKey: .alert)
        updateSequence = try c.decode(Int.self, forKey: .updateSequence)
        type = try c.decode(UpdateType.self, forKey: .type)
        sent = try c.decode(ReadingTimestamp.self, forKey: .sent)
    }
}
