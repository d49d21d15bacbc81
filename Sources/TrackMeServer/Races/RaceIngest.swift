import Logging
import TrackMeCore

/// What a device's batch tells the runs and the fleet: a runner's enrolment, consent,
/// check-in and newest position along the course; a taxi's state, zone and place in the queue.
/// Runs after the batch is durably stored; a failure here is logged and never refuses the batch
/// (its readings are stored either way, and the next batch brings the state again).
struct RaceIngest: Sendable {
    /// The runs room's store: a runner's entry and progress.
    let runs: any RunStore
    /// The fleet's taxis and zones, as their reports leave them.
    let store: any RaceStore
    let logger: Logger

    /// Fixes before a run's start by more than this are not shown (a runner's walk to the start).
    static let beforeStartMilliseconds: Int64 = 30 * 60 * 1000

    struct Fix: Hashable, Sendable {
        var milliseconds: Int64
        var latitude: Double
        var longitude: Double

        init(milliseconds: Int64, latitude: Double, longitude: Double) {
            self.milliseconds = milliseconds
            self.latitude = latitude
            self.longitude = longitude
        }

        /// A fix from nullable columns: nil unless all three are there.
        static func stored(milliseconds: Int64?, latitude: Double?, longitude: Double?) -> Fix? {
            guard let milliseconds, let latitude, let longitude else { return nil }
            return Fix(milliseconds: milliseconds, latitude: latitude, longitude: longitude)
        }
    }

    /// Returns the taxi as its report left it (nil when the batch is not a taxi's, or the
    /// update failed): the batch's reply is told from it without reading it again.
    @discardableResult
    func observe(_ batch: SyncBatch, rows: [ReadingRow], device: DeviceRow, now: Int64) async -> FleetTaxi? {
        guard let heartbeat = batch.heartbeat else { return nil }
        var fixes: [Fix] = []
        var heartRates: [StoredReadingReference] = []
        for (reading, row) in zip(batch.readings, rows) {
            switch reading.payload {
            case .position(let fix):
                if fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude {
                    fixes.append(Fix(milliseconds: row.placedMilliseconds, latitude: latitude, longitude: longitude))
                }
            case .heartRate:
                heartRates.append(StoredReadingReference(sequence: row.sequence, placedMilliseconds: row.placedMilliseconds))
            }
        }
        do {
            if let run = heartbeat.run {
                try await observeRunner(run, fixes: fixes, heartRates: heartRates, device: device, now: now)
            }
            if heartbeat.profile == .taxi, let state = heartbeat.taxiState {
                return try await observeTaxi(state, fixes: fixes, device: device, now: now)
            }
        } catch {
            logger.warning("run or fleet update failed", metadata: ["server.device": "\(device.deviceID)", "error": "\(error)"])
        }
        return nil
    }

    func observeRunner(
        _ participation: RunParticipation,
        fixes: [Fix],
        heartRates: [StoredReadingReference] = [],
        device: DeviceRow,
        now: Int64
    ) async throws {
        guard let run = try await runs.run(code: participation.code) else { return }
        var entry: RunEntry
        if let existing = try await runs.runEntry(runID: run.id, deviceID: device.deviceID) {
            entry = existing
        } else {
            // Enrolment only while the organiser keeps it open, and only up to the cap.
            guard run.enrolmentOpen, run.closedMilliseconds == nil else { return }
            let enrolment = RunEntry(
                runID: run.id,
                deviceID: device.deviceID,
                name: device.person.name,
                showToSpectators: participation.showToSpectators,
                enrolledMilliseconds: now,
                shareHealth: participation.shareHealth
            )
            switch try await runs.enrol(enrolment) {
            case .full:
                logger.info("run full: runner not entered", metadata: ["server.device": "\(device.deviceID)", "server.run": "\(run.id)"])
                return
            case .enrolled, .alreadyEntered:
                guard let stored = try await runs.runEntry(runID: run.id, deviceID: device.deviceID) else { return }
                entry = stored
            }
        }
        // A runner the organiser took off the run stays off it; a closed run takes no more fixes.
        guard entry.removedMilliseconds == nil, run.closedMilliseconds == nil else { return }
        let before = entry
        // Consent can be given or withdrawn at any time; the device's word is the latest. The
        // organiser's reading of health data is given at enrolment only: later it may be
        // withdrawn, not given.
        entry.showToSpectators = participation.showToSpectators
        entry.shareHealth = entry.shareHealth && participation.shareHealth
        if entry.checkedInMilliseconds == nil, let checkedIn = participation.checkedInMilliseconds {
            entry.checkedInMilliseconds = min(checkedIn, now)
        }
        let inWindow = fixes.filter {
            $0.milliseconds >= run.startMilliseconds - Self.beforeStartMilliseconds && $0.milliseconds <= run.endMilliseconds
        }
        // Counted from the gun, or from a later check-in (a runner who starts late).
        let countFrom = max(run.startMilliseconds, entry.checkedInMilliseconds ?? run.startMilliseconds)
        var progress = entry.progress
        // Oldest first, each once: a fix older than the runner's newest (a backlog after a
        // tunnel) neither moves them back nor counts again.
        for fix in inWindow.sorted(by: { $0.milliseconds < $1.milliseconds })
        where fix.milliseconds > max(entry.fixMilliseconds ?? .min, progress.held?.milliseconds ?? .min) {
            progress = RaceProgress.advance(progress, with: fix, countFrom: countFrom, raceMetres: run.raceDistanceMetres)
        }
        if progress != entry.progress {
            if progress.fix != entry.progress.fix { entry.receivedMilliseconds = now }
            entry.progress = progress
        }
        // The newest heart rate placed in the run's window (a backlog's older one never replaces
        // it); the organiser's view decides at each read whether it is fresh and may be shown.
        let window = (run.startMilliseconds - Self.beforeStartMilliseconds)...run.endMilliseconds
        if let newest = heartRates.filter({ window.contains($0.placedMilliseconds) }).max(),
            entry.newestHeartRate.map({ $0 < newest }) ?? true
        {
            entry.newestHeartRate = newest
        }
        // The ingest room wakes the feeds (the spectators' among them) after this.
        if entry != before { try await runs.saveRunEntry(entry) }
    }

    /// The taxi's state, and the newest of the batch's fixes that is not a GPS jump
    /// (`FleetQueue.shown`): the map never shows a jump, and between rides it keeps the last
    /// drop-off with its time (`fix_ms`), inventing no position. Returns the taxi as saved.
    @discardableResult
    func observeTaxi(_ state: TaxiAvailability, fixes: [Fix], device: DeviceRow, now: Int64) async throws -> FleetTaxi {
        let (previous, zones) = try await store.fleetTaxiAndZones(deviceID: device.deviceID)
        var taxi = previous ?? FleetTaxi(deviceID: device.deviceID, name: device.person.name, state: state.rawValue, lastReportMilliseconds: now)
        let last = taxi.fixMilliseconds.flatMap { ms in
            taxi.latitude.flatMap { lat in taxi.longitude.map { Fix(milliseconds: ms, latitude: lat, longitude: $0) } }
        }
        let rideStarts = state == .onRide && previous?.state != TaxiAvailability.onRide.rawValue
        let newest = FleetQueue.shown(fixes, after: last, rideStarts: rideStarts)
        if let newest, newest.milliseconds > (taxi.fixMilliseconds ?? .min) {
            taxi.latitude = newest.latitude
            taxi.longitude = newest.longitude
            taxi.fixMilliseconds = newest.milliseconds
        }
        var zoneID: String?
        if let latitude = taxi.latitude, let longitude = taxi.longitude {
            zoneID = zones.first { $0.contains(latitude: latitude, longitude: longitude) }?.id
        }
        taxi.name = device.person.name
        taxi.state = state.rawValue
        taxi.lastReportMilliseconds = now
        taxi.queuedMilliseconds = FleetQueue.queuedSince(
            state: state,
            zoneID: zoneID,
            previousState: previous?.state,
            previousZoneID: previous?.zoneID,
            previousQueued: previous?.queuedMilliseconds,
            fixMilliseconds: newest?.milliseconds,
            now: now
        )
        taxi.zoneID = zoneID
        if taxi != previous { try await store.saveFleetTaxi(taxi) }
        return taxi
    }
}

/// The zone queues' rules (003 AS4-AS5), pure.
public enum FleetQueue {
    /// A taxi that missed two 30 s reports is silent: shown so, and out of every queue.
    static let silentAfterMilliseconds: Int64 = 60_000

    /// When the taxi's place in its zone's queue began: kept while it stays available in the
    /// same zone; a new arrival (another zone, or available again) queues at the back, from
    /// the fix that shows it there (or now, for a state change); nil when not available in a zone.
    static func queuedSince(
        state: TaxiAvailability,
        zoneID: String?,
        previousState: String?,
        previousZoneID: String?,
        previousQueued: Int64?,
        fixMilliseconds: Int64?,
        now: Int64
    ) -> Int64? {
        guard state == .available, zoneID != nil else { return nil }
        if previousState == TaxiAvailability.available.rawValue, previousZoneID == zoneID, let previousQueued { return previousQueued }
        if previousState == TaxiAvailability.available.rawValue, previousZoneID != zoneID { return min(fixMilliseconds ?? now, now) }
        return now
    }

    /// How often a taxi a ride may be offered to batches (`SyncOrders.pollMilliseconds`): an
    /// offer reaches the terminal only in a reply, within 3 s of being made (003).
    static let offerPollMilliseconds: Int64 = 1000

    /// Faster than this from the fix shown before, a fix is a GPS jump. A taxi in town does not
    /// do 160 km/h, and its fixes come 30 s apart: a point thrown 1.5 km off is 50 m/s from the
    /// report before it, which a limit set for 1 Hz fixes (250 km/h) let through. Recorded jumps
    /// reach 900 m/s.
    public static let jumpMetresPerSecond = 45.0

    /// The fix to show of a batch's `fixes`: the newest that is not a jump, each checked against
    /// the one shown before it (oldest first, starting from `last`). A ride's start takes its
    /// first fix as it comes: the next ride of a taxi may begin far from its last drop-off, and
    /// that is a new ride, not a jump.
    static func shown(_ fixes: [RaceIngest.Fix], after last: RaceIngest.Fix?, rideStarts: Bool) -> RaceIngest.Fix? {
        var anchor = last
        var shown: RaceIngest.Fix?
        var fresh = rideStarts
        for fix in fixes.sorted(by: { $0.milliseconds < $1.milliseconds }) where fix.milliseconds > (last?.milliseconds ?? .min) {
            if !fresh, let anchor, isJump(from: anchor, to: fix) { continue }
            fresh = false
            anchor = fix
            shown = fix
        }
        return shown
    }

    static func isJump(from a: RaceIngest.Fix, to b: RaceIngest.Fix) -> Bool {
        let metres = PositionSamplingPolicy.distanceMetres(
            fromLatitude: a.latitude,
            longitude: a.longitude,
            toLatitude: b.latitude,
            longitude: b.longitude
        )
        let seconds = max(1, Double(b.milliseconds - a.milliseconds) / 1000)
        return metres / seconds > jumpMetresPerSecond
    }

    static func isSilent(_ taxi: FleetTaxi, now: Int64) -> Bool { now - taxi.lastReportMilliseconds > silentAfterMilliseconds }

    /// A zone's queue: its available taxis that are not silent, in arrival order.
    static func queue(zoneID: String, taxis: [FleetTaxi], now: Int64) -> [FleetTaxi] {
        taxis.filter {
            $0.zoneID == zoneID && $0.state == TaxiAvailability.available.rawValue && $0.queuedMilliseconds != nil && !isSilent($0, now: now)
        }
        .sorted { ($0.queuedMilliseconds ?? 0, $0.deviceID) < ($1.queuedMilliseconds ?? 0, $1.deviceID) }
    }
}
