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
    /// The emergency contacts the device has told of this alert itself (its local fallback,
    /// while the server did not have the alert), each once: the server records them and does
    /// not tell them again. Every later update of the alert carries the whole list; left out of
    /// the JSON when empty.
    public var contactsTold: [ContactTold]

    public init(
        version: Int = SyncBatch.currentVersion,
        alert: AlertRecord,
        updateSequence: Int,
        type: UpdateType,
        sent: ReadingTimestamp,
        contactsTold: [ContactTold] = []
    ) {
        self.version = version
        self.alert = alert
        self.updateSequence = updateSequence
        self.type = type
        self.sent = sent
        self.contactsTold = contactsTold
    }

    enum CodingKeys: String, CodingKey {
        case version, alert
        case updateSequence = "update_seq"
        case type, sent
        case contactsTold = "contacts_told"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(alert, forKey: .alert)
        try c.encode(updateSequence, forKey: .updateSequence)
        try c.encode(type, forKey: .type)
        try c.encode(sent, forKey: .sent)
        if !contactsTold.isEmpty { try c.encode(contactsTold, forKey: .contactsTold) }
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
        contactsTold = try c.decodeIfPresent([ContactTold].self, forKey: .contactsTold) ?? []
    }
}

/// An emergency contact the device told of an alert itself, when, and how.
public struct ContactTold: Hashable, Sendable, Codable {
    /// How the device reached the contact.
    public enum Path: String, Hashable, Sendable, Codable, CaseIterable {
        /// The site's local fallback executable, run with `TRACKME_FALLBACK_REASON=notify_contact`
        /// (an SMS modem, a phone call: whatever the site wired); it exited 0.
        case localFallback = "local_fallback"
    }

    /// The contact's place in the person's list of emergency contacts, from 0.
    public var contactIndex: Int
    /// When the fallback finished telling them, on the device's clock.
    public var at: ReadingTimestamp
    public var path: Path

    public init(contactIndex: Int, at: ReadingTimestamp, path: Path) {
        self.contactIndex = contactIndex
        self.at = at
        self.path = path
    }

    enum CodingKeys: String, CodingKey {
        case contactIndex = "contact_index"
        case at, path
    }
}
