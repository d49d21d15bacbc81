public import TrackMeCore

/// What `trackme-agent status` shows: is every part of the agent working?
///
/// Ages are milliseconds on the monotonic clock between the observation and the moment the
/// status was made; nil means "never" (no reading, no fix, no sync since start).
public struct AgentStatus: Hashable, Sendable, Codable {
    public var deviceID: String
    /// Seconds since the agent started.
    public var uptimeSeconds: Double
    public var monitoringPaused: Bool
    public var strap: StrapStatus
    public var gpsd: GPSDStatus
    public var store: StoreStatus
    public var sync: SyncStatus
    /// The person's one open alert, if any.
    public var alert: AlertStatus?

    public init(
        deviceID: String,
        uptimeSeconds: Double,
        monitoringPaused: Bool = false,
        strap: StrapStatus = .init(),
        gpsd: GPSDStatus = .init(),
        store: StoreStatus = .init(),
        sync: SyncStatus = .init(),
        alert: AlertStatus? = nil
    ) {
        self.deviceID = deviceID
        self.uptimeSeconds = uptimeSeconds
        self.monitoringPaused = monitoringPaused
        self.strap = strap
        self.gpsd = gpsd
        self.store = store
        self.sync = sync
        self.alert = alert
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case uptimeSeconds = "uptime_s"
        case monitoringPaused = "monitoring_paused"
        case strap, gpsd, store, sync, alert
    }
}

public struct StrapStatus: Hashable, Sendable, Codable {
    public enum LinkState: String, Hashable, Sendable, Codable, CaseIterable {
        /// The link service has not started (or is not wired in).
        case notStarted = "not_started"
        case scanning
        case connecting
        /// Connected and receiving Heart Rate Measurement notifications.
        case connected
        /// Lost; the link service is backing off before it reconnects.
        case disconnected
    }

    public var link: LinkState
    /// The strap's address, once known.
    public var address: String?
    /// Battery Service (0x180F) level, 0-100, if the strap has one.
    public var batteryPercent: Int?
    public var lastHeartRate: LastHeartRate?

    public init(link: LinkState = .notStarted, address: String? = nil, batteryPercent: Int? = nil, lastHeartRate: LastHeartRate? = nil) {
        self.link = link
        self.address = address
        self.batteryPercent = batteryPercent
        self.lastHeartRate = lastHeartRate
    }

    enum CodingKeys: String, CodingKey {
        case link, address
        case batteryPercent = "battery_pct"
        case lastHeartRate = "last_hr"
    }
}

public struct LastHeartRate: Hashable, Sendable, Codable {
    public var bpm: Int
    public var contact: SensorContact
    public var ageMilliseconds: Int64

    public init(bpm: Int, contact: SensorContact, ageMilliseconds: Int64) {
        self.bpm = bpm
        self.contact = contact
        self.ageMilliseconds = ageMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case bpm, contact
        case ageMilliseconds = "age_ms"
    }
}

public struct GPSDStatus: Hashable, Sendable, Codable {
    public enum ConnectionState: String, Hashable, Sendable, Codable, CaseIterable {
        case notStarted = "not_started"
        case connecting
        /// Connected to gpsd and watching; see `lastFix` for whether the receiver has a fix.
        case connected
        case disconnected
    }

    public var connection: ConnectionState
    public var lastFix: PositionFix?
    public var fixAgeMilliseconds: Int64?

    public init(connection: ConnectionState = .notStarted, lastFix: PositionFix? = nil, fixAgeMilliseconds: Int64? = nil) {
        self.connection = connection
        self.lastFix = lastFix
        self.fixAgeMilliseconds = fixAgeMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case connection
        case lastFix = "last_fix"
        case fixAgeMilliseconds = "fix_age_ms"
    }
}

public struct StoreStatus: Hashable, Sendable, Codable {
    /// Readings and alert updates not yet acknowledged by the server.
    public var depth: Int
    /// Bytes the store uses on disk.
    public var bytes: Int
    public var budgetBytes: Int

    public init(depth: Int = 0, bytes: Int = 0, budgetBytes: Int = 0) {
        self.depth = depth
        self.bytes = bytes
        self.budgetBytes = budgetBytes
    }

    enum CodingKeys: String, CodingKey {
        case depth, bytes
        case budgetBytes = "budget_bytes"
    }
}

public struct SyncStatus: Hashable, Sendable, Codable {
    /// Age of the last batch the server acknowledged.
    public var lastSuccessAgeMilliseconds: Int64?
    /// The error of the last failed attempt, if the last attempt failed.
    public var lastError: String?

    public init(lastSuccessAgeMilliseconds: Int64? = nil, lastError: String? = nil) {
        self.lastSuccessAgeMilliseconds = lastSuccessAgeMilliseconds
        self.lastError = lastError
    }

    enum CodingKeys: String, CodingKey {
        case lastSuccessAgeMilliseconds = "last_success_age_ms"
        case lastError = "last_error"
    }
}

/// An alert as the control socket reports it.
public struct AlertStatus: Hashable, Sendable, Codable {
    public var id: String
    public var kind: AlertKind
    public var state: AlertState
    /// Seconds left to cancel while `state` is pending.
    public var countdownRemainingSeconds: Double?
    public var cancelReason: CancelReason?

    public init(
        id: String,
        kind: AlertKind,
        state: AlertState,
        countdownRemainingSeconds: Double? = nil,
        cancelReason: CancelReason? = nil
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.countdownRemainingSeconds = countdownRemainingSeconds
        self.cancelReason = cancelReason
    }

    /// The status of a Core alert record.
    public init(_ record: AlertRecord, countdownRemainingSeconds: Double? = nil) {
        self.init(
            id: record.id,
            kind: record.kind,
            state: record.state,
            countdownRemainingSeconds: countdownRemainingSeconds,
            cancelReason: record.cancelReason
        )
    }

    enum CodingKeys: String, CodingKey {
        case id = "alert_id"
        case kind, state
        case countdownRemainingSeconds = "countdown_remaining_s"
        case cancelReason = "cancel_reason"
    }
}
