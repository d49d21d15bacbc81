/// The SOS rules for one person, with the lifecycle of their one open alert: feed it every
/// event with its time, perform the actions it returns, in order.
///
///     var engine = SOSEngine(deviceID: "pi-0042", profile: profile, ids: SequentialAlertIDs(), now: start)
///     for action in engine.receive(.heartRate(reading), now: readingTime) { ... }
///
/// Pure and deterministic: no clock reads, no I/O; alert identifiers come from the injected
/// generator. Cheap per reading: a handful of comparisons, no allocation beyond the returned
/// actions (empty most of the time). The rules, their defaults and sources are in
/// `simulations/SOS-RULES.md`.
public struct SOSEngine: Sendable {
    public let deviceID: String
    public private(set) var profile: PersonProfile
    public private(set) var settings: SOSSettings
    public private(set) var limits: HeartRateLimits
    /// Whether the rules are being evaluated (false while paused).
    public private(set) var isMonitoring = true
    public private(set) var lifecycle = AlertStateMachine()

    private var ids: any AlertIDGenerator
    // Nanosecond copies of the settings, so the per-reading path does no Duration arithmetic.
    private var thresholds: Thresholds
    private var learnedRestingRate: Int?

    /// The last notification, or when monitoring (re)started: strap silence counts from here.
    private var silenceSince: ReadingTimestamp
    /// The first of the current run of readings without skin contact.
    private var contactLostSince: ReadingTimestamp?
    /// The last notification that carried a plausible beat, or the first with contact after a
    /// run without: the no-beat window counts from here.
    private var beatWindowStart: ReadingTimestamp?
    /// The strap has sent RR intervals since it connected, so their absence means something.
    private var strapSendsRR = false
    private var zeroRun = Run()
    private var lowRun = Run()
    private var highRun = Run()
    private var arming = [Arming](repeating: Arming(), count: AlertKind.allCases.count)
    private var recent = RecentReadings()
    private var rhythm = RhythmWatch()
    /// Plausible RR intervals of the reading under evaluation, in ms (kept to reuse its storage).
    private var beatScratch: [Int] = []

    /// - Parameters:
    ///   - learnedRestingRate: a resting heart rate learned from the person's history, used
    ///     when the profile has none (see `HeartRateLimits`).
    ///   - openAlert: after a restart, the journal's alert that was raised and not closed: it
    ///     is the person's open alert again, so the rules raise nothing new while it lasts.
    ///   - now: when monitoring starts (strap silence counts from here).
    public init(
        deviceID: String,
        profile: PersonProfile,
        settings: SOSSettings = SOSSettings(),
        learnedRestingRate: Int? = nil,
        ids: any AlertIDGenerator,
        openAlert: AlertRecord? = nil,
        now: ReadingTimestamp
    ) {
        self.lifecycle = AlertStateMachine(restoring: openAlert)
        self.deviceID = deviceID
        self.profile = profile
        self.settings = settings
        self.limits = HeartRateLimits(
            profile: profile,
            learnedRestingRate: learnedRestingRate,
            defaultMaximum: settings.defaultMaximumHeartRate,
            defaultMinimum: settings.defaultMinimumHeartRate
        )
        self.ids = ids
        self.thresholds = Thresholds(settings)
        self.learnedRestingRate = learnedRestingRate
        self.silenceSince = now
    }

    /// New care settings while running (the server's, over the device's configuration): the
    /// profile's limits and the rules' settings change from the next event on. The open alert
    /// and the episodes under way are kept: a rule switched off stops at its next evaluation.
    public mutating func reconfigure(profile: PersonProfile, settings: SOSSettings) {
        self.profile = profile
        self.settings = settings
        thresholds = Thresholds(settings)
        limits = HeartRateLimits(
            profile: profile,
            learnedRestingRate: learnedRestingRate,
            defaultMaximum: settings.defaultMaximumHeartRate,
            defaultMinimum: settings.defaultMinimumHeartRate
        )
    }

    /// The open alert (pending, raised, delivered or acknowledged), if any.
    public var openAlert: AlertRecord? { lifecycle.alert }

    /// A resting rate learned since the engine started (the agent's `RestingHeartRateEstimator`
    /// reached an estimate, or a new one): the limits are derived again from the profile with
    /// it. Explicit profile values still win. Episodes under way are judged by the new limits
    /// from the next reading on.
    public mutating func learnRestingRate(_ rate: Int?) {
        learnedRestingRate = rate
        limits = HeartRateLimits(
            profile: profile,
            learnedRestingRate: rate,
            defaultMaximum: settings.defaultMaximumHeartRate,
            defaultMinimum: settings.defaultMinimumHeartRate
        )
    }

    public mutating func receive(_ event: SOSEvent, now: ReadingTimestamp) -> [SOSAction] {
        var actions: [SOSAction] = []
        switch event {
        case .heartRate(let reading):
            actions = lifecycle.receive(.tick, now: now)
            if isMonitoring { evaluate(reading, now: now, into: &actions) }
        case .strapLink(let link):
            actions = lifecycle.receive(.tick, now: now)
            switch link {
            case .connected:
                strapSendsRR = false
            case .disconnected:
                break
            }
            // Continuity is broken either way: episodes restart from the next readings. A run
            // without contact goes on: the link dropping does not bring contact back.
            beatWindowStart = nil
            zeroRun = Run()
            lowRun = Run()
            highRun = Run()
            rhythm.reset()
        case .position(let fix):
            rhythm.position(speed: fix.speed, nanos: Int64(bitPattern: now.monotonicNanoseconds), settings: settings.rhythm)
            actions = lifecycle.receive(.tick, now: now)
            actions += lifecycle.receive(.position(fix), now: now)
        case .manualSOS:
            actions = lifecycle.receive(.tick, now: now)
            if lifecycle.isNormal {
                guard settings.manual.enabled else { return actions }
                let record = newRecord(.manual, firstCritical: now, now: now)
                actions += lifecycle.receive(.fire(record, countdown: settings.manual.countdown), now: now)
            } else {
                actions += lifecycle.receive(.confirm, now: now)
            }
        case .discreetSOS:
            actions = lifecycle.receive(.tick, now: now)
            if lifecycle.isNormal {
                guard settings.manual.enabled else { return actions }
                var record = newRecord(.manual, firstCritical: now, now: now)
                record.reason = AlertRecord.discreetReason
                record.discreet = true
                actions += lifecycle.receive(.fire(record, countdown: .zero), now: now)
            } else {
                actions += lifecycle.receive(.confirm, now: now)
            }
        case .cancel(let reason):
            actions = lifecycle.receive(.cancel(reason), now: now)
        case .pause:
            guard isMonitoring else { return lifecycle.receive(.tick, now: now) }
            isMonitoring = false
            resetSignalState(now: now)
            actions = lifecycle.receive(.tick, now: now) + [.logMonitoringPaused]
            // Pausing says the strap is off on purpose: a countdown about the strap's signal no
            // longer applies. Physiological and manual countdowns go on.
            if let pending = lifecycle.alert, lifecycle.countdownDeadline != nil, settings.rule(pending.kind).withdrawsWhenCleared {
                actions += lifecycle.receive(.withdraw(pending.kind), now: now)
            }
        case .resume:
            guard !isMonitoring else { return lifecycle.receive(.tick, now: now) }
            isMonitoring = true
            resetSignalState(now: now)
            actions = lifecycle.receive(.tick, now: now) + [.logMonitoringResumed]
        case .delivered(let id):
            actions = lifecycle.receive(.delivered(alertID: id), now: now)
        case .acknowledged(let id):
            actions = lifecycle.receive(.acknowledged(alertID: id), now: now)
        case .resolved(let id):
            actions = lifecycle.receive(.resolved(alertID: id), now: now)
        case .tick:
            actions = lifecycle.receive(.tick, now: now)
        }
        if isMonitoring { evaluateTimeRules(now: now, into: &actions) }
        return actions
    }

    // MARK: - Rules

    private mutating func evaluate(_ reading: HeartRateReading, now: ReadingTimestamp, into actions: inout [SOSAction]) {
        silenceSince = now
        recent.append(TimedHeartRate(reading: reading, timestamp: now))
        let minimumRR = thresholds.minimumRRUnits
        let hasBeat = reading.rrIntervals.contains { $0 >= minimumRR }

        var noPulseNow = false
        var noPulseFires = false
        var noPulseSince: ReadingTimestamp?
        switch reading.contact {
        case .notDetected:
            // A zero or a stale value without contact is a contact problem, not a flat line.
            if contactLostSince == nil { contactLostSince = now }
            beatWindowStart = nil
            zeroRun = Run()
            lowRun = Run()
            highRun = Run()
            rhythm.reset()
            return  // the heart-rate rules learn nothing from this reading
        case .detected:
            contactLostSince = nil
            if hasBeat { strapSendsRR = true }
            if reading.bpm == 0 { zeroRun.extend(now, maximumGap: thresholds.maximumReadingGap) } else { zeroRun = Run() }
            if hasBeat || beatWindowStart == nil { beatWindowStart = now }
            let windowStart = beatWindowStart ?? now
            let noBeat = strapSendsRR && !hasBeat && Self.nanos(now, since: windowStart) >= thresholds.noBeatWindow
            let zeros = zeroRun.holds(now: now, persistence: thresholds.noPulse, readings: settings.noPulse.minimumReadings)
            noPulseNow = reading.bpm == 0 || noBeat
            noPulseFires = zeros || noBeat
            noPulseSince = zeros ? zeroRun.since : windowStart
        case .unsupported:
            // Without contact detection a zero is ambiguous: only the heart-rate limits apply.
            contactLostSince = nil
            zeroRun = Run()
            beatWindowStart = nil
        }
        evaluate(.noPulse, conditionNow: noPulseNow, fires: noPulseFires, since: noPulseSince, now: now, into: &actions)

        beatScratch.removeAll(keepingCapacity: true)
        for rr in reading.rrIntervals where rr >= minimumRR { beatScratch.append(HeartRateReading.milliseconds(fromRR: rr)) }
        let signal = rhythm.receive(
            bpm: reading.bpm,
            beatMilliseconds: beatScratch,
            nanos: Int64(bitPattern: now.monotonicNanoseconds),
            limits: limits,
            settings: settings.rhythm
        )
        let lethal = signal.map { $0 != .slowBeats && $0 != .fastBeats } ?? false
        evaluate(.lethalRhythm, conditionNow: lethal, fires: lethal, since: now, reason: signal?.rawValue, now: now, into: &actions)

        // Zeros belong to the no-pulse rule and absurd values are corrupt: neither extends nor
        // breaks a low or high episode (but a run of them longer than the maximum reading gap
        // does, through `Run.extend`).
        if reading.bpm > 0 && reading.bpm <= settings.absurdBPM {
            if reading.bpm < limits.minimum { lowRun.extend(now, maximumGap: thresholds.maximumReadingGap) } else { lowRun = Run() }
            if reading.bpm > limits.maximum { highRun.extend(now, maximumGap: thresholds.maximumReadingGap) } else { highRun = Run() }
            let slowBeats = signal == .slowBeats
            let lowHolds = lowRun.holds(now: now, persistence: thresholds.heartRateLow, readings: settings.heartRateLow.minimumReadings)
            evaluate(
                .heartRateLow,
                conditionNow: lowRun.since != nil || slowBeats,
                fires: lowHolds || slowBeats,
                since: lowRun.since,
                reason: !lowHolds && slowBeats ? RhythmSignal.slowBeats.rawValue : nil,
                now: now,
                into: &actions
            )
            let fastBeats = signal == .fastBeats
            let highHolds = highRun.holds(now: now, persistence: thresholds.heartRateHigh, readings: settings.heartRateHigh.minimumReadings)
            evaluate(
                .heartRateHigh,
                conditionNow: highRun.since != nil || fastBeats,
                fires: highHolds || fastBeats,
                since: highRun.since,
                reason: !highHolds && fastBeats ? RhythmSignal.fastBeats.rawValue : nil,
                now: now,
                into: &actions
            )
        }
    }

    private mutating func evaluateTimeRules(now: ReadingTimestamp, into actions: inout [SOSAction]) {
        let lost = contactLostSince.map { Self.nanos(now, since: $0) >= thresholds.contactLost } ?? false
        evaluate(.contactLost, conditionNow: contactLostSince != nil, fires: lost, since: contactLostSince, now: now, into: &actions)
        let silent = Self.nanos(now, since: silenceSince) >= thresholds.strapSilent
        evaluate(.strapSilent, conditionNow: silent, fires: silent, since: silenceSince, now: now, into: &actions)
    }

    /// One rule's verdict: `conditionNow` is the raw condition (for re-arming and withdrawing),
    /// `fires` whether it held long enough.
    private mutating func evaluate(
        _ kind: AlertKind,
        conditionNow: Bool,
        fires: Bool,
        since: ReadingTimestamp?,
        reason: String? = nil,
        now: ReadingTimestamp,
        into actions: inout [SOSAction]
    ) {
        let index = Self.index(kind)
        let rule = settings.rule(kind)
        if conditionNow {
            arming[index].clearSince = nil
        } else {
            if arming[index].disarmed {
                let clearSince = arming[index].clearSince ?? now
                arming[index].clearSince = clearSince
                if Self.nanos(now, since: clearSince) >= thresholds.rearm[index] {
                    arming[index] = Arming()
                }
            }
            if rule.withdrawsWhenCleared, lifecycle.countdownDeadline != nil, lifecycle.alert?.kind == kind {
                actions += lifecycle.receive(.withdraw(kind), now: now)
            }
        }
        guard fires, rule.enabled, !arming[index].disarmed else { return }
        // Fired: it stays quiet until its condition has been false for the re-arm time, whether
        // it started an alert or an open alert already covers it.
        arming[index].disarmed = true
        arming[index].clearSince = nil
        if lifecycle.isNormal {
            var record = newRecord(kind, firstCritical: since ?? now, now: now)
            record.reason = reason
            actions += lifecycle.receive(.fire(record, countdown: rule.countdown), now: now)
        } else {
            actions += lifecycle.receive(.escalate(kind, countdown: rule.countdown, reason: reason), now: now)
        }
    }

    private mutating func newRecord(_ kind: AlertKind, firstCritical: ReadingTimestamp, now: ReadingTimestamp) -> AlertRecord {
        AlertRecord(
            id: ids.next(),
            deviceID: deviceID,
            kind: kind,
            state: .pending,
            firstCritical: firstCritical,
            triggeringReadings: kind == .manual ? [] : recent.readings(since: firstCritical),
            discreet: settings.discreet
        )
    }

    private mutating func resetSignalState(now: ReadingTimestamp) {
        silenceSince = now
        contactLostSince = nil
        rhythm.reset()
        beatWindowStart = nil
        zeroRun = Run()
        lowRun = Run()
        highRun = Run()
    }

    // MARK: - Helpers

    static func nanos(_ now: ReadingTimestamp, since earlier: ReadingTimestamp) -> Int64 {
        Int64(bitPattern: now.monotonicNanoseconds &- earlier.monotonicNanoseconds)
    }

    private static func index(_ kind: AlertKind) -> Int {
        switch kind {
        case .heartRateLow: 0
        case .heartRateHigh: 1
        case .noPulse: 2
        case .contactLost: 3
        case .strapSilent: 4
        case .manual: 5
        case .lethalRhythm: 6
        }
    }

    /// A run of consecutive readings for which a condition held.
    private struct Run: Hashable, Sendable {
        var since: ReadingTimestamp?
        var last: ReadingTimestamp?
        var count = 0

        /// Adds a reading; after a gap longer than `maximumGap` nanoseconds the run restarts,
        /// since nothing is known of the time in between.
        mutating func extend(_ now: ReadingTimestamp, maximumGap: Int64) {
            if let last, SOSEngine.nanos(now, since: last) > maximumGap { self = Run() }
            if since == nil { since = now }
            last = now
            count += 1
        }

        func holds(now: ReadingTimestamp, persistence: Int64, readings: Int) -> Bool {
            guard let since, count >= readings else { return false }
            return SOSEngine.nanos(now, since: since) >= persistence
        }
    }

    private struct Arming: Hashable, Sendable {
        var disarmed = false
        var clearSince: ReadingTimestamp?
    }

    private struct Thresholds: Hashable, Sendable {
        var heartRateLow: Int64
        var heartRateHigh: Int64
        var noPulse: Int64
        var noBeatWindow: Int64
        var contactLost: Int64
        var strapSilent: Int64
        var maximumReadingGap: Int64
        var rearm: [Int64]
        var minimumRRUnits: UInt16

        init(_ s: SOSSettings) {
            heartRateLow = s.heartRateLow.persistence.nanoseconds
            heartRateHigh = s.heartRateHigh.persistence.nanoseconds
            noPulse = s.noPulse.persistence.nanoseconds
            noBeatWindow = s.noBeatWindow.nanoseconds
            contactLost = s.contactLost.persistence.nanoseconds
            strapSilent = s.strapSilent.persistence.nanoseconds
            maximumReadingGap = s.maximumReadingGap.nanoseconds
            var rearm = [Int64](repeating: 0, count: AlertKind.allCases.count)
            for kind in AlertKind.allCases { rearm[SOSEngine.index(kind)] = s.rule(kind).rearm.nanoseconds }
            self.rearm = rearm
            minimumRRUnits = HeartRateReading.rrUnits(fromMilliseconds: s.minimumPlausibleRRMilliseconds)
        }
    }
}

/// The last few readings, kept for the alert record: a fixed ring, no allocation per reading.
struct RecentReadings: Hashable, Sendable {
    static let capacity = 16
    private var ring: [TimedHeartRate] = []
    private var next = 0

    mutating func append(_ reading: TimedHeartRate) {
        if ring.count < Self.capacity {
            ring.reserveCapacity(Self.capacity)
            ring.append(reading)
        } else {
            ring[next] = reading
        }
        next = (next + 1) % Self.capacity
    }

    /// The kept readings taken at or after `start`, oldest first.
    func readings(since start: ReadingTimestamp) -> [TimedHeartRate] {
        var result: [TimedHeartRate] = []
        let count = ring.count
        let first = count < Self.capacity ? 0 : next
        for offset in 0..<count {
            let reading = ring[(first + offset) % count]
            if reading.timestamp.monotonicNanoseconds >= start.monotonicNanoseconds { result.append(reading) }
        }
        return result
    }
}
