import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
public import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import NIOCore
import SimulatedStrap
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// Runs a scenario through the agent's own pipeline and reports what happened.
///
/// Outside field mode the run is an event loop over the trace in timestamp order: each trace
/// second the due faults are applied, the simulated strap sends that second's measurement as a
/// real ATT notification over a socket pair, the real link decodes it, `AgentPipeline` evaluates
/// and journals it, the agent's dispatch lane and readings lane are stepped on the virtual clock
/// the loop advances, and the group commit flushes. Nothing sleeps: the loop waits on each event,
/// so a day of trace takes seconds and the outcome is the same every run. The server is the real
/// `trackme-server` in process with a SQLite file, reached on loopback (`IO.sockets`) or, in fast
/// mode, through its router without a socket (`IO.inProcess`).
public struct ScenarioRunner: Sendable {
    public struct Options: Sendable {
        /// The `simulations/` folder that scenario paths are relative to.
        public var simulationsDirectory: URL
        /// Replay the GPS log through the real gpsd (gpsfake) at real time.
        public var field: Bool
        /// How the device's requests reach the server (field mode: always over sockets).
        public var io: IO = .sockets
        /// Fsync at every commit in fast mode too (see `CommitDurability`); field mode always does.
        public var fsync: Bool
        public var progress: (@Sendable (Double) -> Void)?
        public var logger: Logger
        /// Keep the server up for people to watch (`trackme-sim run --serve`).
        public var serve: Serve?
        /// The server's port; 0 picks a free one.
        public var port: Int = 0

        public init(
            simulationsDirectory: URL,
            field: Bool = false,
            fsync: Bool = false,
            progress: (@Sendable (Double) -> Void)? = nil,
            logger: Logger
        ) {
            self.simulationsDirectory = simulationsDirectory
            self.field = field
            self.fsync = fsync
            self.progress = progress
            self.logger = logger
        }
    }

    /// How the device's requests reach the in-process server. Only the kernel's part differs:
    /// the agent encodes, and the server's router, middleware, handlers and store decide, the
    /// same in both.
    public enum IO: String, Sendable, CaseIterable {
        /// Over loopback TCP, through the agent's `CurlTransport` and the server's listening
        /// channel (connection guard, HTTP parser).
        case sockets
        /// Fast mode: handed to the server's router in process (`InProcessTransport`), no socket.
        case inProcess = "in-process"

        /// The report's `mode` for a run on virtual time.
        var mode: String {
            switch self {
            case .sockets: "sockets"
            case .inProcess: "fast"
            }
        }
    }

    /// Watching a run in the dispatcher console: a console account is created and `announce`d
    /// (URL, username, password); the run waits up to `seconds` for a console to follow the
    /// feed, then runs at real time on a wall clock anchored at the present (`WallAnchor`), and
    /// the server stays up until `seconds` after the announcement or the run's end.
    public struct Serve: Sendable {
        public var seconds: Int
        public var announce: @Sendable (_ url: String, _ username: String, _ password: String) -> Void

        public init(seconds: Int, announce: @escaping @Sendable (_ url: String, _ username: String, _ password: String) -> Void) {
            self.seconds = seconds
            self.announce = announce
        }
    }

    public struct Outcome: Sendable {
        public var report: SimulationReport
        public var renderer: ReportRenderer
    }

    public var options: Options

    public init(options: Options) {
        self.options = options
    }

    static let deviceID = "sim-device"
    static let bootID = "sim-boot"
    /// A reading time at trace millisecond `ms` on the fixed anchor (see `WallAnchor.timestamp`).
    static func timestamp(_ ms: Int64) -> ReadingTimestamp {
        WallAnchor.fixed.timestamp(ms)
    }

    public func run(_ scenario: Scenario) async throws -> Outcome {
        if options.io == .inProcess {
            // Fast mode has no socket for gpsd's real time or for a console to connect to.
            if options.field { throw ScenarioError(message: "fast mode (in-process I/O) and field mode exclude each other") }
            if options.serve != nil { throw ScenarioError(message: "fast mode has no socket for a console: --serve needs the sockets mode") }
        }
        let started = ContinuousClock.now
        // Fast mode kills the agent but never the power, so by default neither side fsyncs: a
        // day of trace would otherwise wait on some 100,000 fsyncs (see `CommitDurability`).
        let durable = options.field || options.fsync
        let work = try WorkDirectory.make("trackme-sim", inMemory: options.io == .inProcess && !durable)
        defer { try? FileManager.default.removeItem(at: work) }

        let trace = try Self.trace(of: scenario.heartRate, in: options.simulationsDirectory)
        guard let first = trace.rows.first else {
            throw ScenarioError(message: "\(scenario.name): the heart-rate selection holds no rows")
        }
        // The agent's clock: trace time, moved by this loop. The server's wall clock reads the
        // same trace time, so that it files each reading by the time it was taken and judges
        // "future" and "before enrolment" as it would live.
        let clock = VirtualClock(now: VirtualClock.Instant(offset: .milliseconds(first.timeMilliseconds)))
        // Watched, the trace's first row is the present, so the pages' ages and times are real;
        // otherwise a fixed date, so the same seed gives the same report.
        let anchor = options.serve == nil ? WallAnchor.fixed : WallAnchor.present(atTraceMilliseconds: first.timeMilliseconds)
        // The server, in process: on loopback, or (fast mode) its router without a socket.
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: options.port,
            storage: .sqlite(path: work.appendingPathComponent("server.sqlite").path),
            durability: durable ? .powerLoss : .processCrash,
            adminToken: Self.adminToken,
            wallClock: { anchor.wall(clock.now.offset.milliseconds) },
            // The rate limits count wall time, and fast mode replays a day in seconds.
            limits: .withoutRateLimits
        )
        if options.io == .inProcess {
            // Nobody signs in to a server without a socket; the console's password hashing
            // (bcrypt, costed once at start) need not cost a quarter of a second.
            configuration.console.bcryptCost = 4
        }
        let server = try await TrackMeServer(configuration: configuration, logger: quiet("trackme.sim.server"))
        let run = Run(
            scenario: scenario,
            trace: trace,
            started: started,
            work: work,
            durable: durable,
            clock: clock,
            anchor: anchor,
            server: server
        )
        switch options.io {
        case .inProcess:
            return try await replay(run, http: InProcessTransport(router: InProcessRouter(server: server)))
        case .sockets:
            let serverTask = Task { try await server.run() }
            defer { serverTask.cancel() }
            let port = try await server.boundPort()
            guard let baseURL = URL(string: "http://127.0.0.1:\(port)") else { throw ScenarioError(message: "bad server URL") }
            var serveUntil: ContinuousClock.Instant?
            if let serve = options.serve {
                let password = String(UUID().uuidString.prefix(18))
                try await server.createAccount(username: "demo", password: password, displayName: "Demo dispatcher")
                let until = ContinuousClock.now + .seconds(serve.seconds)
                serveUntil = until
                serve.announce("http://127.0.0.1:\(port)/", "demo", password)
                // A person watching: start once their console follows the feed, so they see the alert arrive.
                while server.feedFollowers == 0, ContinuousClock.now < until {
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
            // The agent's own transport (kept-alive libcurl connections).
            return try await replay(run, http: CurlTransport(baseURL: baseURL), serveUntil: serveUntil)
        }
    }

    /// What a run has set up before the replay: the trace, the work folder, the virtual clock
    /// and the server.
    struct Run: Sendable {
        var scenario: Scenario
        var trace: HeartRateTrace
        var started: ContinuousClock.Instant
        var work: URL
        var durable: Bool
        var clock: VirtualClock
        /// Where trace time sits on the wall clock (and, when watched, in real time).
        var anchor: WallAnchor
        var server: TrackMeServer
    }

    static let adminToken = "sim-admin"

    /// The event loop over the trace, the device's requests to the server going through `http`.
    func replay(_ run: Run, http: any HTTPTransport, serveUntil: ContinuousClock.Instant? = nil) async throws -> Outcome {
        let (scenario, trace, server, clock) = (run.scenario, run.trace, run.server, run.clock)
        guard let first = trace.rows.first, let last = trace.rows.last else {
            throw ScenarioError(message: "\(scenario.name): the heart-rate selection holds no rows")
        }
        var fixes: [NMEAPositionLog.TimedFix] = []
        var fieldGPS: FieldGPS?
        if options.field, let gps = scenario.gps {
            fieldGPS = try FieldGPS(log: options.simulationsDirectory.appendingPathComponent(gps.log), logger: quiet("trackme.sim.gps"))
        } else if let gps = scenario.gps {
            let text = try String(contentsOf: options.simulationsDirectory.appendingPathComponent(gps.log), encoding: .isoLatin1)
            fixes = NMEAPositionLog(text: text).fixes
        }
        let credentials = try await server.enrolDevice(deviceID: Self.deviceID, person: scenario.person)

        let faults = FaultState()
        let transport = FaultInjectingTransport(base: http, faults: faults)
        let strapClock = ContinuousClock()
        let strap = SimulatedStrap(trace: trace, clock: strapClock)
        let connector = StrapConnector {
            if faults.current.strapOutOfRange {
                throw ScenarioError(message: "strap out of range")
            }
            return try await strap.accept()
        }

        let storePath = run.work.appendingPathComponent("agent.sqlite").path
        // Faults, worked out per trace second in advance: the windows in force and the moments
        // (kill, SOS, cancel, acknowledge) that come due at each row.
        let timeline = FaultTimeline(faults: scenario.faults, rows: trace.rows)
        // A board that boots without a real-time clock reads 1970 from its first moment.
        let wall = SimulatedWallClock(anchor: run.anchor)
        wall.set(unset: timeline.flags.first?.wallClockUnset ?? false)
        var baseline: RestingHeartRateEstimator?
        if let history = scenario.baselineHistory {
            var estimator = RestingHeartRateEstimator()
            for row in try Self.trace(of: history, in: options.simulationsDirectory).rows { estimator.add(row.reading) }
            baseline = estimator
        }
        let device = try await SimulatedDevice(
            scenario: scenario,
            storePath: storePath,
            durability: run.durable ? .powerLoss : .processCrash,
            credentials: credentials,
            transport: transport,
            connector: connector,
            clock: clock,
            wall: wall,
            baseline: baseline,
            logger: options.logger
        )
        try await device.connectStrap(at: first.timeMilliseconds)

        var fixIndex = 0
        var fixLoopOffset: Int64 = 0
        let fixLogLength = (fixes.last?.offsetMilliseconds ?? 0) + 1000
        var previousFlags = FaultFlags()
        var heartRateSeries: [(Int64, Int)] = []
        heartRateSeries.reserveCapacity(trace.rows.count)
        let duration = max(1, last.timeMilliseconds - first.timeMilliseconds)
        var lastProgress = -1

        defer { fieldGPS?.stop() }
        // Watched, the run goes at real time from its anchor, so the wall times it files stay the
        // present (seconds that passed before a console connected are caught up at once).
        let realStart = run.anchor.instant(ofTraceMilliseconds: first.timeMilliseconds) ?? ContinuousClock.now
        var fieldFixSerial = 0

        let realTime = options.field || scenario.pace == .realtime || run.anchor.isPresent
        // Heart rate decoded ahead by the link, for the rows from `decodedFrom` on.
        var decoded: [SimulatedDevice.DecodedReading?] = []
        var decodedFrom = 0
        // The board's battery: written as the kernel's supply files before each of the agent's polls.
        let powerSupply = SimulatedDevice.powerSupplyPath(storePath: storePath)
        let powerPollMilliseconds = Int64(((scenario.power?.pollSeconds ?? PowerConfiguration().pollSeconds) * 1000).rounded())
        var nextPowerPoll = first.timeMilliseconds

        for (index, row) in trace.rows.enumerated() {
            let t = row.timeMilliseconds
            if realTime {
                // Real time: this trace second happens when the wall clock gets there (pacing a
                // live run with real gpsd, not waiting for an event).
                try await Task.sleep(until: realStart.advanced(by: .milliseconds(t - first.timeMilliseconds)), clock: .continuous)
            }

            // Faults: windows in force now, and moments that have come. The lanes' visits are
            // awaited by the loop, so nothing is in flight when a fault changes.
            let flags = timeline.flags[index]
            let moments = timeline.moments[index]
            var crashThisSecond = false
            for fault in moments {
                switch fault.type {
                // The kill lands mid-second: after this second's readings reached the
                // pipeline, before their group commit.
                case .agentCrash: crashThisSecond = true
                case .manualSOS: await device.receive(.manualSOS, at: t)
                case .cancel: await device.receive(.cancel(fault.reason ?? .falseAlarm), at: t)
                case .acknowledge: try await device.acknowledgeOpenAlert(server: server, http: http)
                default: break
                }
            }
            wall.set(unset: flags.wallClockUnset)
            faults.update {
                $0.networkDown = flags.networkDown
                $0.serverErrorStatus = flags.serverError
                $0.strapOutOfRange = flags.linkDropped
            }
            if flags.linkDropped && !previousFlags.linkDropped { await device.dropStrapLink(strap: strap, at: t) }
            if !flags.linkDropped && previousFlags.linkDropped { try await device.connectStrap(at: t) }
            if flags.strapSilent != previousFlags.strapSilent { await strap.setNotifying(!flags.strapSilent) }
            previousFlags = flags

            // Position: the fixes of this second, unless gpsd is stopped.
            if let fieldGPS, !flags.gpsdStopped, let newest = fieldGPS.fix(newerThan: fieldFixSerial) {
                fieldFixSerial = newest.serial
                await device.deliveredFix(newest.fix, at: t)
            }
            if !fixes.isEmpty {
                while true {
                    let fix = fixes[fixIndex]
                    let at = first.timeMilliseconds + fixLoopOffset + fix.offsetMilliseconds
                    if at > t { break }
                    if !flags.gpsdStopped { await device.position(fix.fix, at: at) }
                    fixIndex += 1
                    if fixIndex == fixes.count {
                        guard scenario.gps?.loop == true else {
                            fixIndex = fixes.count - 1
                            fixLoopOffset = Int64.max / 4
                            break
                        }
                        fixIndex = 0
                        fixLoopOffset += fixLogLength
                    }
                }
            }

            // Heart rate: this second's notification, over the air. In fast mode the strap
            // sends the notifications of a stretch of seconds in which no fault changes at
            // once, and each reaches the rules at its own trace second.
            if !flags.linkDropped && !flags.strapSilent {
                if index >= decodedFrom + decoded.count {
                    let end = realTime ? index + 1 : timeline.stretchEnd(from: index, limit: 32)
                    let readings = trace.rows[index..<end].map { flags.transmitted($0.reading) }
                    decoded = try await device.deliver(readings, strap: strap, at: t)
                    decodedFrom = index
                }
                if let received = decoded[index - decodedFrom] {
                    await device.heartRate(received, at: t)
                    heartRateSeries.append((t, received.reading.bpm))
                }
            }

            if crashThisSecond { try await device.crashAndRestart(at: t) }

            if let power = scenario.power, t >= nextPowerPoll {
                try Self.writePowerSupply(power.state(at: Double(t) / 1000), to: powerSupply)
                await device.pollPower(at: t)
                nextPowerPoll = t + powerPollMilliseconds
            }

            // Time passes: the rules' clock, the dispatch lane, the group commit, the sync lane.
            await device.tick(at: t)
            await device.tick(at: t + 500)
            await device.commit()
            if t >= device.nextSyncVisit { await device.syncStep(at: t) }
            if scenario.power != nil { try await device.notePowerAtServer(server, at: t) }

            let percent = Int(Double(t - first.timeMilliseconds) / Double(duration) * 100)
            if percent != lastProgress {
                lastProgress = percent
                options.progress?(Double(percent) / 100)
            }
        }

        // The end: the network is back (unless the scenario ends offline), drain what is left.
        let endFlags = faults.current
        await device.commit()
        if !endFlags.networkDown && endFlags.serverErrorStatus == nil {
            await device.finalDrain(at: last.timeMilliseconds)
        }

        if let serveUntil, ContinuousClock.now < serveUntil {
            // The run is over; the console stays up for whoever is watching.
            try? await Task.sleep(until: serveUntil)
        }
        let readings = try await device.readingCounts(server: server)
        let duplicateAlertUpdates = try await Self.duplicateAlertUpdates(at: server)
        var alerts = await device.alertReport()
        alerts.sort { $0.firstCriticalMilliseconds < $1.firstCriticalMilliseconds }
        if scenario.power != nil { try await device.notePowerAtServer(server, at: last.timeMilliseconds) }
        await device.shutdown()

        var report = SimulationReport(
            scenario: scenario.name,
            seed: scenario.seed ?? 1,
            mode: options.field ? "field" : options.io.mode,
            virtualDurationMilliseconds: duration,
            wallMilliseconds: Self.milliseconds(ContinuousClock.now - run.started),
            alerts: alerts,
            readings: readings,
            alertUpdatesDuplicateAtServer: duplicateAlertUpdates,
            power: scenario.power == nil ? nil : device.powerReport,
            faults: scenario.faults,
            expectations: []
        )
        report.expectations = ExpectationEvaluator.evaluate(scenario.expectations, report: report)
        // The limits the run started with (a learned baseline lowers the minimum).
        let limits = HeartRateLimits(profile: scenario.person, learnedRestingRate: baseline?.estimate)
        return Outcome(
            report: report,
            renderer: ReportRenderer(
                report: report,
                heartRate: heartRateSeries.map { ($0.0 - first.timeMilliseconds, $0.1) },
                minimumHeartRate: limits.minimum,
                maximumHeartRate: limits.maximum,
                originMilliseconds: first.timeMilliseconds
            )
        )
    }

    /// The server's count of alert updates it was sent again
    /// (`trackme_server_alert_updates_duplicate_total`), from its `/metrics` as an administrator
    /// reads it, through the router in process (in either mode: the count is the server's, not
    /// the connection's).
    static func duplicateAlertUpdates(at server: TrackMeServer) async throws -> Int {
        let name = "trackme_server_alert_updates_duplicate_total"
        let response = try await InProcessRouter(server: server).execute(
            uri: "/metrics",
            method: .get,
            headers: [.authorization: "Bearer \(adminToken)"]
        )
        guard response.status == .ok else { throw ScenarioError(message: "the server's /metrics answered \(response.status)") }
        let text = String(buffer: response.body)
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            if let value = Int(line.dropFirst(name.count + 1)) { return value }
        }
        throw ScenarioError(message: "the server's /metrics has no \(name)")
    }

    /// Writes the board's battery as Linux's `power_supply` class shows it
    /// (`BAT0/type`, `capacity`, `status`); nil (before the timeline's first point) leaves no
    /// supply at all.
    static func writePowerSupply(_ state: (capacity: Int, charging: Bool)?, to path: String) throws {
        let battery = (path as NSString).appendingPathComponent("BAT0")
        guard let state else {
            try? FileManager.default.removeItem(atPath: battery)
            return
        }
        try FileManager.default.createDirectory(atPath: battery, withIntermediateDirectories: true)
        let status = state.charging ? (state.capacity >= 100 ? "Full" : "Charging") : "Discharging"
        for (file, value) in [("type", "Battery"), ("capacity", "\(state.capacity)"), ("status", status)] {
            try Data((value + "\n").utf8).write(to: URL(fileURLWithPath: (battery as NSString).appendingPathComponent(file)))
        }
    }

    /// The selected part of a heart-rate source, repeated as it asks.
    static func trace(of source: Scenario.HeartRateSource, in directory: URL) throws -> HeartRateTrace {
        var trace = try HeartRateTrace(csv: String(contentsOf: directory.appendingPathComponent(source.trace), encoding: .utf8))
        let from = Int64(((source.fromSeconds ?? 0) * 1000).rounded())
        let to = source.toSeconds.map { Int64(($0 * 1000).rounded()) } ?? Int64.max
        trace.rows = trace.rows.filter { $0.timeMilliseconds >= from && $0.timeMilliseconds <= to }
        if let until = source.repeatUntilSeconds {
            trace = trace.repeated(untilMilliseconds: Int64((until * 1000).rounded()))
        }
        return trace
    }

    static func milliseconds(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    func quiet(_ label: String) -> Logger {
        var logger = options.logger
        logger[metadataKey: "component"] = "\(label)"
        return logger
    }
}

struct FaultFlags: Equatable {
    var networkDown = false
    var serverError: Int?
    var linkDropped = false
    var strapSilent = false
    var contactLoss = false
    var flatline = false
    var gpsdStopped = false
    var wallClockUnset = false
}

extension FaultFlags {
    /// What the strap sends for a trace reading while these faults are in force.
    func transmitted(_ reading: HeartRateReading) -> HeartRateReading {
        if flatline { return HeartRateReading(bpm: 0, contact: .detected) }
        if contactLoss { return HeartRateReading(bpm: 0, contact: .notDetected) }
        return reading
    }
}

/// The scenario's faults laid over the trace's rows: which windows are in force at each row,
/// and which moments (kill, SOS, cancel, acknowledge) come due there (the first row at or after
/// the moment).
struct FaultTimeline {
    var flags: [FaultFlags]
    var moments: [[Scenario.Fault]]

    init(faults: [Scenario.Fault], rows: [HeartRateTrace.Row]) {
        flags = []
        flags.reserveCapacity(rows.count)
        moments = Array(repeating: [], count: rows.count)
        var applied = Set<Int>()
        for (rowIndex, row) in rows.enumerated() {
            let seconds = Double(row.timeMilliseconds) / 1000
            var f = FaultFlags()
            for (index, fault) in faults.enumerated() {
                switch fault.type {
                case .networkDown: if fault.covers(seconds) { f.networkDown = true }
                case .serverErrors: if fault.covers(seconds) { f.serverError = fault.status ?? 500 }
                case .strapLinkDrop: if fault.covers(seconds) { f.linkDropped = true }
                case .strapSilent: if fault.covers(seconds) { f.strapSilent = true }
                case .contactLoss: if fault.covers(seconds) { f.contactLoss = true }
                case .flatline: if fault.covers(seconds) { f.flatline = true }
                case .gpsdStopped: if fault.covers(seconds) { f.gpsdStopped = true }
                case .wallClockUnset: if fault.covers(seconds) { f.wallClockUnset = true }
                case .agentCrash, .manualSOS, .cancel, .acknowledge:
                    guard fault.fromSeconds <= seconds, applied.insert(index).inserted else { continue }
                    moments[rowIndex].append(fault)
                }
            }
            flags.append(f)
        }
    }

    /// The end (exclusive) of the stretch of rows from `start` in which nothing changes: the
    /// same windows in force and no moment after the first row; at most `limit` rows, and a
    /// row with a kill stands alone (the restarted agent has a new link).
    func stretchEnd(from start: Int, limit: Int) -> Int {
        if moments[start].contains(where: { $0.type == .agentCrash }) { return start + 1 }
        var end = start + 1
        while end < flags.count, end - start < limit, flags[end] == flags[start], moments[end].isEmpty { end += 1 }
        return end
    }
}
