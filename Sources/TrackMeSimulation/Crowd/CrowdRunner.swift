import AsyncHTTPClient
import EdgeSync
public import Foundation
import HTTPTypes
public import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// Runs a crowd scenario: every device's own agent parts (`CrowdDevice`) against one real
/// `trackme-server` in process on loopback, stepped one trace second at a time on a virtual
/// clock that is also the server's wall clock. After each second, spectators (the public run
/// page's JSON) or the fleet desk (`/v1/fleet`) are read over HTTP, as a browser would, and what
/// they saw is compared with what the devices recorded.
public struct CrowdRunner: Sendable {
    public struct Options: Sendable {
        public var simulationsDirectory: URL
        /// The scenario file's folder: a recorded race's paths are relative to it.
        public var scenarioDirectory: URL?
        public var logger: Logger
        /// Devices stepped side by side within a second (both cores: the devices and the server).
        public var concurrency: Int = 8
        /// Overrides the scenario's runner (or wearer) count and duration (`trackme-sim bench race`,
        /// `bench population`).
        public var runners: Int?
        public var durationSeconds: Int?
        /// Measure the server's `GET /health` rate first, as the baseline of `bench race`.
        public var measureHealth = false
        /// Keep the server up for people to watch (`trackme-sim run --serve`): the page and a
        /// sign-in are announced, the run goes at real time, one trace second a second, and the
        /// server stays up until `seconds` after the announcement.
        public var serve: ScenarioRunner.Serve?
        /// The server's port; 0 picks a free one.
        public var port = 0
        /// Fast mode (`trackme-sim run --fast`): every device's requests and the harness's own
        /// reads go to the server's router in process (`InProcessRouter`), no socket; the devices,
        /// the server's handlers and its store run the same code.
        public var inProcess = false

        public init(simulationsDirectory: URL, logger: Logger) {
            self.simulationsDirectory = simulationsDirectory
            self.logger = logger
        }
    }

    public struct Outcome: Sendable {
        public var passed: Bool
        /// One line per expectation and figure.
        public var lines: [String]
        public var figures: [String: Double]
        /// A recorded race's runners and figures (`RecordedRace`).
        public var race: RecordedRace.Report?
        /// Recorded rides as the fleet board showed them (`--report`'s `fleet`).
        public var fleet: RecordedFleetReport?
        /// Alerts the devices raised (`--report`'s `alerts`).
        public var alerts: [CrowdAlert] = []
        /// How the devices reached the server: `sockets` (loopback) or `fast` (its router in process).
        public var mode = "sockets"
    }

    public var options: Options

    public init(options: Options) {
        self.options = options
    }

    /// The virtual clock the devices and the server share (trace ms; wall = the anchor's wall of ms).
    final class VirtualWall: Sendable {
        let anchor: WallAnchor
        private let value = Mutex<Int64>(0)

        init(anchor: WallAnchor) { self.anchor = anchor }

        var ms: Int64 { value.withLock { $0 } }
        func set(_ ms: Int64) { value.withLock { $0 = ms } }
        var wall: Int64 { anchor.wall(ms) }
    }

    struct Context {
        let server: TrackMeServer
        let base: String
        let http: HTTPClient
        /// Fast mode's router in process; nil over loopback.
        let router: InProcessRouter?
        let transport: any HTTPTransport
        let wall: VirtualWall
        /// The devices' lane clock, moved with the wall.
        let clock: VirtualClock
        let work: URL
        let logger: Logger
        /// Set when the run is served for people to watch.
        let watch: Watch?

        /// Trace `second` begins for the server and every device: waited for when the run is
        /// watched, the wall set to it and the devices' clock moved with it. Its trace ms.
        func enter(_ second: Int) async throws -> Int64 {
            try await CrowdRunner.pace(second, on: wall.anchor)
            let ms = Int64(second) * 1000
            wall.set(ms)
            if second > 0 { clock.advance(by: .seconds(1)) }
            return ms
        }
    }

    /// A run served for people to watch (`Options.serve`): when its page was first announced.
    final class Watch: Sendable {
        let serve: ScenarioRunner.Serve
        private let announced = Mutex<ContinuousClock.Instant?>(nil)
        /// The password of each role's account made for the watchers (one per role).
        private let passwords = Mutex<[String: String]>([:])

        init(_ serve: ScenarioRunner.Serve) { self.serve = serve }

        /// The role's password, and whether the account still has to be created.
        func password(_ role: String) -> (password: String, new: Bool) {
            passwords.withLock {
                if let known = $0[role] { return (known, false) }
                let password = String(UUID().uuidString.prefix(18))
                $0[role] = password
                return (password, true)
            }
        }

        /// The server stays up until then.
        var until: ContinuousClock.Instant? { announced.withLock { $0.map { $0.advanced(by: .seconds(serve.seconds)) } } }

        func announce(_ url: String, _ username: String, _ password: String) {
            announced.withLock { $0 = $0 ?? ContinuousClock.now }
            serve.announce(url, username, password)
        }
    }

    /// For a served run: an account of `role` to sign in with, created over the API, and `page`
    /// announced with it.
    func watchFrom(_ context: Context, page: String, role: String, displayName: String) async throws {
        guard let watch = context.watch else { return }
        let username = "demo-" + role.replacingOccurrences(of: "_", with: "-")
        let (password, new) = watch.password(role)
        if new {
            _ = try await request(
                context,
                "POST",
                "/v1/accounts",
                json: ["username": username, "password": password, "display_name": displayName, "role": role]
            )
        }
        watch.announce(context.base + page, username, password)
    }

    /// Waits for trace `second`'s real time when the run is watched (anchored at the present),
    /// so the wall time the server and devices read is the real one.
    static func pace(_ second: Int, on anchor: WallAnchor) async throws {
        guard let due = anchor.instant(ofTraceMilliseconds: Int64(second) * 1000) else { return }
        try await Task.sleep(until: due, clock: .continuous)
    }

    public func run(_ scenario: CrowdScenario) async throws -> Outcome {
        // A crowd never fsyncs (`.processCrash` on both sides): in fast mode its files are in memory.
        let work = try WorkDirectory.make("trackme-crowd", inMemory: options.inProcess)
        defer { try? FileManager.default.removeItem(at: work) }
        // Watched, trace second 0 is the present, so the pages' ages and times are real;
        // otherwise a fixed date, so the same seed gives the same outcome.
        let wall = VirtualWall(anchor: options.serve == nil ? .fixed : .present(atTraceMilliseconds: 0))
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: options.port,
                storage: .sqlite(path: work.appendingPathComponent("server.sqlite").path),
                durability: .processCrash,
                adminToken: Self.admin,
                wallClock: { wall.wall },
                limits: .withoutRateLimits
            ),
            logger: quietLogger("trackme.crowd.server")
        )
        if options.inProcess, options.serve != nil {
            throw ScenarioError(message: "fast mode has no socket for a browser: --serve needs the sockets mode")
        }
        let router = options.inProcess ? InProcessRouter(server: server) : nil
        let serverTask = router == nil ? Task { try await server.run() } : nil
        defer { serverTask?.cancel() }
        let base = router == nil ? "http://127.0.0.1:\(try await server.boundPort())" : "http://in-process"
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        guard let baseURL = URL(string: base) else { throw ScenarioError(message: "bad server URL") }
        let context = Context(
            server: server,
            base: base,
            http: http,
            router: router,
            transport: router.map { InProcessTransport(router: $0) as any HTTPTransport }
                ?? CurlTransport(baseURL: baseURL, keptConnections: options.concurrency),
            wall: wall,
            clock: VirtualClock(),
            work: work,
            logger: options.logger,
            watch: options.serve.map(Watch.init)
        )
        var outcome = Outcome(passed: true, lines: [], figures: [:])
        outcome.mode = router == nil ? "sockets" : "fast"
        do {
            if let race = scenario.crowd.race {
                try await runRace(race, scenario: scenario, context: context, into: &outcome)
            }
            if let fleet = scenario.crowd.fleet {
                if let trips = fleet.trips {
                    try await runRecordedFleet(fleet, trips: trips, scenario: scenario, context: context, into: &outcome)
                } else {
                    try await runFleet(fleet, scenario: scenario, context: context, into: &outcome)
                }
            }
            if let rides = scenario.crowd.rides {
                try await runRides(rides, scenario: scenario, context: context, into: &outcome)
            }
            if let population = scenario.crowd.population {
                try await runPopulation(population, scenario: scenario, context: context, into: &outcome)
            }
        } catch {
            try? await http.shutdown()
            throw error
        }
        if let until = context.watch?.until, ContinuousClock.now < until {
            // The run is over; the page stays up for whoever is watching.
            try? await Task.sleep(until: until, clock: .continuous)
        }
        try? await http.shutdown()
        return outcome
    }

    static let admin = "crowd-admin-token"

    // MARK: Race

    struct Runner {
        var device: CrowdDevice
        var name: String
        var show: Bool
        var paceSecondsPerKm: Double
        var startOffset: Double
        /// A slow swing of ±4 % in speed over a few minutes, so runners overtake each other.
        var swingPeriod: Double
        var swingPhase: Double
        /// What the device recorded: trace ms -> metres along the course.
        var truth: [Int64: Double] = [:]
        /// Fixes taken while the network was up (the spectator lag counts only these).
        var onlineFixes: [Int64] = []
        /// When the fix taken at trace ms entered the pipeline (real time).
        var enteredAt: [Int64: ContinuousClock.Instant] = [:]
        /// A collapsing runner's strap notifications by race second, and the second they stop.
        var strap: [Int: [HeartRateReading]] = [:]
        var stopsAt: Int?

        func metres(at seconds: Double, length: Double) -> Double {
            let running = max(0, min(seconds, stopsAt.map(Double.init) ?? seconds) - startOffset)
            let swing = 1 + 0.04 * sin(2 * .pi * running / swingPeriod + swingPhase)
            return min(length, running * 1000 / paceSecondsPerKm * swing)
        }
    }

    func batchCount(_ runners: [Runner]) async -> Int {
        var total = 0
        for runner in runners { total += await runner.device.batchesSent }
        return total
    }

    func runRace(_ race: CrowdScenario.Race, scenario: CrowdScenario, context: Context, into outcome: inout Outcome) async throws {
        if let tracks = race.tracks { return try await runRecordedRace(race, tracks: tracks, scenario: scenario, context: context, into: &outcome) }
        let gpx = try String(contentsOf: options.simulationsDirectory.appendingPathComponent(race.course), encoding: .utf8)
        let path = try RunPath.parseGPX(gpx)
        let count = options.runners ?? race.runners
        let duration = options.durationSeconds ?? race.durationSeconds
        var random = SplitMix64(seed: scenario.seed ?? 21)
        // The organiser: the run and its enrolment, over the real API.
        let created = try await request(
            context,
            "POST",
            "/v1/runs",
            json: [
                "name": scenario.name, "start_ms": context.wall.anchor.wall(0), "end_ms": context.wall.anchor.wall(6 * 3600 * 1000),
                "code": "SIM-RACE", "gpx": gpx,
            ]
        )
        guard let runID = created["id"] as? String else { throw ScenarioError(message: "the server did not create the run: \(created)") }
        _ = try await request(context, "POST", "/v1/runs/\(runID)/enrolment", json: ["open": true])
        try await watchFrom(context, page: "/runs/\(runID)", role: "organiser", displayName: "Demo organiser")

        var runners: [Runner] = []
        for index in 0..<count {
            let id = String(format: "runner-%03d", index + 1)
            let name = String(format: "Runner %03d", index + 1)
            let device = try await context.device(
                id,
                person: PersonProfile(name: name, age: 20 + index % 50),
                profile: .runner,
                seed: UInt64(index + 1),
                wearsStrap: race.collapse?.runner == index + 1
            )
            let show = random.nextDouble() < race.showFraction
            // The runner's own commands, as `trackme-agent run-join CODE --show` and `run-check-in`.
            _ = try await device.control.joinRun(code: "SIM-RACE", show: show)
            _ = try await device.control.checkInToRun()
            let pace = min(600, max(150, race.paceMeanSecondsPerKm + race.paceSpreadSecondsPerKm * random.nextGaussian()))
            runners.append(
                Runner(
                    device: device,
                    name: name,
                    show: show,
                    paceSecondsPerKm: pace,
                    startOffset: Double(index % 20),
                    swingPeriod: 120 + 240 * random.nextDouble(),
                    swingPhase: 2 * .pi * random.nextDouble()
                )
            )
        }

        if let collapse = race.collapse {
            guard runners.indices.contains(collapse.runner - 1) else {
                throw ScenarioError(message: "collapse.runner \(collapse.runner) is not one of the \(count) runners")
            }
            let text = try String(contentsOf: options.simulationsDirectory.appendingPathComponent(collapse.trace), encoding: .utf8)
            let trace: HeartRateTrace
            do { trace = try HeartRateTrace(csv: text) } catch { throw ScenarioError(message: "\(collapse.trace): \(error)") }
            runners[collapse.runner - 1].strap = Self.bySecond(trace)
            runners[collapse.runner - 1].stopsAt = collapse.onsetSeconds
        }
        if options.measureHealth {
            outcome.figures["health_per_s"] = try await healthRate(context, seconds: 3)
        }
        var lags: [Double] = []
        var realLags: [Double] = []
        var orderViolations = 0
        var firstSwap: String?
        var polls = 0
        var lastSeen: [String: Int64] = [:]
        let nameIndex = Dictionary(uniqueKeysWithValues: runners.enumerated().map { ($1.name, $0) })
        let started = ContinuousClock.now
        for second in 0...duration {
            let ms = try await context.enter(second)
            // Each device: its fix of this second through its pipeline, commit, its lane.
            let snapshot = runners
            let entered = await withTaskGroup(of: (Int, Double, ContinuousClock.Instant, Bool).self) { group in
                var results: [(Int, Double, ContinuousClock.Instant, Bool)] = []
                var next = 0
                func add(_ i: Int) {
                    let runner = snapshot[i]
                    group.addTask {
                        let metres = runner.metres(at: Double(second), length: path.length)
                        let online = !(race.tunnelFromMetres.map { metres >= $0 } ?? false && race.tunnelToMetres.map { metres < $0 } ?? false)
                        await runner.device.networkDown(!online)
                        let point = path.point(at: metres)
                        let stopped = runner.stopsAt.map { second >= $0 } ?? false
                        let fix = PositionFix(
                            mode: .threeDimensional,
                            latitude: point.latitude,
                            longitude: point.longitude,
                            speed: stopped ? 0 : 1000 / runner.paceSecondsPerKm
                        )
                        for reading in runner.strap[second] ?? [] { await runner.device.heartRate(reading, at: ms) }
                        let at = ContinuousClock.now
                        await runner.device.position(fix, at: ms)
                        await runner.device.commit()
                        await runner.device.syncStep(at: ms)
                        return (i, metres, at, online)
                    }
                }
                while next < min(options.concurrency, snapshot.count) {
                    add(next)
                    next += 1
                }
                for await result in group {
                    results.append(result)
                    if next < snapshot.count {
                        add(next)
                        next += 1
                    }
                }
                return results
            }
            for (i, metres, at, online) in entered {
                runners[i].truth[ms] = metres
                runners[i].enteredAt[ms] = at
                if online { runners[i].onlineFixes.append(ms) }
            }
            // Spectators read the public page's data.
            let view = try await request(context, "GET", "/v1/public/runs/\(runID)", token: nil)
            polls += 1
            let seenAt = ContinuousClock.now
            let shown = view["runners"] as? [[String: Any]] ?? []
            var shownDistances: [Double] = []
            var shownLabels: [String] = []
            for entry in shown {
                guard let name = entry["name"] as? String, let i = nameIndex[name], let fixWall = (entry["fix_ms"] as? NSNumber)?.int64Value else {
                    continue
                }
                guard runners[i].show else {
                    outcome.lines.append("FAIL a runner who did not consent was shown: \(name)")
                    outcome.passed = false
                    continue
                }
                let fixMs = fixWall - context.wall.anchor.origin
                shownDistances.append(runners[i].truth[fixMs] ?? -1)
                shownLabels.append(
                    "\(name) at \(String(format: "%.1f", runners[i].truth[fixMs] ?? -1)) m (server \((entry["distance_m"] as? NSNumber)?.doubleValue ?? -1) m, fix \(fixMs) ms, now \(ms) ms)"
                )
                if lastSeen[name].map({ fixMs > $0 }) ?? true {
                    // Every online fix between the last one seen and this one became visible now.
                    for t in runners[i].onlineFixes where t > (lastSeen[name] ?? -1) && t <= fixMs {
                        lags.append(Double(ms - t) / 1000)
                        if let at = runners[i].enteredAt[t], t == fixMs { realLags.append(ScenarioRunner.milliseconds(seenAt - at) / 1000) }
                    }
                    lastSeen[name] = fixMs
                }
            }
            // The order spectators saw against the positions the devices recorded at those fixes.
            if let swap = zip(shownDistances, shownDistances.dropFirst()).enumerated().first(where: { $0.element.0 < $0.element.1 - 0.5 }) {
                orderViolations += 1
                if firstSwap == nil { firstSwap = "\(shownLabels[swap.offset]) shown ahead of \(shownLabels[swap.offset + 1])" }
            }
        }
        let elapsed = ContinuousClock.now - started
        // The end: every device drains what it holds (those in the tunnel come out).
        context.wall.set(Int64(duration) * 1000 + 1000)
        for runner in runners { await runner.device.drain() }
        let final = try await request(context, "GET", "/v1/public/runs/\(runID)", token: nil)
        let finalNames = (final["runners"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        let expectedLeader = runners.filter(\.show).max {
            ($0.truth.max { $0.key < $1.key }?.value ?? 0) < ($1.truth.max { $0.key < $1.key }?.value ?? 0)
        }?.name

        var tally = DeliveryTally()
        for runner in runners {
            try await tally.add(runner.device, server: context.server)
            await runner.device.close()
        }
        let p50 = Self.percentile(lags, 0.5)
        let p99 = Self.percentile(lags, 0.99)
        let tunnelled = runners.filter { $0.onlineFixes.count < $0.truth.count }.count
        outcome.figures["race.runners"] = Double(count)
        outcome.figures["race.fixes"] = Double(tally.fixes)
        outcome.figures["race.lag_p50_s"] = p50
        outcome.figures["race.lag_p99_s"] = p99
        outcome.figures["race.real_lag_p50_s"] = Self.percentile(realLags, 0.5)
        outcome.figures["race.real_lag_p99_s"] = Self.percentile(realLags, 0.99)
        outcome.figures["race.batches_per_s"] = Double(await batchCount(runners)) / max(0.001, ScenarioRunner.milliseconds(elapsed) / 1000)
        outcome.figures["race.runner_seconds_per_s"] = Double(count * (duration + 1)) / max(0.001, ScenarioRunner.milliseconds(elapsed) / 1000)
        outcome.lines.append(
            "race: \(count) runners (\(runners.filter(\.show).count) shown, \(tunnelled) through the tunnel), \(duration + 1) s at 1 Hz, \(tally.fixes) fixes, \(polls) spectator reads, \(String(format: "%.1f", ScenarioRunner.milliseconds(elapsed) / 1000)) s"
        )
        check(&outcome, tally.whole, tally.description)
        if let limit = scenario.expect.spectatorLagP99Seconds {
            check(
                &outcome,
                !lags.isEmpty && p99 <= limit,
                "spectators see each consenting runner's fix (online) within \(limit) s, p99: p50 \(String(format: "%.2f", p50)) s, p99 \(String(format: "%.2f", p99)) s of trace time over \(lags.count) fixes (real time from the pipeline to the page: p50 \(String(format: "%.3f", outcome.figures["race.real_lag_p50_s"] ?? 0)) s, p99 \(String(format: "%.3f", outcome.figures["race.real_lag_p99_s"] ?? 0)) s)"
            )
        }
        check(
            &outcome,
            orderViolations == 0,
            "the order spectators saw matches the devices' recorded positions in all \(polls) reads (\(orderViolations) out of order\(firstSwap.map { "; first: \($0)" } ?? ""))"
        )
        check(
            &outcome,
            finalNames.first == expectedLeader,
            "the leader at the end is the consenting runner furthest along: \(finalNames.first ?? "none") (expected \(expectedLeader ?? "none"))"
        )
        check(
            &outcome,
            finalNames.count == runners.filter(\.show).count,
            "every consenting runner and no one else is on the page at the end: \(finalNames.count) shown"
        )
        if race.tunnelFromMetres != nil {
            check(&outcome, tunnelled > 0, "some runners lost the network in the tunnel: \(tunnelled)")
        }
        try await checkCollapse(race, scenario: scenario, runners: runners, context: context, into: &outcome)
    }

    /// The collapsed runner's alert is on the dispatcher's board (the server's open alerts), it
    /// came within the scenario's limit of the onset, and no other runner raised one.
    func checkCollapse(
        _ race: CrowdScenario.Race,
        scenario: CrowdScenario,
        runners: [Runner],
        context: Context,
        into outcome: inout Outcome
    ) async throws {
        var raisedBy: [String: [AlertKind]] = [:]
        for runner in runners {
            let raised = await runner.device.raised
            if !raised.isEmpty { raisedBy[runner.device.deviceID] = raised.values.sorted { $0.rawValue < $1.rawValue } }
        }
        let board = try await request(context, "GET", "/v1/alerts?status=open")
        let open = (board["alerts"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String }
        guard let collapse = race.collapse else {
            check(
                &outcome,
                raisedBy.isEmpty && open.isEmpty,
                "no runner raised an alert: \(raisedBy.keys.sorted()) raised, \(open.count) open on the board"
            )
            return
        }
        let device = runners[collapse.runner - 1].device
        let delivered = await device.delivered.values.min()
        let kinds = raisedBy[device.deviceID]?.map(\.rawValue).joined(separator: ", ") ?? "none"
        let delay = delivered.map { Double($0) / 1000 - Double(collapse.onsetSeconds) }
        outcome.figures["race.collapse_alert_s"] = delay ?? -1
        check(
            &outcome,
            open.contains(device.deviceID),
            "the collapsed runner's alert (\(kinds)) is open on the dispatcher's board: \(open.count) open alert(s)"
        )
        if let limit = scenario.expect.alertWithinSeconds {
            check(
                &outcome,
                delay.map { $0 <= limit } ?? false,
                "the server accepted it within \(limit) s of the onset: \(delay.map { String(format: "%.0f s", $0) } ?? "never")"
            )
        }
        let others = raisedBy.keys.filter { $0 != device.deviceID }.sorted()
        check(
            &outcome,
            others.isEmpty && open.allSatisfy { $0 == device.deviceID },
            "no other runner raised an alert: \(others.map { "\($0) (\(raisedBy[$0]?.map(\.rawValue).joined(separator: ", ") ?? ""))" })"
        )
    }

    // MARK: Fleet

    struct Taxi {
        var device: CrowdDevice
        /// Stands visited, in order (zone index, latitude, longitude), and when it leaves each.
        var zone: Int
        var latitude: Double
        var longitude: Double
        var state: TaxiAvailability = .unavailable
        var dwellUntil: Int = 0
        var target: (zone: Int, latitude: Double, longitude: Double)?
        var riding = false
    }

    func runFleet(_ fleet: CrowdScenario.Fleet, scenario: CrowdScenario, context: Context, into outcome: inout Outcome) async throws {
        var random = SplitMix64(seed: (scenario.seed ?? 21) &+ 1)
        // The operator's zones, over the API (the desk below finds them by name).
        for zone in fleet.zones {
            let created = try await request(context, "POST", "/v1/fleet/zones", json: ["name": zone.name, "polygon": zone.polygon])
            guard created["id"] is String else { throw ScenarioError(message: "zone not created: \(created)") }
        }
        func stand(in zone: Int) -> (Double, Double) {
            let corners = fleet.zones[zone].polygon
            let lats = corners.map { $0[0] }
            let lons = corners.map { $0[1] }
            // Inside the zone's bounding box shrunk by a quarter (the zones are rectangles).
            let (south, north) = (lats.min() ?? 0, lats.max() ?? 0)
            let (west, east) = (lons.min() ?? 0, lons.max() ?? 0)
            let lat = south + (north - south) * (0.25 + 0.5 * random.nextDouble())
            let lon = west + (east - west) * (0.25 + 0.5 * random.nextDouble())
            return (lat, lon)
        }
        var taxis: [Taxi] = []
        for index in 0..<fleet.taxis {
            let id = String(format: "taxi-%03d", index + 1)
            let person = PersonProfile(name: String(format: "Cab %03d", index + 1), age: 45)
            let device = try await context.device(
                id,
                person: person,
                profile: .taxi,
                seed: UInt64(1000 + index)
            )
            let zone = index % fleet.zones.count
            let (lat, lon) = stand(in: zone)
            taxis.append(Taxi(device: device, zone: zone, latitude: lat, longitude: lon, dwellUntil: 5 + index % 40))
        }
        let zones = fleet.zones.enumerated().map {
            FleetZone(id: "\($0.offset)", name: $0.element.name, polygon: $0.element.polygon, createdMilliseconds: 0)
        }
        func zoneIndex(_ taxi: Taxi) -> Int? { zones.firstIndex { $0.contains(latitude: taxi.latitude, longitude: taxi.longitude) } }
        // Arrivals (an available taxi in a zone it was not available in a second ago) waiting to
        // be seen queued; state changes out of a queue waiting to be seen leave it.
        var arrivals: [(taxi: Int, zone: Int, at: Int)] = []
        var departures: [(taxi: Int, zone: Int, at: Int)] = []
        var previous: [(zone: Int?, state: TaxiAvailability)] = taxis.map { _ in (nil, .unavailable) }
        var queuedDelays: [Double] = []
        var leaveDelays: [Double] = []
        var cruised = 0
        try await watchFrom(context, page: "/", role: "fleet_operator", displayName: "Demo fleet operator")
        let started = ContinuousClock.now
        for second in 0...fleet.durationSeconds {
            let ms = try await context.enter(second)
            for i in taxis.indices {
                var taxi = taxis[i]
                var command: TaxiStateMachine.Event?
                var speed = 0.0
                if let target = taxi.target {
                    let dLat = (target.latitude - taxi.latitude) * RunPath.metresPerDegree
                    let dLon = (target.longitude - taxi.longitude) * RunPath.metresPerDegree * cos(taxi.latitude * .pi / 180)
                    let distance = (dLat * dLat + dLon * dLon).squareRoot()
                    if distance <= fleet.speed {
                        taxi.latitude = target.latitude
                        taxi.longitude = target.longitude
                        taxi.zone = target.zone
                        taxi.target = nil
                        taxi.dwellUntil =
                            second + fleet.dwellSeconds[0] + Int(random.next() % UInt64(max(1, fleet.dwellSeconds[1] - fleet.dwellSeconds[0])))
                        if taxi.state != .available { command = taxi.riding ? .rideEnd : .available }
                        taxi.riding = false
                    } else {
                        taxi.latitude += (dLat / distance) * fleet.speed / RunPath.metresPerDegree
                        taxi.longitude += (dLon / distance) * fleet.speed / (RunPath.metresPerDegree * cos(taxi.latitude * .pi / 180))
                        speed = fleet.speed
                    }
                } else if second >= taxi.dwellUntil {
                    let next = (taxi.zone + 1 + Int(random.next() % UInt64(fleet.zones.count - 1))) % fleet.zones.count
                    let (lat, lon) = stand(in: next)
                    taxi.target = (next, lat, lon)
                    taxi.riding = random.nextDouble() < fleet.rideFraction
                    if taxi.riding {
                        command = .rideStart
                    } else if random.nextDouble() < (fleet.cruiseFraction ?? 0) {
                        cruised += 1
                    } else {
                        command = .unavailable
                    }
                } else if second == 0 {
                    command = .available
                }
                if let command {
                    // The driver's command, as `trackme-agent taxi ...` sends it.
                    if let state = try? await taxi.device.control.taxi(command) { taxi.state = state.taxi ?? taxi.state }
                }
                taxis[i] = taxi
                let fix = PositionFix(mode: .threeDimensional, latitude: taxi.latitude, longitude: taxi.longitude, speed: speed)
                await taxi.device.position(fix, at: ms)
                await taxi.device.commit()
                await taxi.device.syncStep(at: ms)
                let now = (zone: zoneIndex(taxi), state: taxi.state)
                if let zone = now.zone, now.state == .available, previous[i].zone != zone || previous[i].state != .available {
                    arrivals.append((i, zone, second))
                }
                if let zone = previous[i].zone, previous[i].state == .available, now.state != .available {
                    departures.append((i, zone, second))
                }
                previous[i] = now
            }
            // The fleet desk reads the board.
            let board = try await request(context, "GET", "/v1/fleet")
            var queued: [String: Set<String>] = [:]
            for zone in board["zones"] as? [[String: Any]] ?? [] {
                guard let name = zone["name"] as? String else { continue }
                queued[name] = Set((zone["queue"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String })
            }
            arrivals.removeAll { arrival in
                let id = taxis[arrival.taxi].device.deviceID
                if queued[fleet.zones[arrival.zone].name]?.contains(id) == true {
                    queuedDelays.append(Double(second - arrival.at))
                    return true
                }
                // Gone from the zone, or no longer available, before a fix showed it there.
                return previous[arrival.taxi].zone != arrival.zone || previous[arrival.taxi].state != .available
            }
            departures.removeAll { departure in
                if queued[fleet.zones[departure.zone].name]?.contains(taxis[departure.taxi].device.deviceID) != true {
                    leaveDelays.append(Double(second - departure.at))
                    return true
                }
                return false
            }
        }
        let missed = arrivals.filter { fleet.durationSeconds - $0.at > 30 }.map { "\(taxis[$0.taxi].device.deviceID)@\($0.at)s" }
        let elapsed = ContinuousClock.now - started
        context.wall.set(Int64(fleet.durationSeconds) * 1000 + 1000)
        var tally = DeliveryTally()
        for taxi in taxis {
            await taxi.device.drain()
            try await tally.add(taxi.device, server: context.server)
            await taxi.device.close()
        }
        let worstQueued = queuedDelays.max() ?? 0
        let worstLeave = leaveDelays.max() ?? 0
        outcome.figures["fleet.taxis"] = Double(fleet.taxis)
        outcome.figures["fleet.queued_max_s"] = worstQueued
        outcome.figures["fleet.leave_max_s"] = worstLeave
        outcome.lines.append(
            "fleet: \(fleet.taxis) taxis, \(fleet.zones.count) zones, \(fleet.durationSeconds + 1) s, \(tally.fixes) fixes stored, \(queuedDelays.count) arrivals (\(cruised) departures cruising, available) and \(leaveDelays.count) state changes out of a queue seen, \(String(format: "%.1f", ScenarioRunner.milliseconds(elapsed) / 1000)) s"
        )
        check(&outcome, tally.whole, tally.description)
        if let limit = scenario.expect.queuedWithinSeconds {
            check(
                &outcome,
                worstQueued <= limit && missed.isEmpty && !queuedDelays.isEmpty,
                "every taxi in the right zone's queue within \(limit) s of arriving: worst \(Int(worstQueued)) s, median \(Int(Self.percentile(queuedDelays, 0.5))) s over \(queuedDelays.count) arrivals\(missed.isEmpty ? "" : "; never queued: \(missed.prefix(5).joined(separator: ", "))")"
            )
        }
        if let limit = scenario.expect.leavesQueueWithinSeconds {
            check(
                &outcome,
                worstLeave <= limit && !leaveDelays.isEmpty,
                "a taxi leaving its stand (ride or not) is out of the queue within \(limit) s: worst \(Int(worstLeave)) s over \(leaveDelays.count)"
            )
        }
    }

    // MARK: Helpers

    /// `GET /health` answered per second over `seconds`, `options.concurrency` at a time: what
    /// the server does with no work behind a request (the baseline of `bench race`).
    func healthRate(_ context: Context, seconds: Double) async throws -> Double {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let started = ContinuousClock.now
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<options.concurrency {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < deadline {
                        _ = try await request(context, "GET", "/health", token: nil)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(total) / (ScenarioRunner.milliseconds(ContinuousClock.now - started) / 1000)
    }

    func check(_ outcome: inout Outcome, _ ok: Bool, _ line: String) {
        outcome.lines.append((ok ? "ok   " : "FAIL ") + line)
        if !ok { outcome.passed = false }
    }

    static func percentile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
    }

    /// One request to the server over HTTP (admin token unless `token` is nil), answered JSON.
    func request(
        _ context: Context,
        _ method: String,
        _ path: String,
        json: [String: Any]? = nil,
        token: String? = CrowdRunner.admin
    ) async throws -> [String: Any] {
        let payload = try json.map { ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: $0)) }
        let status: Int
        let body: ByteBuffer
        if let router = context.router {
            var headers = HTTPFields()
            if let token { headers[.authorization] = "Bearer \(token)" }
            if payload != nil { headers[.contentType] = "application/json" }
            let answer = try await router.execute(uri: path, method: HTTPRequest.Method(rawValue: method) ?? .get, headers: headers, body: payload)
            (status, body) = (answer.status.code, answer.body)
        } else {
            var request = HTTPClientRequest(url: context.base + path)
            request.method = HTTPMethod(rawValue: method)
            if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
            if let payload {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(payload)
            }
            let response = try await context.http.execute(request, timeout: .seconds(30))
            (status, body) = (Int(response.status.code), try await response.body.collect(upTo: 16 << 20))
        }
        guard (200..<300).contains(status) else {
            throw ScenarioError(message: "\(method) \(path): HTTP \(status): \(String(buffer: body))")
        }
        return (try? JSONSerialization.jsonObject(with: Data(Array(buffer: body))) as? [String: Any]) ?? [:]
    }

    /// Every item of a list that pages (`key` on each page), following `next` until the last
    /// page, the largest pages the server gives.
    func allPages(_ context: Context, _ path: String, key: String, token: String? = CrowdRunner.admin) async throws -> [[String: Any]] {
        var items: [[String: Any]] = []
        var after: String?
        repeat {
            var query = path + (path.contains("?") ? "&" : "?") + "limit=1000"
            if let after { query += "&after=\(after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? after)" }
            let page = try await request(context, "GET", query, token: token)
            items += page[key] as? [[String: Any]] ?? []
            after = page["next"] as? String
        } while after != nil
        return items
    }
}

func quietLogger(_ label: String) -> Logger {
    var logger = Logger(label: label)
    logger.logLevel = .critical
    return logger
}

extension SplitMix64 {
    /// Uniform in [0, 1).
    mutating func nextDouble() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
    /// Standard normal (Box-Muller).
    mutating func nextGaussian() -> Double {
        let u = max(1e-12, nextDouble())
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * nextDouble())
    }
}

extension CrowdRunner.Context {
    /// One member of the crowd: enrolled at the server as `person`, running the agent's own
    /// lanes on the run's clocks, with a store of its own in the run's folder (`storeName`, the
    /// device id unless given).
    func device(
        _ id: String,
        person: PersonProfile,
        profile: DeviceProfile,
        seed: UInt64,
        storeName: String? = nil,
        wearsStrap: Bool = false,
        onRideOffer: (@Sendable (RideNotice) -> Void)? = nil
    ) async throws -> CrowdDevice {
        let credentials = try await server.enrolDevice(deviceID: id, person: person)
        return try CrowdDevice(
            deviceID: id,
            token: credentials.token,
            person: person,
            profile: profile,
            transport: transport,
            storePath: work.appendingPathComponent("\(storeName ?? id).sqlite").path,
            startMilliseconds: 0,
            seed: seed,
            clock: clock,
            anchor: wall.anchor,
            wearsStrap: wearsStrap,
            onRideOffer: onRideOffer,
            logger: logger
        )
    }
}
