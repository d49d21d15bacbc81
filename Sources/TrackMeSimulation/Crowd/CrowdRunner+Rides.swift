import Foundation
import Synchronization
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// Ride offers end to end: the fleet desk books rides over HTTP; the server offers each to a
/// taxi; each taxi's own agent parts hear of it in a batch reply and show it
/// (`PipelineControl.rideNotice`, the terminal's feedback output), and the driver answers through
/// the control's `ride` command as `trackme-agent taxi accept|refuse|...` does. Measured: the time
/// from the server making an offer to the terminal showing it, on the virtual clock the server
/// and the devices share (the readings lane's cadence, not the network's latency).
extension CrowdRunner {
    /// What each terminal showed: the offer and the virtual wall ms it was shown at.
    final class OfferLog: Sendable {
        private let shown = Mutex<[(notice: RideNotice, at: Int64)]>([])
        func note(_ notice: RideNotice, at: Int64) { shown.withLock { $0.append((notice, at)) } }
        var all: [(notice: RideNotice, at: Int64)] { shown.withLock { $0 } }
    }

    struct Driver {
        var device: CrowdDevice
        var latitude: Double
        var longitude: Double
        let log: OfferLog
        /// Offers this driver has decided about.
        var seen: Set<String> = []
        /// What the driver does next and at which second.
        var plan: [(second: Int, action: ControlRequest.RideAction)] = []
    }

    func runRides(_ rides: CrowdScenario.Rides, scenario: CrowdScenario, context: Context, into outcome: inout Outcome) async throws {
        var random = SplitMix64(seed: (scenario.seed ?? 33) &+ 7)
        var zoneIDs: [String] = []
        for zone in rides.zones {
            let created = try await request(context, "POST", "/v1/fleet/zones", json: ["name": zone.name, "polygon": zone.polygon])
            guard let id = created["id"] as? String else { throw ScenarioError(message: "zone not created: \(created)") }
            zoneIDs.append(id)
        }
        var drivers: [Driver] = []
        for index in 0..<rides.taxis {
            let id = String(format: "cab-%03d", index + 1)
            let person = PersonProfile(name: String(format: "Driver %03d", index + 1), age: 40)
            let log = OfferLog()
            let wall = context.wall
            let device = try await context.device(
                id,
                person: person,
                profile: .taxi,
                seed: UInt64(2000 + index),
                onRideOffer: { log.note($0, at: wall.wall) }
            )
            let corners = rides.zones[index % rides.zones.count].polygon
            let lat = corners.map { $0[0] }.reduce(0, +) / Double(corners.count)
            let lon = corners.map { $0[1] }.reduce(0, +) / Double(corners.count)
            drivers.append(Driver(device: device, latitude: lat + Double(index) * 1e-5, longitude: lon, log: log))
        }
        // Bookings evenly over the first half (the last rides end before the run does);
        // reservations early, 11 minutes ahead.
        var bookings: [Int: [(zone: Int, reservedAhead: Int64?)]] = [:]
        let span = max(1, rides.durationSeconds / 2 - 20)
        for index in 0..<rides.bookings {
            bookings[20 + index * span / max(1, rides.bookings), default: []].append((index % zoneIDs.count, nil))
        }
        for index in 0..<rides.reservations { bookings[10 + index, default: []].append((index % zoneIDs.count, 11 * 60_000)) }
        var booked: [String: (second: Int, reserved: Int64?)] = [:]
        var decided = (accept: 0, refuse: 0, silent: 0, complete: 0, missing: 0)
        var refusedAnswers: [String] = []
        try await watchFrom(context, page: "/", role: "fleet_operator", displayName: "Demo fleet operator")
        let started = ContinuousClock.now
        for second in 0...rides.durationSeconds {
            let ms = try await context.enter(second)
            for booking in bookings[second] ?? [] {
                var body: [String: Any] = ["zone_id": zoneIDs[booking.zone], "pickup": "Stand \(booking.zone + 1), door \(booked.count + 1)"]
                if let ahead = booking.reservedAhead { body["reserved_ms"] = context.wall.wall + ahead }
                let ride = try await request(context, "POST", "/v1/fleet/rides", json: body)
                guard let id = ride["id"] as? String else { throw ScenarioError(message: "ride not booked: \(ride)") }
                booked[id] = (second, booking.reservedAhead.map { context.wall.wall + $0 })
            }
            for i in drivers.indices {
                var driver = drivers[i]
                let control = driver.device.control
                if second == 0 { _ = try await control.taxi(.available) }
                // The driver's planned answers and ride ends that are due.
                while let next = driver.plan.first, next.second <= second {
                    driver.plan.removeFirst()
                    do {
                        _ = try await control.ride(next.action)
                    } catch {
                        refusedAnswers.append("\(driver.device.deviceID) \(next.action.rawValue) at \(second) s: \(error)")
                    }
                }
                await control.rideTick()
                let fix = PositionFix(mode: .threeDimensional, latitude: driver.latitude, longitude: driver.longitude, speed: 0)
                await driver.device.position(fix, at: ms)
                await driver.device.commit()
                await driver.device.syncStep(at: ms)
                // A new offer on the terminal: the driver decides, as the seed draws.
                if let shown = try await control.ride(.offer), shown.stage == .offered, !driver.seen.contains(shown.offerID) {
                    driver.seen.insert(shown.offerID)
                    let draw = random.nextDouble()
                    let delay = rides.answerSeconds[0] + Int(random.next() % UInt64(max(1, rides.answerSeconds[1] - rides.answerSeconds[0] + 1)))
                    if draw < rides.silentFraction {
                        decided.silent += 1
                    } else if draw < rides.silentFraction + rides.refuseFraction {
                        decided.refuse += 1
                        driver.plan.append((second + delay, .refuse))
                    } else {
                        decided.accept += 1
                        let pickup = second + delay + rides.rideSeconds[0] / 2
                        let end = pickup + rides.rideSeconds[0] + Int(random.next() % UInt64(max(1, rides.rideSeconds[1] - rides.rideSeconds[0] + 1)))
                        driver.plan.append((second + delay, .accept))
                        if random.nextDouble() < rides.missingClientFraction {
                            decided.missing += 1
                            driver.plan.append((pickup, .missingClient))
                        } else {
                            decided.complete += 1
                            driver.plan.append((pickup, .pickup))
                            driver.plan.append((end, .complete))
                        }
                    }
                    driver.plan.sort { $0.second < $1.second }
                }
                drivers[i] = driver
            }
        }
        let elapsed = ContinuousClock.now - started
        let served = try await allPages(context, "/v1/fleet/rides", key: "rides").filter { booked[$0["id"] as? String ?? ""] != nil }
        var states: [String: Int] = [:]
        var outcomes: [String: Int] = [:]
        var reservedEarly: [String] = []
        for ride in served {
            states[ride["state"] as? String ?? "?", default: 0] += 1
            let offers = ride["offers"] as? [[String: Any]] ?? []
            for offer in offers { outcomes[offer["outcome"] as? String ?? "open", default: 0] += 1 }
            if let id = ride["id"] as? String, let reserved = booked[id]?.reserved,
                let first = (offers.first?["offered_ms"] as? NSNumber)?.int64Value,
                first < reserved - 600_000 || first > reserved - 600_000 + 2000
            {
                reservedEarly.append("\(id) offered \(first - reserved) ms before its time")
            }
        }
        // Offer to terminal: the server's offered_ms to the wall ms the terminal showed it.
        var delays: [Double] = []
        var shownOffers = Set<String>()
        for driver in drivers {
            for (notice, at) in driver.log.all {
                delays.append(Double(at - notice.offeredMilliseconds) / 1000)
                shownOffers.insert(notice.offerID)
            }
        }
        let offersMade = outcomes.values.reduce(0, +)
        for driver in drivers { await driver.device.close() }
        let worst = delays.max() ?? 0
        outcome.figures["rides.offers"] = Double(offersMade)
        outcome.figures["rides.offer_to_terminal_p50_s"] = Self.percentile(delays, 0.5)
        outcome.figures["rides.offer_to_terminal_max_s"] = worst
        outcome.lines.append(
            "rides: \(rides.taxis) taxis, \(booked.count) rides booked (\(rides.reservations) reserved), \(offersMade) offers: \(outcomes["accepted", default: 0]) accepted, \(outcomes["refused", default: 0]) refused, \(outcomes["silent", default: 0]) refused by silence; rides \(states.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")); \(String(format: "%.1f", ScenarioRunner.milliseconds(elapsed) / 1000)) s"
        )
        check(
            &outcome,
            shownOffers.count == offersMade && offersMade > 0,
            "every offer the server made was shown on its terminal: \(shownOffers.count) of \(offersMade)"
        )
        check(
            &outcome,
            outcomes["accepted", default: 0] == decided.accept && outcomes["refused", default: 0] == decided.refuse
                && outcomes["silent", default: 0] == decided.silent,
            "the server counted what the drivers did: accepted \(outcomes["accepted", default: 0])/\(decided.accept), refused \(outcomes["refused", default: 0])/\(decided.refuse), silent \(outcomes["silent", default: 0])/\(decided.silent)"
        )
        check(
            &outcome,
            states["completed", default: 0] == decided.complete && states["missing_client", default: 0] == decided.missing && decided.missing > 0
                && decided.silent > 0,
            "rides ended as the drivers said: \(states["completed", default: 0]) completed of \(decided.complete), \(states["missing_client", default: 0]) missing client of \(decided.missing)"
        )
        check(&outcome, refusedAnswers.isEmpty, "every answer given within its window was taken: \(refusedAnswers.prefix(3))")
        check(&outcome, reservedEarly.isEmpty, "reserved rides offered 10 minutes ahead, not earlier: \(reservedEarly.prefix(3))")
        if let limit = scenario.expect.offerToTerminalSeconds {
            check(
                &outcome,
                worst <= limit && !delays.isEmpty,
                "every offer on its terminal's feedback output within \(limit) s of the server making it: worst \(String(format: "%.1f", worst)) s, median \(String(format: "%.1f", Self.percentile(delays, 0.5))) s over \(delays.count) offers (virtual time: the readings lane's 1 s cadence)"
            )
        }
    }
}
