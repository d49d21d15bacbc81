public import Foundation
public import TrackMeCore

/// Judges the SOS rules on recordings: runs `SOSEngine` exactly as the agent does (through
/// `SOSTraceReplay`: a notification per row, ticks every 250 ms) over annotated traces and
/// scores what it raised against what the annotations require or forbid. The annotation format
/// is in `simulations/README.md` ("Judging the SOS rules").
public enum RuleEvaluation {
    /// One trace's annotation file (`<trace stem>.episodes.json`).
    public struct Annotation: Codable, Hashable, Sendable {
        public var profile: PersonProfile?
        public var careProfile: CareProfile?
        public var episodes: [Episode]

        enum CodingKeys: String, CodingKey {
            case profile
            case careProfile = "care_profile"
            case episodes
        }
    }

    public struct Episode: Codable, Hashable, Sendable {
        public enum Expectation: String, Codable, Hashable, Sendable {
            /// An alert must be raised within `within_s` of the onset (or already be open then).
            case required
            /// No alert may be raised from `from_s` to `to_s`.
            case forbidden
        }

        public var label: String
        public var fromSeconds: Double
        public var toSeconds: Double
        public var alert: Expectation
        public var withinSeconds: Double?

        enum CodingKeys: String, CodingKey {
            case label
            case fromSeconds = "from_s"
            case toSeconds = "to_s"
            case alert
            case withinSeconds = "within_s"
        }
    }

    public struct RaisedAlert: Codable, Hashable, Sendable {
        public var kind: AlertKind
        public var reason: String?
        public var raisedSeconds: Double
    }

    public struct EpisodeResult: Codable, Hashable, Sendable {
        public var label: String
        public var fromSeconds: Double
        public var toSeconds: Double
        public var alert: Episode.Expectation
        /// For required episodes: detected in time (raised within the limit, or already open).
        public var detected: Bool?
        /// Seconds from onset to the alert raised for it; nil when it was already open or none came.
        public var delaySeconds: Double?
        public var alreadyOpen: Bool?
        /// For forbidden episodes: alerts raised inside it.
        public var falseAlarms: Int?
    }

    public struct TraceResult: Codable, Hashable, Sendable {
        public var trace: String
        public var careProfile: CareProfile
        public var hours: Double
        public var alerts: [RaisedAlert]
        public var episodes: [EpisodeResult]
    }

    public struct Totals: Codable, Hashable, Sendable {
        public var traces: Int
        public var hours: Double
        public var requiredEpisodes: Int
        public var detected: Int
        public var missed: Int
        public var sensitivity: Double?
        public var meanDelaySeconds: Double?
        public var maxDelaySeconds: Double?
        public var falseAlarms: Int
        public var forbiddenHours: Double
        public var falseAlarmsPer24Hours: Double?
        /// Wall time of the replays alone, and trace hours replayed per wall second.
        public var rulesWallSeconds: Double
        public var traceHoursPerWallSecond: Double?
    }

    public struct Report: Codable, Hashable, Sendable {
        public var traces: [TraceResult]
        public var totals: Totals
    }

    public struct EvaluationError: Error, CustomStringConvertible, Sendable {
        public var file: String
        public var message: String
        public var description: String { "\(file): \(message)" }
    }

    /// Replays `trace` from `startMilliseconds` (monitoring starts fresh there) to
    /// `endMilliseconds` and returns every alert raised by then, in order.
    public static func alerts(
        in trace: HeartRateTrace,
        profile: PersonProfile,
        settings: SOSSettings,
        startMilliseconds: Int64? = nil,
        endMilliseconds: Int64? = nil
    ) -> [RaisedAlert] {
        var rows = trace.rows
        if let startMilliseconds { rows.removeAll { $0.timeMilliseconds < startMilliseconds } }
        if let endMilliseconds { rows.removeAll { $0.timeMilliseconds > endMilliseconds } }
        guard let first = rows.first else { return [] }
        var replay = SOSTraceReplay(profile: profile, settings: settings, startMilliseconds: first.timeMilliseconds - 1000)
        replay.run(HeartRateTrace(rows: rows))
        var raised: [RaisedAlert] = []
        for step in replay.steps {
            if let limit = endMilliseconds, step.timeMilliseconds > limit { break }
            switch step.action {
            case .raise(let record):
                raised.append(RaisedAlert(kind: record.kind, reason: record.reason, raisedSeconds: Double(step.timeMilliseconds) / 1000))
            case .startCountdown, .update, .positionUpdate, .kindChanged, .cancelled, .withdrawn, .logMonitoringPaused,
                .logMonitoringResumed:
                break
            }
        }
        return raised
    }

    /// Scores one trace's alerts against its annotation.
    public static func judge(_ alerts: [RaisedAlert], episodes: [Episode]) -> [EpisodeResult] {
        episodes.map { episode in
            var result = EpisodeResult(
                label: episode.label,
                fromSeconds: episode.fromSeconds,
                toSeconds: episode.toSeconds,
                alert: episode.alert
            )
            switch episode.alert {
            case .required:
                // Nothing closes an alert during a replay: one raised before the onset is still open.
                if alerts.contains(where: { $0.raisedSeconds < episode.fromSeconds }) {
                    result.detected = true
                    result.alreadyOpen = true
                } else if let first = alerts.first(where: { $0.raisedSeconds >= episode.fromSeconds }) {
                    let delay = first.raisedSeconds - episode.fromSeconds
                    result.delaySeconds = (delay * 10).rounded() / 10
                    result.alreadyOpen = false
                    result.detected = delay <= (episode.withinSeconds ?? 60)
                } else {
                    result.detected = false
                    result.alreadyOpen = false
                }
            case .forbidden:
                result.falseAlarms = alerts.filter { $0.raisedSeconds >= episode.fromSeconds && $0.raisedSeconds <= episode.toSeconds }.count
            }
            return result
        }
    }

    /// Every `*.csv` in `directory` with an annotation file beside it (or in `annotations`).
    public static func evaluate(
        directory: URL,
        annotations: URL? = nil,
        careProfile override: CareProfile? = nil,
        defaultProfile: PersonProfile,
        withoutRhythmSignals: Bool = false
    ) throws -> Report {
        let files = try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "csv" }.sorted { $0.lastPathComponent < $1.lastPathComponent }
        var results: [TraceResult] = []
        var wall = Duration.zero
        let clock = ContinuousClock()
        for file in files {
            let stem = file.deletingPathExtension().lastPathComponent
            let name = "\(stem).episodes.json"
            let beside = directory.appendingPathComponent(name)
            let candidates = [beside] + (annotations.map { [$0.appendingPathComponent(name)] } ?? [])
            guard let annotationURL = candidates.first(where: { FileManager.default.fileExists(atPath: $0.path) }) else { continue }
            let annotation: Annotation
            do {
                annotation = try JSONDecoder().decode(Annotation.self, from: Data(contentsOf: annotationURL))
            } catch {
                throw EvaluationError(file: annotationURL.path, message: "not an annotation file: \(error)")
            }
            let trace: HeartRateTrace
            do {
                trace = try HeartRateTrace(csv: String(decoding: try Data(contentsOf: file), as: UTF8.self))
            } catch {
                throw EvaluationError(file: file.path, message: "\(error)")
            }
            let care = override ?? annotation.careProfile ?? .wearable
            let profile = annotation.profile ?? defaultProfile
            var raised: [RaisedAlert] = []
            wall += clock.measure {
                raised = alerts(in: trace, profile: profile, settings: settings(care, withoutRhythmSignals: withoutRhythmSignals))
            }
            let hours = Double(trace.duration.nanoseconds) / 3.6e12
            results.append(
                TraceResult(
                    trace: stem,
                    careProfile: care,
                    hours: (hours * 1000).rounded() / 1000,
                    alerts: raised,
                    episodes: judge(raised, episodes: annotation.episodes)
                )
            )
        }
        return Report(traces: results, totals: totals(results, wall: wall))
    }

    static func totals(_ results: [TraceResult], wall: Duration) -> Totals {
        let episodes = results.flatMap(\.episodes)
        let required = episodes.filter { $0.alert == .required }
        let detected = required.filter { $0.detected == true }
        let delays = detected.compactMap(\.delaySeconds)
        let falseAlarms = episodes.compactMap(\.falseAlarms).reduce(0, +)
        let forbiddenHours = episodes.filter { $0.alert == .forbidden }.map { ($0.toSeconds - $0.fromSeconds) / 3600 }.reduce(0, +)
        let hours = results.map(\.hours).reduce(0, +)
        let wallSeconds = Double(wall.nanoseconds) / 1e9
        return Totals(
            traces: results.count,
            hours: round3(hours),
            requiredEpisodes: required.count,
            detected: detected.count,
            missed: required.count - detected.count,
            sensitivity: required.isEmpty ? nil : round3(Double(detected.count) / Double(required.count)),
            meanDelaySeconds: delays.isEmpty ? nil : round3(delays.reduce(0, +) / Double(delays.count)),
            maxDelaySeconds: delays.max(),
            falseAlarms: falseAlarms,
            forbiddenHours: round3(forbiddenHours),
            falseAlarmsPer24Hours: forbiddenHours > 0 ? round3(Double(falseAlarms) * 24 / forbiddenHours) : nil,
            rulesWallSeconds: round3(wallSeconds),
            traceHoursPerWallSecond: wallSeconds > 0 ? (hours / wallSeconds).rounded() : nil
        )
    }

    static func round3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    /// The settings of `profile`, optionally with every rhythm signal off (a baseline).
    public static func settings(_ profile: CareProfile, withoutRhythmSignals: Bool) -> SOSSettings {
        var settings = SOSSettings(profile: profile)
        if withoutRhythmSignals { settings.rhythm = RhythmSettings.none }
        return settings
    }
}

/// The PhysioNet/CinC Challenge 2015 read as a wearable would: each record's monitor alarm
/// sounded at 300 s and was labelled TRUE or FALSE; the device starts fresh at 240 s, sees the
/// trace up to 300 s, and has "alarmed" if it raised any alert by then. Scored with the
/// challenge's `(TP + TN) / (TP + TN + FP + 5 FN)`, per alarm type and in total.
public enum ChallengeEvaluation {
    public struct Counts: Codable, Hashable, Sendable {
        public var truePositives = 0
        public var falsePositives = 0
        public var trueNegatives = 0
        public var falseNegatives = 0

        public var score: Double {
            let denominator = truePositives + trueNegatives + falsePositives + 5 * falseNegatives
            guard denominator > 0 else { return 0 }
            return ((Double(truePositives + trueNegatives) / Double(denominator)) * 1000).rounded() / 10
        }

        public var truePositiveRate: Double? {
            let all = truePositives + falseNegatives
            return all == 0 ? nil : ((Double(truePositives) / Double(all)) * 1000).rounded() / 10
        }

        public var trueNegativeRate: Double? {
            let all = trueNegatives + falsePositives
            return all == 0 ? nil : ((Double(trueNegatives) / Double(all)) * 1000).rounded() / 10
        }

        mutating func add(alarmed: Bool, label: Bool) {
            switch (alarmed, label) {
            case (true, true): truePositives += 1
            case (true, false): falsePositives += 1
            case (false, false): trueNegatives += 1
            case (false, true): falseNegatives += 1
            }
        }
    }

    public struct Record: Codable, Hashable, Sendable {
        public var record: String
        public var alarmType: String
        public var label: Bool
        public var alarmed: Bool
        /// The first alert raised in the window, if any.
        public var alert: RuleEvaluation.RaisedAlert?
    }

    public struct Report: Codable, Hashable, Sendable {
        public var careProfile: CareProfile
        public var records: [Record]
        public var byAlarmType: [String: Counts]
        public var total: Counts
        public var score: Double
        /// Which signal (rule, or rule/reason) raised the first alert, for true and false alarms.
        public var firstAlertBy: [String: Counts]
    }

    public static let alarmMilliseconds: Int64 = 300_000
    public static let freshStartMilliseconds: Int64 = 240_000

    /// Whether `directory` holds the challenge's labels (`labels.tsv`).
    public static func isChallengeSet(_ directory: URL) -> Bool {
        FileManager.default.fileExists(atPath: directory.appendingPathComponent("labels.tsv").path)
    }

    public static func evaluate(
        directory: URL,
        careProfile: CareProfile,
        profile: PersonProfile,
        withoutRhythmSignals: Bool = false
    ) throws -> Report {
        let labelsURL = directory.appendingPathComponent("labels.tsv")
        let text = String(decoding: try Data(contentsOf: labelsURL), as: UTF8.self)
        let settings = RuleEvaluation.settings(careProfile, withoutRhythmSignals: withoutRhythmSignals)
        var records: [Record] = []
        var byType: [String: Counts] = [:]
        var total = Counts()
        var firstBy: [String: Counts] = [:]
        for (number, line) in text.split(separator: "\n").enumerated() where number > 0 {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 3 else {
                throw RuleEvaluation.EvaluationError(file: labelsURL.path, message: "line \(number + 1): expected record, alarm_type, label")
            }
            let name = fields[0]
            let label: Bool
            switch fields[2] {
            case "TRUE": label = true
            case "FALSE": label = false
            default:
                throw RuleEvaluation.EvaluationError(file: labelsURL.path, message: "line \(number + 1): label must be TRUE or FALSE")
            }
            let traceURL = directory.appendingPathComponent("\(name).csv")
            let trace: HeartRateTrace
            do {
                trace = try HeartRateTrace(csv: String(decoding: try Data(contentsOf: traceURL), as: UTF8.self))
            } catch {
                throw RuleEvaluation.EvaluationError(file: traceURL.path, message: "\(error)")
            }
            let raised = RuleEvaluation.alerts(
                in: trace,
                profile: profile,
                settings: settings,
                startMilliseconds: freshStartMilliseconds,
                endMilliseconds: alarmMilliseconds
            )
            let alarmed = !raised.isEmpty
            byType[fields[1], default: Counts()].add(alarmed: alarmed, label: label)
            total.add(alarmed: alarmed, label: label)
            if let first = raised.first {
                let key = first.reason.map { "\(first.kind.rawValue)/\($0)" } ?? first.kind.rawValue
                firstBy[key, default: Counts()].add(alarmed: true, label: label)
            }
            records.append(Record(record: name, alarmType: fields[1], label: label, alarmed: alarmed, alert: raised.first))
        }
        return Report(careProfile: careProfile, records: records, byAlarmType: byType, total: total, score: total.score, firstAlertBy: firstBy)
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
