public import EdgeStore
import Synchronization
public import TrackMeCore

/// Everything the agent knows now, as one value: what the sources last reported, what the rules
/// decided, the store and sync figures, the device's profile, care settings and power. `status`,
/// the heartbeat and the wearer's feedback are derived from it; nothing else keeps a copy.
///
/// A plain value with no clock: observations carry the `ReadingTimestamp` they already have,
/// condition timings the stopwatch reading (`Duration`) the caller passes, and `status(now:)`
/// computes every age against the `now` it is given (same boot, monotonic clock).
public struct AgentState: Sendable {
    /// What gpsd last said: the status shows the connection, the heartbeat the finer state.
    public enum GPSDState: Hashable, Sendable {
        case notStarted, connecting, disconnected, noDevice, noFix, fix
        /// Connected and watching, nothing heard of the receiver yet.
        case connected
    }

    public var deviceID: String
    public var started: ReadingTimestamp
    /// The strap's battery below this many percent is low (`strap.battery_warning_percent`).
    public var batteryWarningPercent: Int

    public var strapLink: StrapStatus.LinkState = .notStarted
    /// Whether the strap was ever connected in this run: a link down after that is `lost`, before
    /// it `searching`.
    public var strapWasConnected = false
    public var strapAddress: String?
    public var strapBatteryPercent: Int?
    public var strapBodyLocation: String?
    public var lastHeartRate: TimedHeartRate?
    public var readingsProduced = 0
    public var malformedNotifications = 0

    public var gpsd: GPSDState = .notStarted
    public var lastFix: PositionFix?
    public var lastFixTime: ReadingTimestamp?

    public var store: StoreStatus
    public var alertsJournaledInMemoryOnly = 0
    public var lastSyncSuccess: ReadingTimestamp?
    public var lastSyncError: String?

    /// The rules' open alert, or nil once it closed.
    public var openAlert: AlertRecord?
    /// When a pending alert's countdown ends, and which alert's it is.
    public var countdown: (alertID: String, deadline: ReadingTimestamp)?
    public var monitoringPaused = false
    /// The heart-rate band in force, the profile the rules use, and the learned baseline.
    public var limits: HeartRateLimits
    public var rulesProfile: PersonProfile
    public var learnedRestingRate: Int?
    public var baselineSamples = 0
    public var baselineSamplesNeeded = 0

    public var profile: DeviceProfile = .wearer
    public var taxi = TaxiStateMachine()
    public var run: RunParticipation?
    public var care = CareStatus(version: nil, conflicts: [])
    public var power: DevicePower?
    public var powerLevel = PowerWatch.Level.normal
    /// Since when (the stopwatch's reading) each condition of the heartbeat's `conditions_for_s`
    /// has held.
    public var since: [String: Duration] = [:]

    public init(deviceID: String, started: ReadingTimestamp, storeBudgetBytes: Int, batteryWarningPercent: Int, rulesProfile: PersonProfile) {
        self.deviceID = deviceID
        self.started = started
        self.batteryWarningPercent = batteryWarningPercent
        self.store = StoreStatus(depth: 0, bytes: 0, budgetBytes: storeBudgetBytes)
        self.rulesProfile = rulesProfile
        self.limits = HeartRateLimits(profile: rulesProfile)
    }

    // MARK: Observations

    public mutating func record(heartRate reading: HeartRateReading, at time: ReadingTimestamp) {
        lastHeartRate = TimedHeartRate(reading: reading, timestamp: time)
    }

    public mutating func record(fix: PositionFix, at time: ReadingTimestamp) {
        lastFix = fix
        lastFixTime = time
    }

    public mutating func record(strapLink state: StrapStatus.LinkState, address: String? = nil) {
        strapLink = state
        if state == .connected { strapWasConnected = true }
        if let address { strapAddress = address }
    }

    /// Records the strap's battery level; returns whether it is low.
    @discardableResult
    public mutating func record(strapBattery percent: Int, at now: Duration) -> Bool {
        strapBatteryPercent = percent
        let low = percent < batteryWarningPercent
        mark("strap_battery_low", low, at: now)
        return low
    }

    public var strapBatteryLow: Bool? { strapBatteryPercent.map { $0 < batteryWarningPercent } }

    public mutating func recordSyncSuccess(at time: ReadingTimestamp) {
        lastSyncSuccess = time
        lastSyncError = nil
    }

    public mutating func recordSyncFailure(_ message: String) {
        lastSyncError = message
    }

    /// The store's figures as last read; its own conditions are timed too: running from memory
    /// (`store_memory_only`) and holding readings that failed their check (`quarantined`, since
    /// this run of the agent first saw them).
    public mutating func record(store statistics: StoreStatistics, at now: Duration) {
        store.depth = statistics.unsyncedReadings
        store.bytes = Int(max(0, statistics.usedBytes))
        store.state = statistics.storeState
        store.problem = statistics.memoryOnlyReason ?? (statistics.health == .healthy ? nil : statistics.health.rawValue)
        store.quarantined = statistics.quarantinedReadings
        store.unsalvageable = statistics.unsalvageableRows
        store.keyID = statistics.encryptionKeyID
        mark("store_memory_only", statistics.memoryOnlyReason != nil, at: now)
        mark("quarantined", statistics.quarantinedReadings > 0, at: now)
    }

    /// What the rules hold after an event: the open alert (with the countdown deadline the
    /// actions announced), whether monitoring runs.
    public mutating func record(openAlert alert: AlertRecord?, monitoring: Bool, actions: [SOSAction], at now: Duration) {
        for case .startCountdown(let record, let deadline) in actions { countdown = (record.id, deadline) }
        openAlert = alert.flatMap { $0.state.isOpen ? $0 : nil }
        if let countdown, openAlert?.id != countdown.alertID || openAlert?.state != .pending { self.countdown = nil }
        monitoringPaused = !monitoring
        mark("monitoring_paused", !monitoring, at: now)
    }

    public mutating func record(power: DevicePower?, level: PowerWatch.Level, at now: Duration) {
        self.power = power
        powerLevel = level
        mark("device_battery_low", level != .normal, at: now)
        mark("charging", power?.source == .charging, at: now)
    }

    /// Starts or ends the timing of a condition: a condition that goes on holding keeps its start.
    private mutating func mark(_ condition: String, _ holds: Bool, at now: Duration) {
        if !holds {
            since[condition] = nil
        } else if since[condition] == nil {
            since[condition] = now
        }
    }

    // MARK: What is derived

    public var profileState: ProfileState {
        ProfileState(profile: profile, taxi: profile == .taxi ? taxi.state : nil, run: profile == .runner ? run : nil)
    }

    public var limitsStatus: LimitsStatus {
        LimitsStatus(
            limits: limits,
            profile: rulesProfile,
            learnedRestingRate: learnedRestingRate,
            learnedSamples: baselineSamples,
            learnedSamplesNeeded: baselineSamplesNeeded
        )
    }

    /// The alert as `status` and the control's answers show it, with its countdown's remaining time.
    public func alertStatus(_ record: AlertRecord, now: ReadingTimestamp) -> AlertStatus {
        let deadline = countdown?.alertID == record.id && record.state == .pending ? countdown?.deadline : nil
        let remaining = deadline.flatMap { $0.milliseconds(since: now) }.map { Double(max(0, $0)) / 1000 }
        return AlertStatus(record, countdownRemainingSeconds: remaining)
    }

    /// The status as of `now`. Ages across a reboot (different boot ids) are unknown and
    /// shown as absent rather than wrong.
    public func status(now: ReadingTimestamp, feedback: FeedbackState? = nil) -> AgentStatus {
        let uptime = now.milliseconds(since: started).map { Double(max(0, $0)) / 1000 } ?? 0
        let heartRate = lastHeartRate.flatMap { timed in
            now.milliseconds(since: timed.timestamp).map {
                LastHeartRate(bpm: timed.reading.bpm, contact: timed.reading.contact, ageMilliseconds: max(0, $0))
            }
        }
        let connection: GPSDStatus.ConnectionState =
            switch gpsd {
            case .notStarted: .notStarted
            case .connecting: .connecting
            case .disconnected: .disconnected
            case .connected, .noDevice, .noFix, .fix: .connected
            }
        var status = AgentStatus(
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
                connection: connection,
                lastFix: lastFix,
                fixAgeMilliseconds: lastFixTime.flatMap { now.milliseconds(since: $0) }.map { max(0, $0) }
            ),
            store: store,
            sync: SyncStatus(
                lastSuccessAgeMilliseconds: lastSyncSuccess.flatMap { now.milliseconds(since: $0) }.map { max(0, $0) },
                lastError: lastSyncError
            ),
            alert: openAlert.map { alertStatus($0, now: now) },
            limits: limitsStatus,
            feedback: feedback,
            profile: profileState
        )
        status.care = care
        return status
    }

    /// The heartbeat each batch carries, as of the stopwatch reading `now`.
    public func heartbeat(now: Duration) -> DeviceHeartbeat {
        let strap =
            switch strapLink {
            case .connected: "connected"
            default: strapWasConnected ? "lost" : "searching"
            }
        let gpsdName =
            switch gpsd {
            case .notStarted, .connecting, .disconnected, .noDevice: "no_device"
            case .connected: "connected"
            case .noFix: "no_fix"
            case .fix: "fix"
            }
        var heartbeat = DeviceHeartbeat(
            strap: strap,
            gpsd: gpsdName,
            storeDepth: 0,
            storeBytes: 0,
            batteryPercent: strapBatteryPercent,
            batteryLow: strapBatteryLow,
            monitoringPaused: monitoringPaused,
            bodySensorLocation: strapBodyLocation
        )
        heartbeat.profile = profile
        heartbeat.taxiState = profile == .taxi ? taxi.state : nil
        heartbeat.run = profile == .runner ? run : nil
        heartbeat.careVersion = care.version
        heartbeat.careConflicts = care.conflicts.isEmpty ? nil : care.conflicts
        heartbeat.careOverrides = care.overrides.isEmpty ? nil : care.overrides
        heartbeat.deviceBatteryPercent = power?.percent
        heartbeat.devicePower = power?.source
        heartbeat.devicePowerLevel = powerLevel == .normal ? nil : powerLevel
        heartbeat.conditionSeconds = since.isEmpty ? nil : since.mapValues { (now - $0).components.seconds }
        return heartbeat
    }
}

/// The one `AgentState` of a running agent, shared by the pipeline (which records what the rules
/// decide), the sources, the control socket and the sync engine's heartbeat (which reads it
/// synchronously). Every change is one short lock, never a wait.
public final class AgentStateCell: Sendable {
    private let state: Mutex<AgentState>
    private let stopwatch: Stopwatch

    /// - Parameter clock: times how long each condition has held (`conditions_for_s`).
    public init(_ initial: AgentState, clock: any Clock<Duration>) {
        state = Mutex(initial)
        stopwatch = Stopwatch(clock)
    }

    /// Changes the state; `now` is the stopwatch's reading, for the conditions' timing.
    @discardableResult
    public func update<Result: Sendable>(_ change: (inout AgentState, _ now: Duration) -> Result) -> Result {
        let now = stopwatch.elapsed
        return state.withLock { change(&$0, now) }
    }

    public var current: AgentState { state.withLock { $0 } }

    /// The heartbeat as the state holds it now; with `store` (the store's statistics now) its
    /// figures and conditions are brought up to date first.
    public func heartbeat(store: StoreStatistics? = nil) -> DeviceHeartbeat {
        update { state, now in
            if let store { state.record(store: store, at: now) }
            return state.heartbeat(now: now)
        }
    }
}
