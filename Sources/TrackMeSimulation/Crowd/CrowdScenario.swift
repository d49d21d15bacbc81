public import Foundation

/// A scenario of many devices against one in-process server: a race of runners
/// along a GPX course, or a fleet of taxis driving between zones. Files in
/// `simulations/scenarios/` with a `crowd` object (the format is in `simulations/README.md`);
/// `trackme-sim run` tells them from single-device scenarios by that key.
public struct CrowdScenario: Codable, Sendable {
    public struct Race: Codable, Sendable {
        public var runners: Int
        /// GPX course, relative to `simulations/`.
        public var course: String
        /// Seconds of race simulated (1 Hz fixes).
        public var durationSeconds: Int
        /// Pace spread in seconds per km: mean and standard deviation (clamped to 150...600).
        public var paceMeanSecondsPerKm: Double
        public var paceSpreadSecondsPerKm: Double
        /// Share of runners who consent to be shown to spectators.
        public var showFraction: Double
        /// Stretch of the course (metres from the start) where the network is gone.
        public var tunnelFromMetres: Double?
        public var tunnelToMetres: Double?
        /// One runner who wears a strap and collapses.
        public var collapse: Collapse?
        /// Recorded runners instead of drawn ones (`RecordedRace`): track files and globs,
        /// relative to the scenario file or absolute; `course` and `distance_m` then go with them.
        public var tracks: [String]?
        public var align: RecordedRace.Align?
        public var distanceMetres: Double?

        enum CodingKeys: String, CodingKey {
            case runners, course, collapse, tracks, align
            case distanceMetres = "distance_m"
            case durationSeconds = "duration_s"
            case paceMeanSecondsPerKm = "pace_mean_s_per_km"
            case paceSpreadSecondsPerKm = "pace_spread_s_per_km"
            case showFraction = "show_fraction"
            case tunnelFromMetres = "tunnel_from_m"
            case tunnelToMetres = "tunnel_to_m"
        }
    }

    /// A runner whose strap sends a recorded trace from the start (`traces/hr/...`, relative to
    /// `simulations/`) and who stops dead at `onset_s`, where the trace's lethal episode begins:
    /// the race is where a collapse has the most people around, and the alert must reach the
    /// console from a crowd device as from any other.
    public struct Collapse: Codable, Sendable {
        /// 1-based runner number.
        public var runner: Int
        public var trace: String
        public var onsetSeconds: Int

        enum CodingKeys: String, CodingKey {
            case runner, trace
            case onsetSeconds = "onset_s"
        }
    }

    public struct Zone: Codable, Sendable {
        public var name: String
        /// `[[latitude, longitude], ...]`.
        public var polygon: [[Double]]
    }

    public struct Fleet: Codable, Sendable {
        public var taxis: Int
        public var zones: [Zone]
        public var durationSeconds: Int
        /// Metres per second while driving.
        public var speed: Double
        /// How long a taxi waits at a stand, seconds (min, max).
        public var dwellSeconds: [Int]
        /// Share of stand departures that are rides (on_ride while driving; the others drive
        /// to another stand unavailable, e.g. to refuel).
        public var rideFraction: Double
        /// Share of the other departures made still available (cruising for a fare): the taxi
        /// enters the next zone with no state change, so only its 30 s fix tells the server.
        public var cruiseFraction: Double?
        /// Recorded rides instead of invented ones: a CSV in the Porto taxi data set's format
        /// (`RecordedTrips`), relative to the scenario file or absolute. With it, the invented
        /// fleet's keys are not needed, `zones` is optional and `duration_s` 0 means "to the
        /// last drop-off".
        public var trips: String?

        enum CodingKeys: String, CodingKey {
            case taxis, zones, speed, trips
            case cruiseFraction = "cruise_fraction"
            case durationSeconds = "duration_s"
            case dwellSeconds = "dwell_s"
            case rideFraction = "ride_fraction"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            trips = try c.decodeIfPresent(String.self, forKey: .trips)
            zones = try c.decodeIfPresent([Zone].self, forKey: .zones) ?? []
            durationSeconds = try c.decodeIfPresent(Int.self, forKey: .durationSeconds) ?? 0
            cruiseFraction = try c.decodeIfPresent(Double.self, forKey: .cruiseFraction)
            if trips == nil {
                taxis = try c.decode(Int.self, forKey: .taxis)
                zones = try c.decode([Zone].self, forKey: .zones)
                durationSeconds = try c.decode(Int.self, forKey: .durationSeconds)
                speed = try c.decode(Double.self, forKey: .speed)
                dwellSeconds = try c.decode([Int].self, forKey: .dwellSeconds)
                rideFraction = try c.decode(Double.self, forKey: .rideFraction)
            } else {
                taxis = try c.decodeIfPresent(Int.self, forKey: .taxis) ?? 0
                speed = try c.decodeIfPresent(Double.self, forKey: .speed) ?? 0
                dwellSeconds = try c.decodeIfPresent([Int].self, forKey: .dwellSeconds) ?? [0, 0]
                rideFraction = try c.decodeIfPresent(Double.self, forKey: .rideFraction) ?? 0
            }
        }
    }

    /// Taxis parked at stands, available, and rides booked for their zones over the run: each
    /// driver answers each offer as the seed draws (accept, refuse, or silence for the window),
    /// and an accepted ride ends as completed or with the client missing.
    public struct Rides: Codable, Sendable {
        public var taxis: Int
        public var zones: [Zone]
        public var durationSeconds: Int
        /// Rides booked at once, spread evenly over the first half of the run.
        public var bookings: Int
        /// Rides booked for 11 minutes ahead (offered 10 minutes before their time).
        public var reservations: Int
        public var refuseFraction: Double
        public var silentFraction: Double
        public var missingClientFraction: Double
        /// Seconds a driver takes to answer (min, max), within the window.
        public var answerSeconds: [Int]
        /// Seconds from acceptance to pickup, and from pickup to the end (min, max).
        public var rideSeconds: [Int]

        enum CodingKeys: String, CodingKey {
            case taxis, zones, bookings, reservations
            case durationSeconds = "duration_s"
            case refuseFraction = "refuse_fraction"
            case silentFraction = "silent_fraction"
            case missingClientFraction = "missing_client_fraction"
            case answerSeconds = "answer_s"
            case rideSeconds = "ride_s"
        }
    }

    public struct Thresholds: Codable, Sendable {
        /// Every consenting runner's fix visible to spectators within this long (p99, online).
        public var spectatorLagP99Seconds: Double?
        /// Every taxi in its zone's queue within this long of arriving.
        public var queuedWithinSeconds: Double?
        /// A taxi that starts a ride leaves the queue within this long.
        public var leavesQueueWithinSeconds: Double?
        /// The collapsed runner's alert on the dispatcher's board within this long of the onset.
        public var alertWithinSeconds: Double?
        /// Every ride offer on its taxi's feedback output within this long of the server making it.
        public var offerToTerminalSeconds: Double?
        /// What a race of recorded runners must get right (`RecordedRace.Expectations`).
        public var race: RecordedRace.Expectations?
        /// Recorded rides: each ride's occupied state, and the free state after it, on the fleet
        /// board within this long of the ride's start and end.
        public var ridesShownWithinSeconds: Double?
        /// Recorded rides: no GPS jump of the recording shown on the fleet board.
        public var noJumpsShown: Bool?
        /// Recorded rides: between rides the board shows the last drop-off, nothing else.
        public var dropOffShownBetweenRides: Bool?

        enum CodingKeys: String, CodingKey {
            case alertWithinSeconds = "alert_within_s"
            case spectatorLagP99Seconds = "spectator_lag_p99_s"
            case queuedWithinSeconds = "queued_within_s"
            case leavesQueueWithinSeconds = "leaves_queue_within_s"
            case offerToTerminalSeconds = "offer_to_terminal_s"
            case race
            case ridesShownWithinSeconds = "rides_shown_within_s"
            case noJumpsShown = "no_jumps_shown"
            case dropOffShownBetweenRides = "drop_off_shown_between_rides"
        }
    }

    /// Wearers going about their day, each with a strap at 1 Hz: most replay one normal
    /// recording, each from its own point in it; a few hold an episode from another recording.
    public struct Population: Codable, Sendable {
        public var wearers: Int
        public var durationSeconds: Int
        /// The heart-rate recording every wearer without an episode replays, in a loop.
        public var trace: String
        public var episodes: [Episode]?

        enum CodingKeys: String, CodingKey {
            case wearers, trace, episodes
            case durationSeconds = "duration_s"
        }
    }

    /// One wearer's held episode: from `start_s` of the run the strap records `trace` (its own
    /// time 0 then), and the condition itself begins `onset_s` into that recording. The
    /// recording's end is the strap's last notification.
    public struct Episode: Codable, Sendable {
        public var wearer: Int
        public var trace: String
        public var startSeconds: Int
        public var onsetSeconds: Int

        enum CodingKeys: String, CodingKey {
            case wearer, trace
            case startSeconds = "start_s"
            case onsetSeconds = "onset_s"
        }
    }

    public struct Crowd: Codable, Sendable {
        public var race: Race?
        public var fleet: Fleet?
        public var rides: Rides?
        public var population: Population?
    }

    public var name: String
    public var description: String?
    public var seed: UInt64?
    public var crowd: Crowd
    public var expect: Thresholds

    /// Whether the JSON at `url` is a crowd scenario (has a `crowd` object).
    public static func isCrowd(_ url: URL) -> Bool {
        guard let data = try? Data(contentsOf: url), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            return false
        }
        return object["crowd"] != nil
    }

    public static func load(from url: URL) throws -> CrowdScenario {
        var scenario = try JSONDecoder().decode(CrowdScenario.self, from: Data(contentsOf: url))
        if let trips = scenario.crowd.fleet?.trips, !trips.hasPrefix("/") {
            scenario.crowd.fleet?.trips = url.deletingLastPathComponent().appendingPathComponent(trips).standardizedFileURL.path
        }
        return scenario
    }
}
