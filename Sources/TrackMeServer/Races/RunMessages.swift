import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// Standings: finishers first, by their finish (every runner starts with the gun, so the
/// earlier finish is the shorter elapsed time); then those still out, furthest first; ties by
/// the earlier fix.
enum RaceStanding {
    static func ranked(_ entries: [RunEntry]) -> [RunEntry] {
        entries.sorted { a, b in
            switch (a.finishMilliseconds, b.finishMilliseconds) {
            case (let fa?, let fb?) where fa != fb: return fa < fb
            case (.some, nil): return true
            case (nil, .some): return false
            default: break
            }
            let da = a.distanceMetres ?? -1
            let db = b.distanceMetres ?? -1
            if da != db { return da > db }
            return (a.fixMilliseconds ?? .max, a.deviceID) < (b.fixMilliseconds ?? .max, b.deviceID)
        }
    }
}

struct CreateRunRequest: Codable, Sendable {
    var name: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64?
    var code: String?
    /// The course as a GPX document (its `trkpt` or `rtept` points), or else `points`.
    var gpx: String?
    /// The course drawn as `[latitude, longitude]` points, when there is no GPX.
    var points: [[Double]]?
    /// The race distance, when it is not the course's length (laps of a loop, a virtual race).
    var distanceMetres: Double?
    var place: String?
    /// How many runners may enrol; none for no limit.
    var participantCap: Int?

    enum CodingKeys: String, CodingKey {
        case name, code, gpx, points, place
        case participantCap = "cap"
        case distanceMetres = "distance_m"
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
    }
}

struct EnrolmentRequest: Codable, Sendable {
    var open: Bool
}

struct RemovalRequest: Codable, Sendable {
    var deviceID: String

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
    }
}

struct RunBody: Codable, Sendable {
    var id: String
    var code: String
    var name: String
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var enrolmentOpen: Bool
    var lengthMetres: Double
    /// The race distance: the course's length unless the organiser set another.
    var distanceMetres: Double
    var spectatorURL: String
    var place: String
    var participantCap: Int?
    var status: Run.Status
    var closedMilliseconds: Int64?
    /// One page of the runners, in standing order, when the run is shown with them.
    var entries: [RunEntryBody]?
    /// How many runners the run has (not counting those removed), with its entries.
    var runners: Int?
    /// The cursor of the next page of runners, when more follow.
    var next: String?

    init(_ run: Run, entries: [RunEntryBody]?, now: Int64) {
        id = run.id
        code = run.code
        name = run.name
        place = run.place
        participantCap = run.participantCap
        status = run.status(now: now)
        closedMilliseconds = run.closedMilliseconds
        startMilliseconds = run.startMilliseconds
        endMilliseconds = run.endMilliseconds
        enrolmentOpen = run.enrolmentOpen
        lengthMetres = run.path.length
        distanceMetres = run.raceDistanceMetres
        spectatorURL = "/runs/\(run.id)"
        self.entries = entries
    }

    enum CodingKeys: String, CodingKey {
        case id, code, name, entries, runners, next, place, status
        case participantCap = "cap"
        case closedMilliseconds = "closed_ms"
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
        case enrolmentOpen = "enrolment_open"
        case lengthMetres = "length_m"
        case distanceMetres = "distance_m"
        case spectatorURL = "spectator_url"
    }
}

struct RunList: Codable, Sendable {
    var runs: [RunBody]
    var next: String?
}

/// A runner as their organiser sees them.
struct RunEntryBody: Codable, Sendable {
    var deviceID: String
    var name: String
    var showToSpectators: Bool
    var enrolledMilliseconds: Int64
    var checkedInMilliseconds: Int64?
    var latitude: Double?
    var longitude: Double?
    var fixMilliseconds: Int64?
    var distanceMetres: Double?
    var rank: Int
    var finishMilliseconds: Int64?
    var finishElapsedSeconds: Double?
    /// Seconds since the shown fix by the server's clock; nil before the first.
    var fixAgeSeconds: Double?
    /// No fix for longer than `RaceProgress.staleAfterMilliseconds`: where they were, not are.
    var stale: Bool
    /// The runner let the organiser follow their heart rate (given at enrolment).
    var sharesHealth: Bool
    /// Time on the course: to the finish, else to the newest fix (from the gun or a later check-in).
    var elapsedSeconds: Double?
    /// Seconds per kilometre over `elapsedSeconds` and the counted distance.
    var paceSecondsPerKilometre: Double?
    /// The newest heart rate, only while the run is live and only under the runner's consent.
    var health: RunnerHealth?

    init(_ entry: RunEntry, rank: Int, run: Run, now: Int64, health: RunnerHealth? = nil) {
        deviceID = entry.deviceID
        name = entry.name
        showToSpectators = entry.showToSpectators
        enrolledMilliseconds = entry.enrolledMilliseconds
        checkedInMilliseconds = entry.checkedInMilliseconds
        latitude = entry.latitude
        longitude = entry.longitude
        fixMilliseconds = entry.fixMilliseconds
        distanceMetres = entry.distanceMetres
        self.rank = rank
        finishMilliseconds = entry.finishMilliseconds
        finishElapsedSeconds = entry.finishElapsedSeconds(run)
        let age = RaceProgress.age(fixMilliseconds: entry.fixMilliseconds, now: now)
        fixAgeSeconds = age?.seconds
        stale = age?.stale ?? false
        sharesHealth = entry.shareHealth
        let statistics = RunnerStatistics(entry, run: run)
        elapsedSeconds = statistics.elapsedSeconds
        paceSecondsPerKilometre = statistics.paceSecondsPerKilometre
        self.health = health
    }

    enum CodingKeys: String, CodingKey {
        case name
        case deviceID = "device_id"
        case showToSpectators = "show"
        case enrolledMilliseconds = "enrolled_ms"
        case checkedInMilliseconds = "checked_in_ms"
        case latitude = "lat"
        case longitude = "lon"
        case fixMilliseconds = "fix_ms"
        case distanceMetres = "distance_m"
        case rank, stale, health
        case finishMilliseconds = "finish_ms"
        case finishElapsedSeconds = "finish_elapsed_s"
        case fixAgeSeconds = "fix_age_s"
        case sharesHealth = "shares_health"
        case elapsedSeconds = "elapsed_s"
        case paceSecondsPerKilometre = "pace_s_per_km"
    }

    /// Nulls written out: a runner not yet finished has `finish_ms: null`, not no field.
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sharesHealth, forKey: .sharesHealth)
        try c.encode(elapsedSeconds, forKey: .elapsedSeconds)
        try c.encode(paceSecondsPerKilometre, forKey: .paceSecondsPerKilometre)
        try c.encode(health, forKey: .health)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(name, forKey: .name)
        try c.encode(showToSpectators, forKey: .showToSpectators)
        try c.encode(enrolledMilliseconds, forKey: .enrolledMilliseconds)
        try c.encode(checkedInMilliseconds, forKey: .checkedInMilliseconds)
        try c.encode(latitude, forKey: .latitude)
        try c.encode(longitude, forKey: .longitude)
        try c.encode(fixMilliseconds, forKey: .fixMilliseconds)
        try c.encode(distanceMetres, forKey: .distanceMetres)
        try c.encode(rank, forKey: .rank)
        try c.encode(finishMilliseconds, forKey: .finishMilliseconds)
        try c.encode(finishElapsedSeconds, forKey: .finishElapsedSeconds)
        try c.encode(fixAgeSeconds, forKey: .fixAgeSeconds)
        try c.encode(stale, forKey: .stale)
    }
}

/// A runner's heart rate as their organiser sees it during the run.
struct RunnerHealth: Codable, Hashable, Sendable {
    var heartRate: Int
    var atMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case heartRate = "heart_rate_bpm"
        case atMilliseconds = "at_ms"
    }
}

/// A runner's time, distance and pace in a run, as the final standings give them.
struct RunnerStatistics: Hashable, Sendable {
    var elapsedSeconds: Double?
    var distanceMetres: Double?
    var paceSecondsPerKilometre: Double?

    /// Pace needs some distance: below this it would be a number that means nothing.
    static let paceFromMetres = 10.0

    init(_ entry: RunEntry, run: Run) {
        let from = max(run.startMilliseconds, entry.checkedInMilliseconds ?? run.startMilliseconds)
        let to = entry.finishMilliseconds ?? entry.fixMilliseconds
        elapsedSeconds = to.flatMap { $0 > from ? Double($0 - from) / 1000 : nil }
        distanceMetres = entry.distanceMetres
        if let elapsedSeconds, let distance = entry.distanceMetres, distance >= Self.paceFromMetres {
            paceSecondsPerKilometre = (elapsedSeconds / (distance / 1000) * 10).rounded() / 10
        }
    }
}

/// The public spectator page's data: the course and the consenting runners with a position,
/// furthest first. No device id, no consent flag, no one who did not consent. Once the run is
/// finished (closed, or past its end) the standings stay and the positions go: a runner's public
/// position ends with the run.
struct SpectatorView: Codable, Sendable {
    struct Runner: Codable, Sendable, Hashable {
        /// Stable per run and runner, and says nothing about the device.
        var id: String
        var name: String
        var latitude: Double?
        var longitude: Double?
        var distanceMetres: Double
        var fixMilliseconds: Int64
        var rank: Int
        var finishMilliseconds: Int64?
        var finishElapsedSeconds: Double?
        var fixAgeSeconds: Double
        /// No fix for longer than `RaceProgress.staleAfterMilliseconds`: the dot is where they
        /// were, not where they are.
        var stale: Bool

        enum CodingKeys: String, CodingKey {
            case id, name, rank, stale
            case latitude = "lat"
            case longitude = "lon"
            case distanceMetres = "distance_m"
            case fixMilliseconds = "fix_ms"
            case finishMilliseconds = "finish_ms"
            case finishElapsedSeconds = "finish_elapsed_s"
            case fixAgeSeconds = "fix_age_s"
        }

        /// Nulls written out: a runner not yet finished has `finish_ms: null`, not no field.
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(id, forKey: .id)
            try c.encode(name, forKey: .name)
            try c.encode(latitude, forKey: .latitude)
            try c.encode(longitude, forKey: .longitude)
            try c.encode(distanceMetres, forKey: .distanceMetres)
            try c.encode(fixMilliseconds, forKey: .fixMilliseconds)
            try c.encode(rank, forKey: .rank)
            try c.encode(finishMilliseconds, forKey: .finishMilliseconds)
            try c.encode(finishElapsedSeconds, forKey: .finishElapsedSeconds)
            try c.encode(fixAgeSeconds, forKey: .fixAgeSeconds)
            try c.encode(stale, forKey: .stale)
        }
    }

    var name: String
    var place: String
    var status: Run.Status
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var lengthMetres: Double
    /// The race distance (a runner finishes when their counted distance reaches it).
    var distanceMetres: Double
    var path: [[Double]]
    var runners: [Runner]
    /// The leader's `id`, or nil before anyone has a position.
    var leader: String?

    init(run: Run, entries: [RunEntry], now: Int64) {
        name = run.name
        place = run.place
        status = run.status(now: now)
        let positionsShown = status != .finished
        startMilliseconds = run.startMilliseconds
        endMilliseconds = run.endMilliseconds
        lengthMetres = run.path.length
        distanceMetres = run.raceDistanceMetres
        path = run.path.points
        // Ranked among the runners shown only: a gap in the ranks would tell of someone who
        // did not consent.
        let shown = RaceStanding.ranked(
            entries.filter { $0.showToSpectators && $0.latitude != nil && $0.longitude != nil && $0.fixMilliseconds != nil }
        )
        runners = shown.enumerated().compactMap { index, entry in
            guard let latitude = entry.latitude, let longitude = entry.longitude, let fix = entry.fixMilliseconds,
                let age = RaceProgress.age(fixMilliseconds: fix, now: now)
            else { return nil }
            return Runner(
                id: String(ServerDigest.sha256Hex(run.id + ":" + entry.deviceID).prefix(12)),
                name: entry.name,
                latitude: positionsShown ? latitude : nil,
                longitude: positionsShown ? longitude : nil,
                distanceMetres: ((entry.distanceMetres ?? 0) * 10).rounded() / 10,
                fixMilliseconds: fix,
                rank: index + 1,
                finishMilliseconds: entry.finishMilliseconds,
                finishElapsedSeconds: entry.finishElapsedSeconds(run),
                fixAgeSeconds: age.seconds,
                stale: age.stale
            )
        }
        leader = runners.first?.id
    }

    /// What the live feed compares to decide whether spectators need a new message (the ages
    /// change every second; the page counts them on itself).
    var signature: [String] {
        [status.rawValue, leader ?? ""]
            + runners.map {
                "\($0.id) \($0.rank) \($0.latitude ?? 0) \($0.longitude ?? 0) \($0.distanceMetres) \($0.stale) \($0.finishMilliseconds ?? 0)"
            }
    }

    enum CodingKeys: String, CodingKey {
        case name, path, runners, leader, place, status
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
        case lengthMetres = "length_m"
        case distanceMetres = "distance_m"
    }
}

/// One run in the public list.
struct PublicRunBody: Codable, Sendable {
    var id: String
    var name: String
    var place: String
    var status: Run.Status
    var startMilliseconds: Int64
    var endMilliseconds: Int64
    var distanceMetres: Double
    var spectatorURL: String

    init(_ run: Run, now: Int64) {
        id = run.id
        name = run.name
        place = run.place
        status = run.status(now: now)
        startMilliseconds = run.startMilliseconds
        endMilliseconds = run.endMilliseconds
        distanceMetres = run.raceDistanceMetres
        spectatorURL = "/runs/\(run.id)"
    }

    enum CodingKeys: String, CodingKey {
        case id, name, place, status
        case startMilliseconds = "start_ms"
        case endMilliseconds = "end_ms"
        case distanceMetres = "distance_m"
        case spectatorURL = "spectator_url"
    }
}

struct PublicRunList: Codable, Sendable {
    var runs: [PublicRunBody]
    var next: String?
}
