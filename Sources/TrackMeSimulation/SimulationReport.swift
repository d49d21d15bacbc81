public import TrackMeCore

/// What happened in a scenario run (schema in `simulations/README.md`). Times are milliseconds of
/// virtual time from the start of the trace, except `decision_latency_ms`, which is measured on
/// the real monotonic clock of the run.
public struct SimulationReport: Codable, Sendable {
    public struct Alert: Codable, Sendable, Hashable {
        public struct Position: Codable, Sendable, Hashable {
            public var lat: Double
            public var lon: Double
            public var ageMilliseconds: Int64

            enum CodingKeys: String, CodingKey {
                case lat, lon
                case ageMilliseconds = "age_ms"
            }
        }

        public var alertID: String
        public var kind: AlertKind
        public var state: AlertState
        public var firstCriticalMilliseconds: Int64
        public var raisedMilliseconds: Int64?
        /// Real time from the triggering reading's bytes reaching the decoder to the alert being
        /// journaled and queued for dispatch.
        public var decisionLatencyMilliseconds: Double?
        public var deliveredMilliseconds: Int64?
        public var position: Position?

        enum CodingKeys: String, CodingKey {
            case alertID = "alert_id"
            case kind, state
            case firstCriticalMilliseconds = "first_critical_ms"
            case raisedMilliseconds = "raised_ms"
            case decisionLatencyMilliseconds = "decision_latency_ms"
            case deliveredMilliseconds = "delivered_ms"
            case position
        }
    }

    public struct Readings: Codable, Sendable, Hashable {
        /// Readings the sources produced (heart rate and stored fixes).
        public var produced: Int
        /// Readings the store acknowledged as durable.
        public var stored: Int
        /// Readings the store has marked synced (server acknowledged).
        public var synced: Int
        /// Distinct readings the server holds for the device.
        public var receivedByServer: Int
        /// Readings the server received more than once (it stores them once).
        public var duplicatesAtServer: Int
        /// Readings dropped by the disk budget (reported to the server).
        public var droppedByBudget: Int
        /// Readings the store acknowledged that never reached the server and were not dropped by
        /// the budget. Must be zero.
        public var lost: Int
        /// Readings produced but not yet committed when the agent was killed (never acknowledged,
        /// so not "lost" in the durability sense; bounded by the group-commit window).
        public var uncommittedAtCrash: Int
        /// Readings the server holds filed more than a second away from their true time (the
        /// trace's): at the time it received them, because the device's clock was not trusted
        /// and could not be corrected before they were sent.
        public var offTrueTime: Int
        /// Readings stamped while the device's clock was untrusted that it corrected before
        /// sending (flagged `wall_corrected`).
        public var correctedByDevice: Int

        enum CodingKeys: String, CodingKey {
            case produced, stored, synced
            case receivedByServer = "received_by_server"
            case duplicatesAtServer = "duplicates_at_server"
            case droppedByBudget = "dropped_by_budget"
            case lost
            case uncommittedAtCrash = "uncommitted_at_crash"
            case offTrueTime = "off_true_time"
            case correctedByDevice = "corrected_by_device"
        }
    }

    /// The device's own battery over the run (scenarios with `power`): what the agent read and
    /// decided, what the wearer was shown, and what the server (the console's protection
    /// state) held.
    public struct Power: Codable, Sendable, Hashable {
        /// A change of what the agent made of the battery or of what the wearer was shown.
        public struct Change: Codable, Sendable, Hashable {
            public var atMilliseconds: Int64
            public var percent: Int?
            public var source: DevicePower.Source?
            public var level: PowerWatch.Level
            /// The wearer's feedback (`FeedbackState`: `battery_low`, `idle`, ...).
            public var wearerShown: String

            enum CodingKeys: String, CodingKey {
                case atMilliseconds = "at_ms"
                case percent, source, level
                case wearerShown = "wearer_shown"
            }
        }

        /// A change of the device battery's level in the heartbeat the server holds (what the
        /// console's device list and alert card show).
        public struct AtServer: Codable, Sendable, Hashable {
            public var atMilliseconds: Int64
            public var percent: Int?
            public var source: DevicePower.Source?
            /// Nil: the battery is fine, or the device is on external power.
            public var level: PowerWatch.Level?
            /// How long the battery had been low (`conditions_for_s.device_battery_low`) when the
            /// device made the heartbeat.
            public var lowForSeconds: Int64?

            enum CodingKeys: String, CodingKey {
                case atMilliseconds = "at_ms"
                case percent, source, level
                case lowForSeconds = "low_for_s"
            }
        }

        public var changes: [Change] = []
        /// When the device sent its last heartbeat alone on reaching critical.
        public var lastHeartbeatMilliseconds: [Int64] = []
        public var atServer: [AtServer] = []

        enum CodingKeys: String, CodingKey {
            case changes
            case lastHeartbeatMilliseconds = "last_heartbeat_ms"
            case atServer = "at_server"
        }
    }

    public struct ExpectationResult: Codable, Sendable, Hashable {
        public var expectation: String
        public var passed: Bool
        public var message: String
    }

    public var scenario: String
    public var seed: UInt64
    public var mode: String
    public var virtualDurationMilliseconds: Int64
    public var wallMilliseconds: Double
    public var alerts: [Alert]
    public var readings: Readings
    /// Alert updates the server was sent again after it had taken them (its
    /// `trackme_server_alert_updates_duplicate_total`): 0 unless a send's answer was lost or
    /// the agent was killed between a send and its record of it; a second sender would add more.
    public var alertUpdatesDuplicateAtServer: Int?
    /// Nil when the scenario has no `power`.
    public var power: Power?
    public var faults: [Scenario.Fault]
    public var expectations: [ExpectationResult]

    public var passed: Bool { expectations.allSatisfy(\.passed) }

    enum CodingKeys: String, CodingKey {
        case scenario, seed, mode
        case virtualDurationMilliseconds = "virtual_duration_ms"
        case wallMilliseconds = "wall_ms"
        case alerts, readings, power, faults, expectations
        case alertUpdatesDuplicateAtServer = "alert_updates_duplicate_at_server"
    }
}
