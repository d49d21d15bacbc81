import TrackMeCore

/// Drives an `SOSEngine` on explicit trace times (milliseconds), collecting its actions.
struct SOSHarness {
    static let bootID = "test-boot"
    var engine: SOSEngine
    var log: [(ms: Int64, action: SOSAction)] = []

    init(profile: PersonProfile = PersonProfile(name: "Ada", age: 60), settings: SOSSettings = SOSSettings(), startMs: Int64 = 0) {
        engine = SOSEngine(
            deviceID: "pi-0042",
            profile: profile,
            settings: settings,
            ids: SequentialAlertIDs(prefix: "a"),
            now: Self.ts(startMs)
        )
    }

    static func ts(_ ms: Int64) -> ReadingTimestamp {
        ReadingTimestamp(monotonicNanoseconds: UInt64(ms) * 1_000_000, bootID: bootID, wallClockMilliseconds: nil, wallClockTrusted: false)
    }

    @discardableResult
    mutating func send(_ event: SOSEvent, at ms: Int64) -> [SOSAction] {
        let actions = engine.receive(event, now: Self.ts(ms))
        log += actions.map { (ms, $0) }
        return actions
    }

    /// One notification per second from `from` through `through` (inclusive), with ticks every
    /// 250 ms in between.
    @discardableResult
    mutating func readings(
        from: Int64,
        through: Int64,
        bpm: Int,
        contact: SensorContact = .detected,
        rr: [Int]? = nil
    ) -> [SOSAction] {
        var actions: [SOSAction] = []
        var t = from
        while t <= through {
            let intervals = rr ?? (bpm > 0 ? [60_000 / bpm] : [])
            let reading = HeartRateReading(
                bpm: bpm,
                contact: contact,
                rrIntervals: intervals.map(HeartRateReading.rrUnits(fromMilliseconds:))
            )
            actions += send(.heartRate(reading), at: t)
            for tick in stride(from: t + 250, to: min(t + 1000, through + 1), by: 250) { actions += send(.tick, at: tick) }
            t += 1000
        }
        return actions
    }

    @discardableResult
    mutating func ticks(from: Int64, through: Int64, every: Int64 = 250) -> [SOSAction] {
        var actions: [SOSAction] = []
        for t in stride(from: from, through: through, by: Int(every)) { actions += send(.tick, at: t) }
        return actions
    }

    /// The first action of the given shape in the log, with its time.
    func first(_ match: (SOSAction) -> AlertRecord?) -> (ms: Int64, record: AlertRecord)? {
        for entry in log { if let record = match(entry.action) { return (entry.ms, record) } }
        return nil
    }

    func all(_ match: (SOSAction) -> AlertRecord?) -> [(ms: Int64, record: AlertRecord)] {
        log.compactMap { entry in match(entry.action).map { (entry.ms, $0) } }
    }
}

extension SOSAction {
    var raised: AlertRecord? { if case .raise(let r) = self { r } else { nil } }
    var countdown: AlertRecord? { if case .startCountdown(let r, _) = self { r } else { nil } }
    var cancelledRecord: AlertRecord? { if case .cancelled(let r) = self { r } else { nil } }
    var withdrawnRecord: AlertRecord? { if case .withdrawn(let r) = self { r } else { nil } }
    var updated: AlertRecord? { if case .update(let r) = self { r } else { nil } }
    var positionUpdated: AlertRecord? { if case .positionUpdate(let r) = self { r } else { nil } }
}
