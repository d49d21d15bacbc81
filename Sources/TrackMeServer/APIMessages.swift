public import TrackMeCore

/// `POST /v1/devices` body.
struct EnrolDeviceRequest: Codable, Sendable {
    var deviceID: String
    var person: PersonProfile

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case person
    }
}

/// `POST /v1/dispatchers` body (optional).
struct CreateDispatcherRequest: Codable, Sendable {
    var name: String?
    /// Overrides the server's dispatcher token lifetime for this token (1-3650).
    var expiresInDays: Int?

    enum CodingKeys: String, CodingKey {
        case name
        case expiresInDays = "expires_in_days"
    }
}

/// A device's credentials, shown once at enrolment.
public struct DeviceCredentials: Codable, Hashable, Sendable {
    public var deviceID: String
    /// The bearer token, `ID.SECRET`; only its hash is stored.
    public var token: String

    public init(deviceID: String, token: String) {
        self.deviceID = deviceID
        self.token = token
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case token
    }
}

/// A dispatcher's credentials, shown once.
public struct DispatcherCredentials: Codable, Hashable, Sendable {
    public var dispatcherID: String
    public var token: String
    /// When the token stops working (wall ms); nil: until revoked.
    public var expiresMilliseconds: Int64?

    public init(dispatcherID: String, token: String, expiresMilliseconds: Int64? = nil) {
        self.dispatcherID = dispatcherID
        self.token = token
        self.expiresMilliseconds = expiresMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case dispatcherID = "dispatcher_id"
        case token
        case expiresMilliseconds = "expires_ms"
    }
}

/// The answer to `POST /v1/alerts`.
public struct AlertIntakeResponse: Codable, Hashable, Sendable {
    public var version: Int
    public var alertID: String
    public var updateSequence: Int
    /// This `(alert_id, update_seq)` had been received before; nothing changed.
    public var duplicate: Bool
    /// A dispatcher has acknowledged the alert.
    public var acknowledged: Bool
    /// A dispatcher has resolved (closed) the alert: the device closes it too.
    public var resolved: Bool

    public init(
        version: Int = SyncBatch.currentVersion,
        alertID: String,
        updateSequence: Int,
        duplicate: Bool,
        acknowledged: Bool,
        resolved: Bool = false
    ) {
        self.version = version
        self.alertID = alertID
        self.updateSequence = updateSequence
        self.duplicate = duplicate
        self.acknowledged = acknowledged
        self.resolved = resolved
    }

    enum CodingKeys: String, CodingKey {
        case version
        case alertID = "alert_id"
        case updateSequence = "update_seq"
        case duplicate, acknowledged, resolved
    }
}

/// The answer to `POST /v1/alerts/{id}/ack`.
struct AcknowledgeResponse: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var acknowledged: Bool
    /// It had been acknowledged before (by this or another dispatcher).
    var already: Bool

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case acknowledged
        case already = "already_acknowledged"
    }
}

struct HealthBody: Codable, Sendable {
    /// `ok`; `degraded` (then 503) when the database does not answer or a write would fail;
    /// `database_damaged` (then 503) when it failed an integrity check.
    var status: String
    /// What the integrity check reported, when it failed.
    var database: String? = nil
    /// Why the retention job last refused to delete (a wall clock that jumped), if it did.
    var retention: String? = nil
    /// Why it is degraded, one sentence each.
    var reasons: [String]? = nil
    /// Bytes free where the SQLite file lives.
    var freeBytes: Int64? = nil
    /// What an operator should do.
    var message: String? = nil

    enum CodingKeys: String, CodingKey {
        case status, database, retention, reasons, message
        case freeBytes = "free_bytes"
    }
}
