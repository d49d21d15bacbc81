public import Foundation
public import TrackMeCore

/// A simulation scenario (`simulations/scenarios/*.json`; the format is documented in
/// `simulations/README.md`). Times are seconds on the heart-rate trace's own clock.
public struct Scenario: Codable, Sendable {
    public struct HeartRateSource: Codable, Sendable {
        /// Path of a CSV trace, relative to the `simulations/` folder.
        public var trace: String
        /// Play only this part of the trace (seconds from its start).
        public var fromSeconds: Double?
        public var toSeconds: Double?
        /// Play the (selected part of the) trace again and again until this trace time: a
        /// 30-minute recording becomes a day.
        public var repeatUntilSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case trace
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case repeatUntilSeconds = "repeat_until_s"
        }
    }

    public struct GPSSource: Codable, Sendable {
        /// Path of an NMEA log, relative to the `simulations/` folder.
        public var log: String
        /// Replay the log again from the start when it ends (logs are short, traces long).
        public var loop: Bool?
    }

    /// The wearable's own battery over the scenario, as Linux's `power_supply` class would
    /// show it: the run writes a supply directory (`BAT0/type`, `capacity`, `status`) at each
    /// poll and the agent's own power reader and watch (`PowerService.poll`) read it.
    public struct PowerSource: Codable, Sendable {
        public struct Point: Codable, Sendable {
            public var atSeconds: Double
            /// The battery's charge, 0...100; between two points it moves in a straight line.
            public var capacity: Double
            /// On external power from this point to the next (the kernel's `Charging`, or `Full`
            /// at 100); otherwise `Discharging`.
            public var charging: Bool?

            enum CodingKeys: String, CodingKey {
                case atSeconds = "at_s"
                case capacity, charging
            }

            public init(atSeconds: Double, capacity: Double, charging: Bool? = nil) {
                self.atSeconds = atSeconds
                self.capacity = capacity
                self.charging = charging
            }
        }

        public var points: [Point]
        /// How often the agent reads the supplies (default: the agent's `power.poll_seconds`).
        public var pollSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case points
            case pollSeconds = "poll_s"
        }

        public init(points: [Point], pollSeconds: Double? = nil) {
            self.points = points
            self.pollSeconds = pollSeconds
        }

        /// The battery at trace second `seconds`: its charge in whole percent (rounded down, as
        /// a fuel gauge reports) and whether it is charging; nil before the first point.
        public func state(at seconds: Double) -> (capacity: Int, charging: Bool)? {
            let sorted = points.sorted { $0.atSeconds < $1.atSeconds }
            guard let index = sorted.lastIndex(where: { $0.atSeconds <= seconds }) else { return nil }
            let from = sorted[index]
            var capacity = from.capacity
            if index + 1 < sorted.count {
                let to = sorted[index + 1]
                let span = to.atSeconds - from.atSeconds
                if span > 0 { capacity += (to.capacity - from.capacity) * (seconds - from.atSeconds) / span }
            }
            return (Int(min(100, max(0, capacity)).rounded(.down)), from.charging ?? false)
        }

        /// The problem with the timeline, if any.
        func problem() -> String? {
            if points.isEmpty { return "power.points: at least one point is needed" }
            for (index, point) in points.enumerated() {
                if !(0...100).contains(point.capacity) { return "power.points[\(index)].capacity: \(point.capacity) is not within 0...100" }
                if point.atSeconds < 0 { return "power.points[\(index)].at_s: \(point.atSeconds) is negative" }
            }
            if let poll = pollSeconds, !(poll > 0) { return "power.poll_s: \(poll) must be above 0" }
            return nil
        }
    }

    public enum Pace: String, Codable, Sendable {
        case fast
        case realtime
    }

    public struct Fault: Codable, Sendable, Hashable {
        public enum Kind: String, Codable, Sendable, Hashable, CaseIterable {
            /// The server cannot be reached.
            case networkDown = "network_down"
            /// The server answers with an error status.
            case serverErrors = "server_errors"
            /// The BLE link drops; the link supervisor must reconnect.
            case strapLinkDrop = "strap_link_drop"
            /// The strap stops notifying while the link stays up.
            case strapSilent = "strap_silent"
            /// The strap reports no skin contact (bpm 0, no RR).
            case contactLoss = "contact_loss"
            /// The heart stops: the strap, still in contact, reports 0 bpm and no beat.
            case flatline
            /// gpsd stops; no fixes until it returns.
            case gpsdStopped = "gpsd_stopped"
            /// The board's wall clock reads 1970 and is untrusted (no real-time clock, before NTP
            /// or GPS set it); at the window's end the true time arrives.
            case wallClockUnset = "wall_clock_unset"
            /// The agent is killed (nothing in memory survives) and restarted.
            case agentCrash = "agent_crash"
            /// The wearer presses SOS.
            case manualSOS = "manual_sos"
            /// The wearer cancels the open alert.
            case cancel
            /// A dispatcher acknowledges the open alert.
            case acknowledge
        }

        public var type: Kind
        public var fromSeconds: Double
        /// End of the window; faults at a moment (crash, SOS) leave it out.
        public var toSeconds: Double?
        /// For `server_errors`: the status to answer (default 500).
        public var status: Int?
        /// For `cancel`: the reason.
        public var reason: CancelReason?

        enum CodingKeys: String, CodingKey {
            case type
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case status, reason
        }

        public init(type: Kind, fromSeconds: Double, toSeconds: Double? = nil, status: Int? = nil, reason: CancelReason? = nil) {
            self.type = type
            self.fromSeconds = fromSeconds
            self.toSeconds = toSeconds
            self.status = status
            self.reason = reason
        }

        func covers(_ seconds: Double) -> Bool {
            seconds >= fromSeconds && seconds < (toSeconds ?? fromSeconds)
        }
    }

    public struct Expectation: Codable, Sendable, Hashable {
        public enum Kind: String, Codable, Sendable, Hashable {
            /// An alert of `alert_kind` raised with its first critical reading within [from_s, to_s].
            case alert
            /// No alert other than those some `alert` expectation accounts for.
            case noOtherAlerts = "no_other_alerts"
            /// Every reading the store acknowledged reaches the server.
            case noReadingsLost = "no_readings_lost"
            /// The server holds every reading once.
            case noDuplicates = "no_duplicates"
            /// Every raised alert is delivered within `seconds` of being raised (the end of its
            /// countdown; virtual time, so offline windows count).
            case alertDeliveredWithin = "alert_delivered_within"
            /// Every reading the device produced reaches the server by the end.
            case allSynced = "all_synced"
            /// At least `count` readings were dropped to stay within the disk budget.
            case droppedByBudgetAtLeast = "dropped_by_budget_at_least"
            /// Every alert (of `alert_kind`, if given) carries a position whose age is within
            /// [`from_s`, `to_s`] seconds; with neither bound, the position must be unknown.
            case alertPositionAge = "alert_position_age"
            /// Every alert ends acknowledged (a dispatcher confirmed it and the device learned of it).
            case alertAcknowledged = "alert_acknowledged"
            /// The server files every reading it holds at its true time (within a second), none
            /// at the time it received it or in 1970.
            case readingsAtTrueTime = "readings_at_true_time"
            /// The wearer's feedback first turned to the battery warning within [from_s, to_s].
            case wearerToldBatteryLow = "wearer_told_battery_low"
            /// The server first held a heartbeat saying the device battery is at `level` (`low`
            /// or `critical`), with how long it has been low, within [from_s, to_s].
            case serverDeviceBattery = "server_device_battery"
            /// The device sent its last heartbeat alone, on reaching critical, within
            /// [from_s, to_s], and the server had it.
            case lastHeartbeatSent = "last_heartbeat_sent"
        }

        public var type: Kind
        public var alertKind: AlertKind?
        public var fromSeconds: Double?
        public var toSeconds: Double?
        public var seconds: Double?
        public var count: Int?
        /// For `server_device_battery`: the level the server must show.
        public var level: PowerWatch.Level?

        enum CodingKeys: String, CodingKey {
            case type
            case alertKind = "alert_kind"
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case seconds, count, level
        }

        public init(
            type: Kind,
            alertKind: AlertKind? = nil,
            fromSeconds: Double? = nil,
            toSeconds: Double? = nil,
            seconds: Double? = nil,
            count: Int? = nil,
            level: PowerWatch.Level? = nil
        ) {
            self.type = type
            self.alertKind = alertKind
            self.fromSeconds = fromSeconds
            self.toSeconds = toSeconds
            self.seconds = seconds
            self.count = count
            self.level = level
        }
    }

    public var name: String
    public var description: String?
    public var seed: UInt64?
    public var person: PersonProfile
    public var heartRate: HeartRateSource
    public var gps: GPSSource?
    public var pace: Pace?
    /// Store disk budget in bytes (default: the agent's 10 MB).
    public var diskBudgetBytes: Int64?
    /// Readings the device counted before the scenario starts (earlier days and nights of the
    /// same person): its learned resting heart rate, kept in its store as the agent keeps it.
    public var baselineHistory: HeartRateSource?
    /// The device's own battery over the run; nil: the board reports no power supply.
    public var power: PowerSource?
    public var faults: [Fault]
    public var expectations: [Expectation]

    enum CodingKeys: String, CodingKey {
        case name, description, seed, person
        case heartRate = "heart_rate"
        case gps, pace
        case diskBudgetBytes = "disk_budget_bytes"
        case baselineHistory = "baseline_history"
        case power
        case faults
        case expectations = "expect"
    }

    /// Reads a scenario file, naming the field on error.
    public static func load(from url: URL) throws -> Scenario {
        let data = try Data(contentsOf: url)
        let scenario: Scenario
        do {
            scenario = try WireCodec.decode(Scenario.self, from: data)
        } catch {
            throw ScenarioError(message: "\(url.lastPathComponent): \(error)")
        }
        if let problem = scenario.power?.problem() { throw ScenarioError(message: "\(url.lastPathComponent): \(problem)") }
        return scenario
    }
}

public struct ScenarioError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
