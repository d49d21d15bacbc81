/// Replays a recorded heart-rate trace through an `SOSEngine` in timestamp order, as the agent
/// would see it: the strap connects a second before the first row, every row is one
/// notification at its own time, and ticks come every `tickInterval` in between (a tick due at
/// the same instant as a row comes after it). Used by the acceptance test and the simulation.
public struct SOSTraceReplay: Sendable {
    /// One action and the trace time (ms from the record's start) it was produced at.
    public struct Step: Hashable, Sendable {
        public var timeMilliseconds: Int64
        public var action: SOSAction
    }

    public var engine: SOSEngine
    public private(set) var steps: [Step] = []
    private let bootID: String
    private let tickInterval: Int64

    /// - Parameter startMilliseconds: trace time at which monitoring starts.
    public init(
        deviceID: String = "sim-0001",
        profile: PersonProfile,
        settings: SOSSettings = SOSSettings(),
        bootID: String = "replay",
        startMilliseconds: Int64 = 0,
        tickInterval: Duration = .milliseconds(250)
    ) {
        self.bootID = bootID
        self.tickInterval = max(1, tickInterval.nanoseconds / 1_000_000)
        engine = SOSEngine(
            deviceID: deviceID,
            profile: profile,
            settings: settings,
            ids: SequentialAlertIDs(prefix: "\(deviceID)-alert"),
            now: Self.timestamp(startMilliseconds, bootID: bootID)
        )
    }

    /// The timestamp of trace time `ms` in this replay's boot.
    public static func timestamp(_ ms: Int64, bootID: String = "replay") -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(max(0, ms)) * 1_000_000,
            bootID: bootID,
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        )
    }

    public mutating func send(_ event: SOSEvent, atMilliseconds ms: Int64) {
        for action in engine.receive(event, now: Self.timestamp(ms, bootID: bootID)) {
            steps.append(Step(timeMilliseconds: ms, action: action))
        }
    }

    /// Feeds the whole trace, pauses monitoring a second after its last row (the recording
    /// ended: the strap came off), then ticks on for `tail` so that running countdowns end.
    public mutating func run(_ trace: HeartRateTrace, tail: Duration = .seconds(60)) {
        guard let first = trace.rows.first else { return }
        send(.strapLink(.connected), atMilliseconds: first.timeMilliseconds - 1000)
        var clock = first.timeMilliseconds - 1000
        for row in trace.rows {
            tick(until: row.timeMilliseconds, from: &clock)
            send(.heartRate(row.reading), atMilliseconds: row.timeMilliseconds)
            clock = row.timeMilliseconds
        }
        tick(until: clock + 1000, from: &clock)
        clock += 1000
        send(.pause, atMilliseconds: clock)
        tick(until: clock + tail.nanoseconds / 1_000_000 + 1, from: &clock)
    }

    /// Ticks strictly before `end`.
    private mutating func tick(until end: Int64, from clock: inout Int64) {
        var t = clock + tickInterval
        while t < end {
            send(.tick, atMilliseconds: t)
            t += tickInterval
        }
    }
}
