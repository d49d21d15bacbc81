public import Foundation

/// A race of recorded runners (`crowd.race.tracks`): what the scenario asks, and what the report
/// says of it (schema in `simulations/README.md`).
public enum RecordedRace {
    /// How the tracks sit on the race's clock.
    public enum Align: String, Codable, Sendable {
        /// Every track shifted so that its first fix is the gun: a mass start.
        case start
        /// The tracks' own times; the gun is the earliest first fix.
        case recorded
    }

    /// What the race must get right, each checked against the recordings.
    public struct Expectations: Codable, Sendable {
        /// The server's distance within this percentage of the track's own.
        public var distanceWithinPercent: Double?
        /// How many runners must be within it (default: all).
        public var distanceMinRunners: Int?
        /// The server's finish within this many seconds of the moment the recording reaches the
        /// race distance (and no finish where the recording has none).
        public var finishWithinSeconds: Double?
        public var finishMinRunners: Int?
        /// The server's ranking is the recordings' (finishers by finish time, then the others by
        /// distance), ties within the finish and distance tolerances aside.
        public var finishOrderMatchesRecordings: Bool?
        /// Every position shown for a runner is one of that runner's own fixes.
        public var noIdentitySwaps: Bool?
        /// Every watch gap longer than this is shown stale within this long of its last fix,
        /// and no runner is shown stale while their fixes arrive.
        public var gapsShownStaleWithinSeconds: Double?
        /// No runner raised an alert, none open on the dispatcher's board.
        public var noAlerts: Bool?
        /// Every runner with a fix more than 2 s old is on the spectator page (all consent).
        public var everyRunnerShown: Bool?

        enum CodingKeys: String, CodingKey {
            case distanceWithinPercent = "distance_within_pct"
            case distanceMinRunners = "distance_min_runners"
            case finishWithinSeconds = "finish_within_s"
            case finishMinRunners = "finish_min_runners"
            case finishOrderMatchesRecordings = "finish_order_matches_recordings"
            case noIdentitySwaps = "no_identity_swaps"
            case gapsShownStaleWithinSeconds = "gaps_shown_stale_within_s"
            case noAlerts = "no_alerts"
            case everyRunnerShown = "every_runner_shown"
        }
    }

    public struct Runner: Codable, Sendable, Hashable {
        public var name: String
        public var file: String
        /// What the organiser's view says at the end.
        public var distanceMetres: Double?
        public var finishElapsedSeconds: Double?
        public var rank: Int?
        /// Along the recording (`TrackTruth`), and when the recording reaches the race distance.
        public var trueDistanceMetres: Double
        public var trueFinishElapsedSeconds: Double?
        public var fixes: Int
        public var jumpsDropped: Int
        /// Watch gaps (no fix for 15 s or more) and when each was first shown stale.
        public var gaps: [Gap]

        enum CodingKeys: String, CodingKey {
            case name, file, rank, fixes, gaps
            case distanceMetres = "distance_m"
            case finishElapsedSeconds = "finish_elapsed_s"
            case trueDistanceMetres = "true_distance_m"
            case trueFinishElapsedSeconds = "true_finish_elapsed_s"
            case jumpsDropped = "jumps_dropped"
        }

        /// Nulls written out: a runner who did not finish has `finish_elapsed_s: null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(name, forKey: .name)
            try c.encode(file, forKey: .file)
            try c.encode(distanceMetres, forKey: .distanceMetres)
            try c.encode(finishElapsedSeconds, forKey: .finishElapsedSeconds)
            try c.encode(rank, forKey: .rank)
            try c.encode(trueDistanceMetres, forKey: .trueDistanceMetres)
            try c.encode(trueFinishElapsedSeconds, forKey: .trueFinishElapsedSeconds)
            try c.encode(fixes, forKey: .fixes)
            try c.encode(jumpsDropped, forKey: .jumpsDropped)
            try c.encode(gaps, forKey: .gaps)
        }
    }

    public struct Gap: Codable, Sendable, Hashable {
        /// Race seconds of the last fix before the gap and the first after it.
        public var fromSeconds: Double
        public var toSeconds: Double
        /// Seconds from the last fix to the first read that showed the runner stale; nil if none did.
        public var shownStaleAfterSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case shownStaleAfterSeconds = "shown_stale_after_s"
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(fromSeconds, forKey: .fromSeconds)
            try c.encode(toSeconds, forKey: .toSeconds)
            try c.encode(shownStaleAfterSeconds, forKey: .shownStaleAfterSeconds)
        }
    }

    public struct Report: Codable, Sendable {
        public var align: Align
        public var distanceMetres: Double
        public var durationSeconds: Int
        public var runners: [Runner]
        /// Positions shown for a runner that were not that runner's own fix, over every read.
        public var identitySwaps: Int
        /// Runner-seconds the organiser's view showed a runner stale while their recording went on.
        public var staleShownSeconds: Double
        /// Of those, seconds shown stale although a fix had come within the last 5 s.
        public var staleWithFreshFixSeconds: Double
        /// Reads of the spectator page that lacked a consenting runner who had a fix.
        public var spectatorMissing: Int

        enum CodingKeys: String, CodingKey {
            case align, runners
            case distanceMetres = "distance_m"
            case durationSeconds = "duration_s"
            case identitySwaps = "identity_swaps"
            case staleShownSeconds = "stale_shown_s"
            case staleWithFreshFixSeconds = "stale_with_fresh_fix_s"
            case spectatorMissing = "spectator_missing"
        }
    }
}

/// An alert of a crowd run: raised on a device, and whether it is open on the dispatcher's board
/// (null where the run does not read the board, as the fleet's does not).
public struct CrowdAlert: Codable, Sendable, Hashable {
    public var deviceID: String
    public var name: String
    public var kind: String
    /// Trace ms the device's dispatch lane had it delivered; nil if never.
    public var deliveredMilliseconds: Int64?
    public var openOnBoard: Bool?

    enum CodingKeys: String, CodingKey {
        case name, kind
        case deviceID = "device_id"
        case deliveredMilliseconds = "delivered_ms"
        case openOnBoard = "open_on_board"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(deviceID, forKey: .deviceID)
        try c.encode(name, forKey: .name)
        try c.encode(kind, forKey: .kind)
        try c.encode(deliveredMilliseconds, forKey: .deliveredMilliseconds)
        try c.encode(openOnBoard, forKey: .openOnBoard)
    }
}

/// `trackme-sim run CROWD.json --report R.json`: the crowd run's checks and figures, what it
/// says of a recorded race or recorded rides, and the alerts raised.
public struct CrowdReport: Encodable, Sendable {
    public var scenario: String
    public var passed: Bool
    public var lines: [String]
    public var figures: [String: Double]
    public var race: RecordedRace.Report?
    public var fleet: RecordedFleetReport?
    public var alerts: [CrowdAlert]

    public init(scenario: String, outcome: CrowdRunner.Outcome) {
        self.scenario = scenario
        passed = outcome.passed
        lines = outcome.lines
        figures = outcome.figures
        race = outcome.race
        fleet = outcome.fleet
        alerts = outcome.alerts
    }

    public func write(to url: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(self).write(to: url)
    }
}

extension CrowdScenario.Race {
    /// The drawn runners' fields are needed only when there are no `tracks`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        tracks = try c.decodeIfPresent([String].self, forKey: .tracks)
        align = try c.decodeIfPresent(RecordedRace.Align.self, forKey: .align)
        distanceMetres = try c.decodeIfPresent(Double.self, forKey: .distanceMetres)
        course = try c.decode(String.self, forKey: .course)
        collapse = try c.decodeIfPresent(CrowdScenario.Collapse.self, forKey: .collapse)
        tunnelFromMetres = try c.decodeIfPresent(Double.self, forKey: .tunnelFromMetres)
        tunnelToMetres = try c.decodeIfPresent(Double.self, forKey: .tunnelToMetres)
        let drawn = tracks == nil
        runners = drawn ? try c.decode(Int.self, forKey: .runners) : try c.decodeIfPresent(Int.self, forKey: .runners) ?? 0
        durationSeconds = drawn ? try c.decode(Int.self, forKey: .durationSeconds) : try c.decodeIfPresent(Int.self, forKey: .durationSeconds) ?? 0
        paceMeanSecondsPerKm = drawn ? try c.decode(Double.self, forKey: .paceMeanSecondsPerKm) : 0
        paceSpreadSecondsPerKm = drawn ? try c.decode(Double.self, forKey: .paceSpreadSecondsPerKm) : 0
        showFraction = drawn ? try c.decode(Double.self, forKey: .showFraction) : try c.decodeIfPresent(Double.self, forKey: .showFraction) ?? 1
    }
}
