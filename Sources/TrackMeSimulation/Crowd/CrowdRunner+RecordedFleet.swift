import EdgeSync
import Foundation
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// The recorded fleet as the fleet board showed it (`--report`'s `fleet`).
public struct RecordedFleetReport: Codable, Sendable {
    public struct Ride: Codable, Sendable {
        public var taxiID: String
        public var tripID: String
        /// From the ride's first point to the board showing the taxi on a ride at a position of
        /// this ride; nil: never shown.
        public var occupiedShownAfterSeconds: Double?
        /// From the ride's last point (the drop-off) to the board showing the taxi free; nil:
        /// never shown before the taxi's next ride began.
        public var freeShownAfterSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case taxiID = "taxi_id"
            case tripID = "trip_id"
            case occupiedShownAfterSeconds = "occupied_shown_after_s"
            case freeShownAfterSeconds = "free_shown_after_s"
        }
    }

    public var rides: [Ride]
    /// Points of the recording that imply more than `jump_m_per_s` from the point before.
    public var jumps: Int
    /// Jump points the board showed as a taxi's position.
    public var jumpsShown: Int
    /// Board reads of a taxi between rides that showed anything but its last drop-off (the
    /// last point of its ride that is not a jump) with that point's time.
    public var dropOffWrong: Int
    public var jumpMetresPerSecond: Double
    public var rows: Int
    /// Rows not replayed, by reason (`RecordedTrips.Skip`).
    public var skipped: [String: Int]
    public var taxis: Int
    public var fixesStored: Int
    public var boardReads: Int
    public var traceSeconds: Double
    public var realSeconds: Double

    enum CodingKeys: String, CodingKey {
        case rides, jumps, rows, skipped, taxis
        case jumpsShown = "jumps_shown"
        case dropOffWrong = "drop_off_wrong"
        case jumpMetresPerSecond = "jump_m_per_s"
        case fixesStored = "fixes_stored"
        case boardReads = "board_reads"
        case traceSeconds = "trace_s"
        case realSeconds = "real_s"
    }
}

/// Recorded rides (`crowd.fleet.trips`): each taxi of the recording is a device built by the
/// agent's composition root with the taxi profile, and each ride drives it: the driver's
/// `ride-start` and the ride's first point, its points every 15 s (the profile stores one every
/// 30 s), then `ride-end` with the drop-off. Between rides the taxi is free and gets no position
/// (none is invented); it only keeps its heartbeat. A device is stepped only when it has
/// something to do: a point or a command of its recording, the second after one (the send
/// interval), and its heartbeat; the virtual clock jumps from one such moment to the next.
/// The fleet board (`GET /v1/fleet`, what the fleet page reads) is read while a state change
/// or a jump waits to be seen, and what it shows is compared with the recording.
extension CrowdRunner {
    enum TripStep: Sendable {
        case start(ride: Int)
        case point(ride: Int, index: Int)
        case end(ride: Int)
    }

    struct RecordedTaxi: Sendable {
        let device: CrowdDevice
        /// The recording's inputs, trace ms order.
        let events: [(ms: Int64, step: TripStep)]
        var next = 0
        var sentBytes = 0
        var lastSentMilliseconds: Int64 = 0
        /// Its heartbeat stops here: after its last drop-off is reported (off duty).
        let offDutyMilliseconds: Int64
    }

    /// One moment of one taxi: its inputs due by `ms` through its pipeline, the commit, its
    /// lane's visit; returns the taxi and when it next has something to do.
    static func step(_ taxi: RecordedTaxi, trips: [RecordedTrips.Trip], at ms: Int64) async -> (RecordedTaxi, Int64?) {
        var taxi = taxi
        var fed = false
        while taxi.next < taxi.events.count, taxi.events[taxi.next].ms <= ms {
            let (at, step) = taxi.events[taxi.next]
            taxi.next += 1
            fed = true
            let point: RecordedTrips.Point
            var previous: RecordedTrips.Point?
            switch step {
            case .start(let ride):
                // The driver's command, as `trackme-agent taxi ride-start` sends it, then the fix.
                _ = try? await taxi.device.control.taxi(.rideStart)
                point = trips[ride].points[0]
            case .point(let ride, let index):
                point = trips[ride].points[index]
                previous = trips[ride].points[index - 1]
            case .end(let ride):
                _ = try? await taxi.device.control.taxi(.rideEnd)
                point = trips[ride].points[trips[ride].points.count - 1]
                previous = trips[ride].points.dropLast().last
            }
            let speed = previous.map { metres($0, point) / Double(RecordedTrips.pointSeconds) } ?? 0
            let fix = PositionFix(mode: .threeDimensional, latitude: point.latitude, longitude: point.longitude, speed: speed)
            await taxi.device.position(fix, at: at)
        }
        if fed { await taxi.device.commit() }
        await taxi.device.syncStep(at: ms)
        let sent = await taxi.device.core.sync.bodyBytesSent
        if sent != taxi.sentBytes {
            taxi.sentBytes = sent
            taxi.lastSentMilliseconds = ms
        }
        var wake: [Int64] = []
        if taxi.next < taxi.events.count { wake.append(taxi.events[taxi.next].ms) }
        if fed { wake.append(ms + 1000) }
        if ms < taxi.offDutyMilliseconds {
            let interval = Int64(ScenarioRunner.milliseconds(await taxi.device.core.sync.heartbeatInterval))
            wake.append(min(max(ms + 1000, taxi.lastSentMilliseconds + interval), taxi.offDutyMilliseconds))
        }
        return (taxi, wake.filter { $0 > ms }.min())
    }

    static func metres(_ a: RecordedTrips.Point, _ b: RecordedTrips.Point) -> Double {
        PositionSamplingPolicy.distanceMetres(fromLatitude: a.latitude, longitude: a.longitude, toLatitude: b.latitude, longitude: b.longitude)
    }

    /// The recording's GPS jumps: points more than `limit` m/s from the point before that is not
    /// itself a jump. The truth the board is checked against, from the recording alone.
    static func jumpPoints(_ trip: RecordedTrips.Trip, limit: Double) -> Set<Int> {
        var jumps: Set<Int> = []
        var anchor = 0
        for index in trip.points.indices.dropFirst() {
            let seconds = Double(Int64(index - anchor) * RecordedTrips.pointSeconds)
            if metres(trip.points[anchor], trip.points[index]) / seconds > limit {
                jumps.insert(index)
            } else {
                anchor = index
            }
        }
        return jumps
    }

    func runRecordedFleet(
        _ fleet: CrowdScenario.Fleet,
        trips path: String,
        scenario: CrowdScenario,
        context: Context,
        into outcome: inout Outcome
    ) async throws {
        let text: String
        do { text = try String(contentsOf: URL(fileURLWithPath: path), encoding: .utf8) } catch {
            throw ScenarioError(message: "crowd.fleet.trips \(path): \(error.localizedDescription)")
        }
        let recording: RecordedTrips
        do { recording = try RecordedTrips(csv: text) } catch { throw ScenarioError(message: "crowd.fleet.trips \(path): \(error)") }
        let trips = recording.trips
        guard let first = trips.map(\.start).min() else {
            throw ScenarioError(message: "crowd.fleet.trips \(path): no ride to replay (\(recording.rows) rows, skipped \(recording.skipped))")
        }
        func traceMs(_ unix: Int64) -> Int64 { (unix - first) * 1000 }
        for zone in fleet.zones {
            let created = try await request(context, "POST", "/v1/fleet/zones", json: ["name": zone.name, "polygon": zone.polygon])
            guard created["id"] is String else { throw ScenarioError(message: "zone not created: \(created)") }
        }
        let limit = FleetJudge.jumpMetresPerSecond
        // The taxis, in order of their first ride; each ride's events.
        var byTaxi: [String: [Int]] = [:]
        var order: [String] = []
        for (index, trip) in trips.enumerated() {
            if byTaxi[trip.taxiID] == nil { order.append(trip.taxiID) }
            byTaxi[trip.taxiID, default: []].append(index)
        }
        let lastEnd = trips.map { traceMs($0.end) }.max() ?? 0
        let endMs = fleet.durationSeconds > 0 ? Int64(fleet.durationSeconds) * 1000 : lastEnd + 60_000
        var taxis: [RecordedTaxi] = []
        var deviceOf: [String: Int] = [:]
        var jumpKeys: [[String: Int]] = []  // per taxi: "lat,lon" of its jump points -> count
        // Ride -> where the board may show the taxi after it: the drop-off, or when that was a
        // jump, any point of the ride that was not (the profile stores one point in two).
        var dropOff: [Int: Set<String>] = [:]
        var jumps = 0
        for (number, taxiID) in order.enumerated() {
            let id = "taxi-\(taxiID)"
            let person = PersonProfile(name: "Taxi \(taxiID)", age: 45)
            let device = try await context.device(
                id,
                person: person,
                profile: .taxi,
                seed: UInt64(3000 + number),
                storeName: "\(number)"
            )
            var events: [(ms: Int64, step: TripStep)] = []
            var keys: [String: Int] = [:]
            for ride in byTaxi[taxiID] ?? [] {
                let trip = trips[ride]
                let start = traceMs(trip.start)
                events.append((start, .start(ride: ride)))
                for index in trip.points.indices.dropFirst().dropLast() {
                    events.append((start + Int64(index) * RecordedTrips.pointSeconds * 1000, .point(ride: ride, index: index)))
                }
                events.append((traceMs(trip.end), .end(ride: ride)))
                let jumpsOfRide = Self.jumpPoints(trip, limit: limit)
                jumps += jumpsOfRide.count
                for index in jumpsOfRide { keys[Self.key(trip.points[index]), default: 0] += 1 }
                let last = trip.points.count - 1
                dropOff[ride] = Set(
                    trip.points.indices.filter { jumpsOfRide.contains(last) ? !jumpsOfRide.contains($0) : $0 == last }.map {
                        Self.key(trip.points[$0])
                    }
                )
            }
            let offDuty = min(endMs, (byTaxi[taxiID]?.map { traceMs(trips[$0].end) }.max() ?? 0) + 60_000)
            deviceOf[id] = taxis.count
            taxis.append(RecordedTaxi(device: device, events: events, offDutyMilliseconds: offDuty))
            jumpKeys.append(keys)
        }
        var due: [Int64: [Int]] = [:]
        for (index, taxi) in taxis.enumerated() { if let first = taxi.events.first { due[first.ms, default: []].append(index) } }

        // What the board is waiting to show: rides started and not yet seen occupied, ended and
        // not yet seen free (given up when the taxi's next ride starts); jumps just fed.
        var occupiedSeen = [Int64?](repeating: nil, count: trips.count)
        var freeSeen = [Int64?](repeating: nil, count: trips.count)
        var nextRideStart = [Int64?](repeating: nil, count: trips.count)
        var rideOfTaxi: [Int: [Int]] = [:]
        for (id, index) in deviceOf {
            let rides = byTaxi[String(id.dropFirst("taxi-".count))] ?? []
            rideOfTaxi[index] = rides
            for (a, b) in zip(rides, rides.dropFirst()) { nextRideStart[a] = traceMs(trips[b].start) }
        }
        var waitingOccupied: Set<Int> = []
        var waitingFree: Set<Int> = []
        var startsAt: [Int64: [Int]] = [:]
        var endsAt: [Int64: [Int]] = [:]
        for (ride, trip) in trips.enumerated() {
            startsAt[traceMs(trip.start), default: []].append(ride)
            endsAt[traceMs(trip.end), default: []].append(ride)
        }
        var jumpWatchUntil: Int64 = -1
        var shownJumps: Set<String> = []
        var dropOffWrong = 0
        var dropOffExamples: [String] = []
        var boardReads = 0
        var now: Int64 = 0
        try await watchFrom(context, page: "/", role: "fleet_operator", displayName: "Demo fleet operator")
        let started = ContinuousClock.now
        while let ms = due.keys.min() {
            if ms > endMs + 60_000 { break }
            if context.watch != nil { try await Self.pace(Int(ms / 1000), on: context.wall.anchor) }
            let ready = due.removeValue(forKey: ms) ?? []
            context.wall.set(ms)
            context.clock.advance(by: .milliseconds(ms - now))
            now = ms
            for ride in startsAt.removeValue(forKey: ms) ?? [] { waitingOccupied.insert(ride) }
            for ride in endsAt.removeValue(forKey: ms) ?? [] { waitingFree.insert(ride) }
            let snapshot = taxis
            let stepped = await withTaskGroup(of: (Int, RecordedTaxi, Int64?, Bool).self) { group in
                var results: [(Int, RecordedTaxi, Int64?, Bool)] = []
                var queue = ready[...]
                func add(_ index: Int) {
                    let taxi = snapshot[index]
                    let jumpFed = taxi.events[taxi.next...].prefix { $0.ms <= ms }.contains { event in
                        if case .point(let ride, let point) = event.step { return jumpKeys[index][Self.key(trips[ride].points[point])] != nil }
                        if case .end(let ride) = event.step {
                            return jumpKeys[index][Self.key(trips[ride].points[trips[ride].points.count - 1])] != nil
                        }
                        return false
                    }
                    group.addTask {
                        let (next, wake) = await Self.step(taxi, trips: trips, at: ms)
                        return (index, next, wake, jumpFed)
                    }
                }
                for _ in 0..<options.concurrency { if let index = queue.popFirst() { add(index) } }
                while let result = await group.next() {
                    results.append(result)
                    if let index = queue.popFirst() { add(index) }
                }
                return results
            }
            for (index, taxi, wake, jumpFed) in stepped {
                taxis[index] = taxi
                if let wake { due[wake, default: []].append(index) }
                if jumpFed { jumpWatchUntil = max(jumpWatchUntil, ms + 2000) }
            }
            guard !waitingOccupied.isEmpty || !waitingFree.isEmpty || ms <= jumpWatchUntil else { continue }
            // The fleet desk reads the board, as the fleet page does.
            let board = try await request(context, "GET", "/v1/fleet")
            boardReads += 1
            let shown = FleetJudge.taxis(board)
            for ride in waitingOccupied {
                let trip = trips[ride]
                guard let taxi = shown["taxi-\(trip.taxiID)"] else { continue }
                if taxi.state == TaxiAvailability.onRide.rawValue, (taxi.fixMilliseconds ?? .min) >= context.wall.anchor.wall(traceMs(trip.start)) {
                    occupiedSeen[ride] = ms
                    waitingOccupied.remove(ride)
                } else if freeSeen[ride] != nil || nextRideStart[ride].map({ ms >= $0 }) == true {
                    waitingOccupied.remove(ride)
                }
            }
            for ride in waitingFree {
                let trip = trips[ride]
                if let nextStart = nextRideStart[ride], ms >= nextStart {
                    // Its next ride began before the board showed it free: the rides ran together.
                    waitingFree.remove(ride)
                    waitingOccupied.remove(ride)
                    continue
                }
                guard let taxi = shown["taxi-\(trip.taxiID)"] else { continue }
                if taxi.state == TaxiAvailability.available.rawValue, taxi.lastReportMilliseconds >= context.wall.anchor.wall(traceMs(trip.end)) {
                    freeSeen[ride] = ms
                    waitingFree.remove(ride)
                    waitingOccupied.remove(ride)
                }
            }
            for (id, taxi) in shown {
                guard let index = deviceOf[id], let lat = taxi.latitude, let lon = taxi.longitude else { continue }
                let key = Self.key(RecordedTrips.Point(latitude: lat, longitude: lon))
                if jumpKeys[index][key] != nil { shownJumps.insert("\(id) \(key)") }
                // Between rides: the last drop-off, with its time, and nothing else.
                guard taxi.state == TaxiAvailability.available.rawValue,
                    let ride = rideOfTaxi[index]?.last(where: { freeSeen[$0] != nil && traceMs(trips[$0].end) <= ms }),
                    nextRideStart[ride].map({ ms < $0 }) ?? true, let expected = dropOff[ride]
                else { continue }
                let ageOK = (taxi.fixMilliseconds ?? .max) <= context.wall.anchor.wall(traceMs(trips[ride].end))
                if !expected.contains(key) || !ageOK {
                    dropOffWrong += 1
                    if dropOffExamples.count < 3 {
                        dropOffExamples.append("\(id) at \(ms / 1000) s shows \(key) taken at \(taxi.fixMilliseconds.map { "\($0)" } ?? "no time")")
                    }
                }
            }
        }
        let elapsed = ScenarioRunner.milliseconds(ContinuousClock.now - started) / 1000
        context.wall.set(now + 1000)
        var tally = DeliveryTally()
        var alerts: [CrowdAlert] = []
        for taxi in taxis {
            await taxi.device.drain()
            try await tally.add(taxi.device, server: context.server)
            let delivered = await taxi.device.delivered
            for (id, kind) in await taxi.device.raised {
                alerts.append(
                    CrowdAlert(
                        deviceID: taxi.device.deviceID,
                        name: taxi.device.deviceID,
                        kind: kind.rawValue,
                        deliveredMilliseconds: delivered[id],
                        openOnBoard: nil
                    )
                )
            }
            await taxi.device.close()
        }
        let rides = trips.enumerated().map { ride, trip in
            RecordedFleetReport.Ride(
                taxiID: trip.taxiID,
                tripID: trip.tripID,
                occupiedShownAfterSeconds: occupiedSeen[ride].map { Double($0 - traceMs(trip.start)) / 1000 },
                freeShownAfterSeconds: freeSeen[ride].map { Double($0 - traceMs(trip.end)) / 1000 }
            )
        }
        let traceSeconds = Double(now) / 1000
        let report = RecordedFleetReport(
            rides: rides,
            jumps: jumps,
            jumpsShown: shownJumps.count,
            dropOffWrong: dropOffWrong,
            jumpMetresPerSecond: limit,
            rows: recording.rows,
            skipped: Dictionary(uniqueKeysWithValues: RecordedTrips.Skip.allCases.map { ($0.rawValue, recording.skipped[$0] ?? 0) }),
            taxis: taxis.count,
            fixesStored: tally.fixes,
            boardReads: boardReads,
            traceSeconds: traceSeconds,
            realSeconds: elapsed
        )
        outcome.fleet = report
        outcome.alerts += alerts
        let skipped = recording.skipped.values.reduce(0, +)
        outcome.figures["fleet.taxis"] = Double(taxis.count)
        outcome.figures["fleet.rides"] = Double(trips.count)
        outcome.figures["fleet.real_time_ratio"] = elapsed > 0 ? traceSeconds / elapsed : 0
        outcome.lines.append(
            "fleet (recorded): \(trips.count) rides of \(taxis.count) taxis from \(recording.rows) rows (\(skipped) skipped: \(recording.skipped.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }.joined(separator: ", "))), \(jumps) jump points, \(Int(traceSeconds)) s of trace in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.0f", elapsed > 0 ? traceSeconds / elapsed : 0))x real time), \(boardReads) board reads"
        )
        check(&outcome, tally.whole, tally.description)
        check(&outcome, alerts.isEmpty, "no alert: \(alerts.map { "\($0.deviceID) \($0.kind)" }.prefix(5))")
        if let within = scenario.expect.ridesShownWithinSeconds {
            let late = rides.filter { ride in
                (ride.occupiedShownAfterSeconds.map { $0 > within } ?? true) || (ride.freeShownAfterSeconds.map { $0 > within } ?? true)
            }
            let worst = rides.flatMap { [$0.occupiedShownAfterSeconds, $0.freeShownAfterSeconds] }.compactMap { $0 }.max() ?? 0
            check(
                &outcome,
                late.isEmpty && !rides.isEmpty,
                "every ride shown occupied from its start and free after its end within \(within) s: worst \(worst) s; late or never: \(late.prefix(5).map { "\($0.taxiID)/\($0.tripID) \($0.occupiedShownAfterSeconds.map { "\($0)" } ?? "never")/\($0.freeShownAfterSeconds.map { "\($0)" } ?? "never")" })"
            )
        }
        if scenario.expect.noJumpsShown == true {
            check(
                &outcome,
                shownJumps.isEmpty,
                "no GPS jump shown on the board: \(shownJumps.count) of \(jumps) shown \(shownJumps.sorted().prefix(3))"
            )
        }
        if scenario.expect.dropOffShownBetweenRides == true {
            check(
                &outcome,
                dropOffWrong == 0,
                "between rides the board shows the last drop-off and its time: \(dropOffWrong) wrong \(dropOffExamples)"
            )
        }
    }

    static func key(_ point: RecordedTrips.Point) -> String { String(format: "%.6f,%.6f", point.latitude, point.longitude) }
}

/// The fleet board as the page reads it, and the rule the recording's jumps are judged by.
enum FleetJudge {
    /// The fleet's own limit, so a jump the server would keep off the map is what the report counts.
    static let jumpMetresPerSecond = FleetQueue.jumpMetresPerSecond

    struct Shown {
        var state: String
        var latitude: Double?
        var longitude: Double?
        var fixMilliseconds: Int64?
        var lastReportMilliseconds: Int64
    }

    static func taxis(_ board: [String: Any]) -> [String: Shown] {
        var all = (board["zones"] as? [[String: Any]] ?? []).flatMap { $0["taxis"] as? [[String: Any]] ?? [] }
        all += board["outside"] as? [[String: Any]] ?? []
        var shown: [String: Shown] = [:]
        for taxi in all {
            guard let id = taxi["device_id"] as? String, let state = taxi["state"] as? String else { continue }
            shown[id] = Shown(
                state: state,
                latitude: (taxi["lat"] as? NSNumber)?.doubleValue,
                longitude: (taxi["lon"] as? NSNumber)?.doubleValue,
                fixMilliseconds: (taxi["fix_ms"] as? NSNumber)?.int64Value,
                lastReportMilliseconds: (taxi["last_report_ms"] as? NSNumber)?.int64Value ?? 0
            )
        }
        return shown
    }
}
