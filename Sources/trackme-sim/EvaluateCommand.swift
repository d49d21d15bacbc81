import ArgumentParser
import Foundation
import TrackMeCore
import TrackMeSimulation

/// `trackme-sim evaluate DIR [--profile wearable|bedside] [--json]`: the SOS rules' quality on
/// recordings (simulations/README.md, "Judging the SOS rules").
struct EvaluateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Run the SOS rules over annotated traces (or the CinC 2015 alarm set) and score them.",
        discussion: """
            DIR holds traces (t_ms,bpm,rr_ms,contact) each with <stem>.episodes.json beside it, or the
            PhysioNet/CinC Challenge 2015 set as strap traces with labels.tsv. Prints per trace: alerts,
            detection delay from onset, misses, false alarms; in total: sensitivity, false alarms per 24 h of
            forbidden (normal) time. For the challenge set: the challenge's score per alarm type.
            """
    )

    @Argument(help: "Folder of traces.") var directory: String
    @Option(help: "Folder with the annotation files, when they are not beside the traces.") var annotations: String?
    @Option(help: "Care profile the rules run with: wearable or bedside (default: each annotation's own, else wearable).")
    var profile: String?
    @Option(help: "Age of the person where an annotation names no profile.") var age = 60
    @Flag(help: "Run without the rhythm signals (lethal_rhythm, slow_beats and fast_beats): the rules before them, as a baseline in the same run.")
    var withoutRhythmSignals = false
    @Flag(help: "Print one JSON object.") var json = false

    func run() throws {
        let care: CareProfile?
        if let profile {
            guard let value = CareProfile(rawValue: profile) else {
                throw ValidationError("unknown care profile \(profile); known: \(CareProfile.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            care = value
        } else {
            care = nil
        }
        let folder = URL(fileURLWithPath: directory)
        let person = PersonProfile(name: "evaluation", age: age)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        if ChallengeEvaluation.isChallengeSet(folder) {
            let report = try ChallengeEvaluation.evaluate(
                directory: folder,
                careProfile: care ?? .wearable,
                profile: person,
                withoutRhythmSignals: withoutRhythmSignals
            )
            if json {
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                print(Self.render(report))
            }
            return
        }
        let report = try RuleEvaluation.evaluate(
            directory: folder,
            annotations: annotations.map { URL(fileURLWithPath: $0) },
            careProfile: care,
            defaultProfile: person,
            withoutRhythmSignals: withoutRhythmSignals
        )
        guard !report.traces.isEmpty else {
            throw ValidationError("no trace in \(directory) has an annotation file (<stem>.episodes.json) and there is no labels.tsv")
        }
        if json {
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            print(Self.render(report))
        }
    }

    static func render(_ report: RuleEvaluation.Report) -> String {
        var lines = [
            "| trace | profile | hours | alerts raised | required episodes | delay from onset (s) | false alarms |", "|---|---|---|---|---|---|---|",
        ]
        for trace in report.traces {
            let alerts =
                trace.alerts.isEmpty
                ? "none"
                : trace.alerts.map { alert in
                    "\(alert.kind.rawValue)\(alert.reason.map { " (\($0))" } ?? "") at \(format(alert.raisedSeconds)) s"
                }.joined(separator: "; ")
            let required = trace.episodes.filter { $0.alert == .required }
            let found = required.filter { $0.detected == true }.count
            let delays = required.map { episode -> String in
                if episode.alreadyOpen == true { return "open" }
                guard let delay = episode.delaySeconds else { return "missed" }
                return episode.detected == true ? format(delay) : "\(format(delay)) (late)"
            }
            let falseAlarms = trace.episodes.compactMap(\.falseAlarms).reduce(0, +)
            lines.append(
                "| \(trace.trace) | \(trace.careProfile.rawValue) | \(format(trace.hours)) | \(alerts) | "
                    + "\(required.isEmpty ? "-" : "\(found) of \(required.count)") | \(delays.isEmpty ? "-" : delays.joined(separator: ", ")) | "
                    + "\(falseAlarms) |"
            )
        }
        let t = report.totals
        lines.append("")
        lines.append(
            "total: \(t.traces) traces, \(format(t.hours)) h; required episodes \(t.requiredEpisodes), detected \(t.detected), missed \(t.missed)"
                + (t.sensitivity.map { ", sensitivity \(format($0 * 100)) %" } ?? "")
                + (t.meanDelaySeconds.map { ", delay mean \(format($0)) s" } ?? "") + (t.maxDelaySeconds.map { ", max \(format($0)) s" } ?? "")
        )
        lines.append(
            "false alarms: \(t.falseAlarms) in \(format(t.forbiddenHours)) h where alerts are forbidden"
                + (t.falseAlarmsPer24Hours.map { " = \(format($0)) per 24 h" } ?? "")
        )
        lines.append(
            "rules alone: \(format(t.hours)) h of trace in \(format(t.rulesWallSeconds)) s"
                + (t.traceHoursPerWallSecond.map { " (\(Int($0)) h of trace per second)" } ?? "")
        )
        return lines.joined(separator: "\n")
    }

    static func render(_ report: ChallengeEvaluation.Report) -> String {
        var lines = [
            "PhysioNet/CinC Challenge 2015, read as a wearable: fresh start at 240 s, alarmed if an alert is raised by 300 s; profile \(report.careProfile.rawValue)",
            "", "| alarm type | TP | FP | TN | FN | TPR % | TNR % | score |", "|---|---|---|---|---|---|---|---|",
        ]
        func row(_ name: String, _ c: ChallengeEvaluation.Counts) -> String {
            "| \(name) | \(c.truePositives) | \(c.falsePositives) | \(c.trueNegatives) | \(c.falseNegatives) | "
                + "\(c.truePositiveRate.map(format) ?? "-") | \(c.trueNegativeRate.map(format) ?? "-") | \(format(c.score)) |"
        }
        for (name, counts) in report.byAlarmType.sorted(by: { $0.key < $1.key }) { lines.append(row(name, counts)) }
        lines.append(row("**all**", report.total))
        lines.append("")
        lines.append("first alert raised by (true alarms / false alarms):")
        for (name, counts) in report.firstAlertBy.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(name): \(counts.truePositives) / \(counts.falsePositives)")
        }
        lines.append("")
        lines.append("score: \(format(report.score))")
        return lines.joined(separator: "\n")
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
