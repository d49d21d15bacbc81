/// One reading as it travels in a sync batch: a heart-rate reading or a position fix, with the
/// device-local sequence number that makes it unique per device.
public struct WireReading: Hashable, Sendable, Codable {
    public enum Payload: Hashable, Sendable {
        case heartRate(HeartRateReading)
        case position(PositionFix)
    }

    /// Assigned by the device's store, strictly increasing per device and never reused; the
    /// server stores `(device_id, seq)` once, which is what makes a resent batch harmless.
    public var sequence: Int64
    public var timestamp: ReadingTimestamp
    public var payload: Payload

    public init(sequence: Int64, timestamp: ReadingTimestamp, payload: Payload) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.payload = payload
    }

    /// The `kind` tag on the wire.
    public enum Kind: String, Hashable, Sendable, Codable {
        case heartRate = "hr"
        case position = "fix"
    }

    public var kind: Kind {
        switch payload {
        case .heartRate: .heartRate
        case .position: .position
        }
    }

    enum CodingKeys: String, CodingKey {
        case sequence = "seq"
        case kind
        case timestamp = "t"
        case heartRate = "hr"
        case position = "fix"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try c.decode(Int64.self, forKey: .sequence)
        timestamp = try c.decode(ReadingTimestamp.self, forKey: .timestamp)
        switch try c.decode(Kind.self, forKey: .kind) {
        case .heartRate: payload = .heartRate(try c.decode(HeartRateReading.self, forKey: .heartRate))
        case .position: payload = .position(try c.decode(PositionFix.self, forKey: .position))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(kind, forKey: .kind)
        try c.encode(timestamp, forKey: .timestamp)
        switch payload {
        case .heartRate(let hr): try c.encode(hr, forKey: .heartRate)
        case .position(let fix): try c.encode(fix, forKey: .position)
        }
    }
}

/// The device's health, sent with every batch and on its own as a heartbeat.
public struct DeviceHeartbeat: Hashable, Sendable, Codable {
    /// `searching`, `connected` or `lost`.
    public var strap: String
    /// `connected`, `no_device`, `no_fix` or `fix`.
    public var gpsd: String
    /// Readings waiting in the store to be synced.
    public var storeDepth: Int
    /// Bytes the store occupies on disk.
    public var storeBytes: Int64
    public var batteryPercent: Int?
    /// True while the strap's battery is below the device's warning level; absent
    /// when the strap reports no battery.
    public var batteryLow: Bool?
    /// True while the wearer has paused monitoring (`trackme-agent pause`): the SOS rules of the
    /// signal do not run, so silence from this device is not a worry.
    public var monitoringPaused: Bool?
    /// Where the strap says it sits (Body Sensor Location 0x2A38): `other`, `chest`, `wrist`,
    /// `finger`, `hand`, `ear_lobe`, `foot`; absent until the strap answered.
    public var bodySensorLocation: String?
    /// `disk`, or `memory_only` when the store could not be opened on disk and nothing it holds
    /// survives a restart. Nil from older devices.
    public var storeState: String?
    /// Why the store is not well (`disk_full: ...`, `read_only: ...`), or nil.
    public var storeProblem: String?
    /// Readings that failed their integrity check on the device, over the store's life.
    public var quarantinedReadings: Int64?
    /// `wearer`, `runner` or `taxi`; nil from older agents (a wearer).
    public var profile: DeviceProfile?
    /// A taxi's availability, with every report; nil for other profiles.
    public var taxiState: TaxiAvailability?
    /// The run a runner joined, with their consent to be shown; nil when none.
    public var run: RunParticipation?
    /// The version of the server's care settings the device runs (`CareSettings.version`);
    /// absent when it runs on its configuration file alone.
    public var careVersion: Int64?
    /// Care settings the device's own configuration overrides (`sos:` in its file), as
    /// `rule.field` names (`heart_rate_low.threshold_bpm`); absent when none conflicts.
    public var careConflicts: [String]?
    /// The device's own value of each conflicting threshold, the one in force, under the names
    /// of `careConflicts` (`heart_rate_low.threshold_bpm`: 45); absent when no threshold conflicts.
    public var careOverrides: [String: Int]?
    /// The wearable's own battery, 0...100 (`power_supply`); absent when the board reports none.
    public var deviceBatteryPercent: Int?
    /// `battery`, `charging`, `full` or `mains` (`DevicePower.Source`); absent when the board
    /// reports no power supply.
    public var devicePower: DevicePower.Source?
    /// `low`, or `critical` when monitoring will stop as the battery runs out (`PowerWatch`);
    /// absent while the device is on external power or its battery is fine.
    public var devicePowerLevel: PowerWatch.Level?
    /// How long each condition that leaves the wearer less protected has held, in whole seconds
    /// by the device's monotonic clock when the heartbeat was made (an unset wall clock does not
    /// matter): `monitoring_paused`, `strap_battery_low`, `device_battery_low` (low or critical),
    /// `charging`, `store_memory_only`, `quarantined` (since this run of the agent first saw
    /// quarantined readings). Absent when none holds.
    public var conditionSeconds: [String: Int64]?

    public init(
        strap: String,
        gpsd: String,
        storeDepth: Int,
        storeBytes: Int64,
        batteryPercent: Int? = nil,
        batteryLow: Bool? = nil,
        monitoringPaused: Bool? = nil,
        bodySensorLocation: String? = nil
    ) {
        self.strap = strap
        self.gpsd = gpsd
        self.storeDepth = storeDepth
        self.storeBytes = storeBytes
        self.batteryPercent = batteryPercent
        self.batteryLow = batteryLow
        self.monitoringPaused = monitoringPaused
        self.bodySensorLocation = bodySensorLocation
    }

    enum CodingKeys: String, CodingKey {
        case strap, gpsd
        case storeDepth = "store_depth"
        case storeBytes = "store_bytes"
        case batteryPercent = "battery_pct"
        case batteryLow = "battery_low"
        case monitoringPaused = "monitoring_paused"
        case bodySensorLocation = "body_location"
        case storeState = "store_state"
        case storeProblem = "store_problem"
        case quarantinedReadings = "quarantined"
        case profile
        case taxiState = "taxi_state"
        case run
        case careVersion = "care_version"
        case careConflicts = "care_conflicts"
        case careOverrides = "care_overrides"
        case deviceBatteryPercent = "device_battery_pct"
        case devicePower = "device_power"
        case devicePowerLevel = "device_power_level"
        case conditionSeconds = "conditions_for_s"
    }
}

/// A batch of readings sent to `POST /v1/batches` (wire format version 1, see WIRE.md).
public struct SyncBatch: Hashable, Sendable, Codable {
    public static let currentVersion = 1

    /// The largest `seq`, `batch_seq`, `update_seq` or `dropped_by_budget` a server takes
    /// (WIRE.md): 2^53 − 1, the largest integer every JSON reader (the console's JavaScript
    /// included) carries exactly, and far enough below 2^63 − 1 that the server's "one above
    /// the highest" floors still fit an SQLite or PostgreSQL integer. A store that starts a new
    /// generation jumps by 2^40, so a device has 8,191 generations before it gets here.
    public static let largestNumber: Int64 = (1 << 53) - 1

    public var version: Int
    public var deviceID: String
    /// The device's batch counter; with the device id it forms the idempotency key.
    public var batchSequence: Int64
    /// The epoch of the store that numbered this batch and its readings, chosen when the store
    /// was created (WIRE.md, "Store epochs"). Nil from devices older than it.
    public var storeEpoch: String?
    /// Readings the device had to drop to stay within its disk budget since the last batch the
    /// server acknowledged (cumulative counters are reported by the heartbeat).
    public var droppedByBudget: Int64
    public var heartbeat: DeviceHeartbeat?
    public var readings: [WireReading]

    public init(
        version: Int = SyncBatch.currentVersion,
        deviceID: String,
        batchSequence: Int64,
        storeEpoch: String? = nil,
        droppedByBudget: Int64 = 0,
        heartbeat: DeviceHeartbeat? = nil,
        readings: [WireReading]
    ) {
        self.version = version
        self.deviceID = deviceID
        self.batchSequence = batchSequence
        self.storeEpoch = storeEpoch
        self.droppedByBudget = droppedByBudget
        self.heartbeat = heartbeat
        self.readings = readings
    }

    /// `DEVICE_ID:BATCH_SEQ`, also sent as the `Idempotency-Key` header.
    public var idempotencyKey: String { Self.idempotencyKey(deviceID: deviceID, batchSequence: batchSequence) }

    public static func idempotencyKey(deviceID: String, batchSequence: Int64) -> String {
        "\(deviceID):\(batchSequence)"
    }

    enum CodingKeys: String, CodingKey {
        case version
        case deviceID = "device_id"
        case batchSequence = "batch_seq"
        case storeEpoch = "store_epoch"
        case idempotencyKey = "idempotency_key"
        case droppedByBudget = "dropped_by_budget"
        case heartbeat
        case readings
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        guard version == Self.currentVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version,
                in: c,
                debugDescription: "unsupported version \(version), expected \(Self.currentVersion)"
            )
        }
        deviceID = try c.decode(String.self, forKey: .deviceID)
        batchSequence = try c.decode(Int64.self, forKey: .batchSequence)
        let key = try c.decode(String.self, forKey: .idempotencyKey)
        guard key == Self.idempotencyKey(deviceID: deviceID, batchSequence: batchSequence) else {
            throw DecodingError.dataCorruptedError(
                forKey: .idempotencyKey,
                in: c,
                debugDescription: "must be device_id:batch_seq"
            )
        }
        storeEpoch = try c.decodeIfPresent(String.self, forKey: .storeEpoch)
        droppedByBudget = try c.decode(Int64.self, forKey: .droppedByBudget)
        heartbeat = try c.decodeIfPresent(DeviceHeartbeat.self, forKey: .heartbeat)
        readings = try c.decode([WireReading].self, forKey: .readings)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(batchSequence, forKey: .batchSequence)
        try c.encode(idempotencyKey, forKey: .idempotencyKey)
        try c.encodeIfPresent(storeEpoch, forKey: .storeEpoch)
        try c.encode(droppedByBudget, forKey: .droppedByBudget)
        try c.encodeIfPresent(heartbeat, forKey: .heartbeat)
        try c.encode(readings, forKey: .readings)
    }
}

/// The server's answer to a batch. The same batch again gets the same answer.
public struct BatchAcknowledgement: Hashable, Sendable, Codable {
    public var version: Int
    public var idempotencyKey: String
    /// Readings of this batch newly stored.
    public var stored: Int
    /// Readings of this batch the server already had (from an earlier, unacknowledged send).
    public var duplicates: Int
    /// Alerts of this device that a dispatcher acknowledged since the device last heard; the
    /// device learns of acknowledgements this way on its next sync.
    public var acknowledgedAlerts: [String]
    /// Alerts of this device a dispatcher resolved that the device has not yet reported closed;
    /// repeated on every acknowledgement until it does (closing twice changes nothing). Absent
    /// from older servers: empty.
    public var resolvedAlerts: [String]
    /// What the server tells the device to do (new care settings); absent when nothing.
    public var orders: SyncOrders?

    public init(
        version: Int = SyncBatch.currentVersion,
        idempotencyKey: String,
        stored: Int,
        duplicates: Int,
        acknowledgedAlerts: [String] = [],
        resolvedAlerts: [String] = [],
        orders: SyncOrders? = nil
    ) {
        self.orders = orders
        self.version = version
        self.idempotencyKey = idempotencyKey
        self.stored = stored
        self.duplicates = duplicates
        self.acknowledgedAlerts = acknowledgedAlerts
        self.resolvedAlerts = resolvedAlerts
    }

    enum CodingKeys: String, CodingKey {
        case version
        case idempotencyKey = "idempotency_key"
        case stored, duplicates
        case acknowledgedAlerts = "acknowledged_alerts"
        case resolvedAlerts = "resolved_alerts"
        case orders
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        idempotencyKey = try c.decode(String.self, forKey: .idempotencyKey)
        stored = try c.decode(Int.self, forKey: .stored)
        duplicates = try c.decode(Int.self, forKey: .duplicates)
        acknowledgedAlerts = try c.decode([String].self, forKey: .acknowledgedAlerts)
        resolvedAlerts = try c.decodeIfPresent([String].self, forKey: .resolvedAlerts) ?? []
        orders = try c.decodeIfPresent(SyncOrders.self, forKey: .orders)
    }
}
