public import TrackMeCore

/// What the pipeline last reported about each part, turned into an `AgentStatus` on request.
///
/// A plain value with no clock: pipeline services record observations with the
/// `ReadingTimestamp` they already carry, and `snapshot(now:)` computes every age against the
/// `now` it is given (same boot, monotonic clock). The lead's `AgentControl` keeps one of these
/// inside its actor, updates it as events arrive and answers `status()` with a snapshot.
public struct StatusBoard: Hashable, Sendable {
    public var deviceID: String
    public var started: ReadingTimestamp
    public var monitoringPaused = false

    public var strapLink: StrapStatus.LinkState = .notStarted
    public var strapAddress: String?
    public var strapBatteryPercent: Int?
    public var strapBatteryLow: Bool?
    public var strapBodyLocation: String?
    public var lastHeartRate: TimedHeartRate?

    public var gpsdConnection: GPSDStatus.ConnectionState = .notStarted
    public var lastFix: PositionFix?
    public var lastFixTime: ReadingTimestamp?

    public var store: StoreStatus
    public var lastSyncSuccess: ReadingTimestamp?
    public var lastSyncError: String?

    /// The open alert, or nil; closed alerts (resolved, cancelled) are dropped by `record(alert:)`.
    public var openAlert: AlertRecord?
    /// When a pending alert's countdown ends.
    public var countdownDeadline: ReadingTimestamp?
    public var limits: LimitsStatus?
    public var feedback: FeedbackState?

    public init(deviceID: String, started: ReadingTimestamp, storeBudgetBytes: Int) {
        self.deviceID = deviceID
        self.started = started
        self.store = StoreStatus(depth: 0, bytes: 0, budgetBytes: storeBudgetBytes)
    }

    public mutating func record(heartRate reading: HeartRateReading, at time: ReadingTimestamp) {
        lastHeartRate = TimedHeartRate(reading: reading, timestamp: time)
    }

    public mutating func record(fix: PositionFix, at time: ReadingTimestamp) {
        lastFix = fix
        lastFixTime = time
    }

    public mutating func recordSyncSuccess(at time: ReadingTimestamp) {
        lastSyncSuccess = time
        lastSyncError = nil
    }

    public mutating func recordSyncFailure(_ message: String) {
        lastSyncError = message
    }

    /// Keeps `alert` while it is open; a closed alert clears the board's alert.
    public mutating func record(alert: AlertRecord, countdownDeadline: ReadingTimestamp? = nil) {
        if alert.state.isOpen {
            openAlert = alert
            self.countdownDeadline = alert.state == .pending ? countdownDeadline : nil
        } else if openAlert?.id == alert.id || openAlert == nil {
            openAlert = nil
            self.countdownDeadline = nil
        }
    }

    /// The status as of `now`. Ages across a reboot (different boot ids) are unknown and
    /// shown as absent rather than wrong.
    /// The device's profile, set by the control on each status.
    public var profile: ProfileState?

    public func snapshot(now: ReadingTimestamp) -> AgentStatus {
        let uptime = now.milliseconds(since: started).map { Double(max(0, $0)) / 1000 } ?? 0
        let heartRate = lastHeartRate.flatMap { timed in
            now.milliseconds(since: timed.timestamp).map {
                LastHeartRate(bpm: timed.reading.bpm, contact: timed.reading.contact, ageMilliseconds: max(0, $0))
            }
        }
        let alert = openAlert.map { record -> AlertStatus in
            let remaining = countdownDeadline.flatMap { deadline in
                deadline.milliseconds(since: now).map { Double(max(0, $0)) / 1000 }
            }
            return AlertStatus(record, countdownRemainingSeconds: remaining)
        }
        return AgentStatus(
            deviceID: deviceID,
            uptimeSeconds: uptime,
            monitoringPaused: monitoringPaused,
            strap: StrapStatus(
                link: strapLink,
                address: strapAddress,
                batteryPercent: strapBatteryPercent,
                lastHeartRate: heartRate,
                batteryLow: strapBatteryLow,
                bodyLocation: strapBodyLocation
            ),
            gpsd: GPSDStatus(
                connection: gpsdConnection,
                lastFix: lastFix,
                fixAgeMilliseconds: lastFixTime.flatMap { now.milliseconds(since: $0) }.map { max(0, $0) }
            ),
            store: store,
            sync: SyncStatus(
                lastSuccessAgeMilliseconds: lastSyncSuccess.flatMap { now.milliseconds(since: $0) }.map { max(0, $0) },
                lastError: lastSyncError
            ),
            alert: alert,
            limits: limits,
            feedback: feedback,
            profile: profile
        )
    }
}
