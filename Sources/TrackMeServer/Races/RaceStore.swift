/// Runs (Track4Run) and the taxi fleet (003), as stored: runs behind `RunStore` (the runs
/// room's own), the fleet behind `RaceStore` (the hall's).
struct Run: Hashable, Sendable {
    var id: String
    /// What runners type to join (`RunParticipation.isValidCode`); unique.
    var code: String
    var name: String
    var organiserAccountID: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var enrolmentOpen: Bool
    var path: RunPath
    var createdMilliseconds: Int64
    /// The race distance the organiser set; nil for the course's length.
    var distanceMetres: Double? = nil
    /// Where the run is (a town, a park), as the public list finds it; empty when not given.
    var place: String = ""
    /// How many runners may enrol; nil for no limit.
    var participantCap: Int? = nil
    /// When the organiser closed the run (its standings final); nil while open.
    var closedMilliseconds: Int64? = nil

    /// A runner finishes when the distance counted along their own fixes reaches this.
    var raceDistanceMetres: Double { distanceMetres ?? path.length }

    enum Status: String, Codable, Hashable, Sendable, CaseIterable {
        case upcoming, live, finished
    }

    /// Upcoming before the gun, live until its end time or until its organiser closes it,
    /// finished after.
    func status(now: Int64) -> Status {
        if closedMilliseconds != nil || now > endMilliseconds { return .finished }
        return now < startMilliseconds ? .upcoming : .live
    }

    /// When the run stopped taking fixes: its close, or its end time.
    var finishedMilliseconds: Int64 { min(closedMilliseconds ?? .max, endMilliseconds) }
}

/// One runner in one run: their device, the name shown, consent, check-in, and where they are.
struct RunEntry: Hashable, Sendable {
    var runID: String
    var deviceID: String
    var name: String
    /// The runner agreed to be shown on the public spectator page. Without it they never
    /// appear there, not even in the page's JSON.
    var showToSpectators: Bool
    /// The runner let the organiser read their heart rate during the run (given at enrolment;
    /// the runner may withdraw it, never the organiser give it).
    var shareHealth: Bool = false
    /// When the organiser took the runner off the run (not checked in); nil while entered.
    /// A removed runner is not entered again by their device's next report.
    var removedMilliseconds: Int64? = nil
    var enrolledMilliseconds: Int64
    var checkedInMilliseconds: Int64?
    var latitude: Double?
    var longitude: Double?
    /// Wall time of the newest fix (the device's, when trusted; else when received).
    var fixMilliseconds: Int64?
    /// Metres counted along the runner's own fixes (`RaceProgress`).
    var distanceMetres: Double?
    /// When the server received the newest fix (the spectator feed's lag starts at the fix).
    var receivedMilliseconds: Int64?
    /// When the counted distance reached the race distance.
    var finishMilliseconds: Int64?
    /// A fix held back as a possible GPS jump (`RaceProgress.State.held`).
    var held: RaceIngest.Fix?
    /// The runner's newest heart-rate reading in the run, as ingest saw it go by: the organiser's
    /// view opens that one stored reading instead of searching the device's readings for it.
    var newestHeartRate: StoredReadingReference?

    init(
        runID: String,
        deviceID: String,
        name: String,
        showToSpectators: Bool,
        enrolledMilliseconds: Int64,
        checkedInMilliseconds: Int64? = nil,
        latitude: Double? = nil,
        longitude: Double? = nil,
        fixMilliseconds: Int64? = nil,
        distanceMetres: Double? = nil,
        receivedMilliseconds: Int64? = nil,
        finishMilliseconds: Int64? = nil,
        held: RaceIngest.Fix? = nil,
        newestHeartRate: StoredReadingReference? = nil,
        shareHealth: Bool = false,
        removedMilliseconds: Int64? = nil
    ) {
        self.newestHeartRate = newestHeartRate
        self.shareHealth = shareHealth
        self.removedMilliseconds = removedMilliseconds
        self.finishMilliseconds = finishMilliseconds
        self.held = held
        self.runID = runID
        self.deviceID = deviceID
        self.name = name
        self.showToSpectators = showToSpectators
        self.enrolledMilliseconds = enrolledMilliseconds
        self.checkedInMilliseconds = checkedInMilliseconds
        self.latitude = latitude
        self.longitude = longitude
        self.fixMilliseconds = fixMilliseconds
        self.distanceMetres = distanceMetres
        self.receivedMilliseconds = receivedMilliseconds
    }

    var progress: RaceProgress.State {
        get {
            var fix: RaceIngest.Fix?
            if let latitude, let longitude, let fixMilliseconds {
                fix = RaceIngest.Fix(milliseconds: fixMilliseconds, latitude: latitude, longitude: longitude)
            }
            return RaceProgress.State(fix: fix, distanceMetres: distanceMetres, finishMilliseconds: finishMilliseconds, held: held)
        }
        set {
            latitude = newValue.fix?.latitude
            longitude = newValue.fix?.longitude
            fixMilliseconds = newValue.fix?.milliseconds
            distanceMetres = newValue.distanceMetres
            finishMilliseconds = newValue.finishMilliseconds
            held = newValue.held
        }
    }

    /// Elapsed from the run's start to the finish, in seconds.
    func finishElapsedSeconds(_ run: Run) -> Double? {
        finishMilliseconds.map { Double($0 - run.startMilliseconds) / 1000 }
    }
}

/// A fleet zone: a polygon of `[latitude, longitude]` corners (003 AS4).
package struct FleetZone: Hashable, Sendable {
    package var id: String
    package var name: String
    package var polygon: [[Double]]
    package var createdMilliseconds: Int64

    package init(id: String, name: String, polygon: [[Double]], createdMilliseconds: Int64) {
        self.id = id
        self.name = name
        self.polygon = polygon
        self.createdMilliseconds = createdMilliseconds
    }

    /// Even-odd ray casting on latitude/longitude (zones are a few km across).
    package func contains(latitude: Double, longitude: Double) -> Bool {
        var inside = false
        var j = polygon.count - 1
        for i in 0..<polygon.count {
            let (yi, xi) = (polygon[i][0], polygon[i][1])
            let (yj, xj) = (polygon[j][0], polygon[j][1])
            if (yi > latitude) != (yj > latitude), longitude < (xj - xi) * (latitude - yi) / (yj - yi) + xi {
                inside.toggle()
            }
            j = i
        }
        return inside
    }

    static func validPolygon(_ polygon: [[Double]]) -> Bool {
        (3...1000).contains(polygon.count)
            && polygon.allSatisfy { $0.count == 2 && (-90...90).contains($0[0]) && (-180...180).contains($0[1]) }
    }
}

/// A taxi as the fleet sees it: its state, zone and place in the zone's queue.
struct FleetTaxi: Hashable, Sendable {
    var deviceID: String
    var name: String
    var state: String
    var zoneID: String?
    /// When the taxi became available in its zone: its place in the queue (arrival order).
    /// Nil unless available in a zone.
    var queuedMilliseconds: Int64?
    var lastReportMilliseconds: Int64
    var latitude: Double?
    var longitude: Double?
    var fixMilliseconds: Int64?

    init(
        deviceID: String,
        name: String,
        state: String,
        zoneID: String? = nil,
        queuedMilliseconds: Int64? = nil,
        lastReportMilliseconds: Int64,
        latitude: Double? = nil,
        longitude: Double? = nil,
        fixMilliseconds: Int64? = nil
    ) {
        self.deviceID = deviceID
        self.name = name
        self.state = state
        self.zoneID = zoneID
        self.queuedMilliseconds = queuedMilliseconds
        self.lastReportMilliseconds = lastReportMilliseconds
        self.latitude = latitude
        self.longitude = longitude
        self.fixMilliseconds = fixMilliseconds
    }
}

/// What intake writes of the fleet (`RaceIngest`): zones and the taxis as their reports leave them.
protocol RaceStore: Sendable {
    func insertZone(_ zone: FleetZone) async throws
    func zones() async throws -> [FleetZone]
    func fleetTaxi(deviceID: String) async throws -> FleetTaxi?
    /// The taxi and the zones together, what each taxi report needs: one read where the store
    /// can make it one.
    func fleetTaxiAndZones(deviceID: String) async throws -> (taxi: FleetTaxi?, zones: [FleetZone])
    func saveFleetTaxi(_ taxi: FleetTaxi) async throws
    func fleetTaxis() async throws -> [FleetTaxi]
}

extension RaceStore {
    func fleetTaxiAndZones(deviceID: String) async throws -> (taxi: FleetTaxi?, zones: [FleetZone]) {
        (try await fleetTaxi(deviceID: deviceID), try await zones())
    }
}
