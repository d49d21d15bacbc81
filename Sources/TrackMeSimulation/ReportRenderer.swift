import Foundation
import TrackMeCore

/// Draws a run as SVG (heart rate over time with the thresholds, alerts as markers, fault windows
/// shaded) and as a one-screen text summary, so a person sees at a glance what happened.
public struct ReportRenderer: Sendable {
    public var report: SimulationReport
    /// Heart rate as the agent received it: (virtual ms, bpm).
    public var heartRate: [(Int64, Int)]
    public var minimumHeartRate: Int
    public var maximumHeartRate: Int
    /// Trace time of the run's start: report times are trace times, the plot starts at zero.
    public var originMilliseconds: Int64

    public init(report: SimulationReport, heartRate: [(Int64, Int)], minimumHeartRate: Int, maximumHeartRate: Int, originMilliseconds: Int64 = 0) {
        self.report = report
        self.originMilliseconds = originMilliseconds
        self.heartRate = heartRate
        self.minimumHeartRate = minimumHeartRate
        self.maximumHeartRate = maximumHeartRate
    }

    static func color(for fault: Scenario.Fault.Kind) -> String {
        switch fault {
        case .networkDown: "#9ecae1"
        case .serverErrors: "#fdae6b"
        case .strapLinkDrop, .strapSilent: "#c7c7c7"
        case .contactLoss: "#fdd0a2"
        case .flatline: "#fb6a4a"
        case .gpsdStopped: "#c7e9c0"
        case .wallClockUnset: "#fee391"
        case .agentCrash: "#de2d26"
        case .manualSOS, .cancel, .acknowledge: "#756bb1"
        }
    }

    public func svg(width: Int = 1200, height: Int = 420) -> String {
        let left = 50.0
        let right = Double(width) - 20
        let top = 30.0
        let bottom = Double(height) - 40
        let duration = max(1, Double(report.virtualDurationMilliseconds))
        let maxBPM = max(Double(maximumHeartRate) + 20, Double(heartRate.map(\.1).max() ?? 0) + 10)
        func x(_ ms: Int64) -> Double { left + (right - left) * Double(ms) / duration }
        func y(_ bpm: Double) -> Double { bottom - (bottom - top) * bpm / maxBPM }
        func f(_ v: Double) -> String { String(Int(v.rounded())) }

        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(f(left))" y="18" font-size="14">\(escape(report.scenario)): \(report.passed ? "all expectations held" : "EXPECTATIONS FAILED")</text>

            """
        for fault in report.faults {
            let start = Int64(fault.fromSeconds * 1000) - originMilliseconds
            let end = Int64((fault.toSeconds ?? fault.fromSeconds) * 1000) - originMilliseconds
            let w = max(2, x(end) - x(start))
            out +=
                "<rect x=\"\(f(x(start)))\" y=\"\(f(top))\" width=\"\(f(w))\" height=\"\(f(bottom - top))\" fill=\"\(Self.color(for: fault.type))\" opacity=\"0.5\"><title>\(fault.type.rawValue)</title></rect>\n"
            out += "<text x=\"\(f(x(start) + 2))\" y=\"\(f(top + 12))\" fill=\"#555\">\(fault.type.rawValue)</text>\n"
        }
        for (label, bpm) in [("max \(maximumHeartRate)", maximumHeartRate), ("min \(minimumHeartRate)", minimumHeartRate)] {
            out +=
                "<line x1=\"\(f(left))\" x2=\"\(f(right))\" y1=\"\(f(y(Double(bpm))))\" y2=\"\(f(y(Double(bpm))))\" stroke=\"#e6550d\" stroke-dasharray=\"6 4\"/>\n"
            out += "<text x=\"\(f(right - 60))\" y=\"\(f(y(Double(bpm)) - 3))\" fill=\"#e6550d\">\(label)</text>\n"
        }
        // Thin the polyline to at most two points per pixel column so a day stays a small file.
        let stride = max(1, heartRate.count / (2 * Int(right - left)))
        var points: [String] = []
        var index = 0
        while index < heartRate.count {
            let (t, bpm) = heartRate[index]
            points.append("\(f(x(t))),\(f(y(Double(bpm))))")
            index += stride
        }
        out += "<polyline fill=\"none\" stroke=\"#3182bd\" stroke-width=\"1\" points=\"\(points.joined(separator: " "))\"/>\n"
        for alert in report.alerts {
            let ax = x(alert.firstCriticalMilliseconds - originMilliseconds)
            out += "<line x1=\"\(f(ax))\" x2=\"\(f(ax))\" y1=\"\(f(top))\" y2=\"\(f(bottom))\" stroke=\"#de2d26\" stroke-width=\"2\"/>\n"
            out +=
                "<circle cx=\"\(f(ax))\" cy=\"\(f(top + 4))\" r=\"5\" fill=\"#de2d26\"><title>\(alert.kind.rawValue) \(alert.state.rawValue)</title></circle>\n"
            out += "<text x=\"\(f(ax + 6))\" y=\"\(f(top + 26))\" fill=\"#de2d26\">\(alert.kind.rawValue)</text>\n"
        }
        // Axes: bpm every 20, time in ten steps.
        out += "<line x1=\"\(f(left))\" x2=\"\(f(right))\" y1=\"\(f(bottom))\" y2=\"\(f(bottom))\" stroke=\"black\"/>\n"
        out += "<line x1=\"\(f(left))\" x2=\"\(f(left))\" y1=\"\(f(top))\" y2=\"\(f(bottom))\" stroke=\"black\"/>\n"
        var bpm = 0.0
        while bpm <= maxBPM {
            out += "<text x=\"\(f(left - 30))\" y=\"\(f(y(bpm) + 4))\">\(Int(bpm))</text>\n"
            bpm += 20
        }
        for step in 0...10 {
            let ms = Int64(Double(step) / 10 * duration)
            out += "<text x=\"\(f(x(ms) - 10))\" y=\"\(f(bottom + 16))\">\(ExpectationEvaluator.seconds(ms + originMilliseconds))</text>\n"
        }
        out +=
            "<text x=\"\(f(left))\" y=\"\(f(bottom + 32))\">heart rate (bpm) over virtual time; red: alerts at their first critical reading; shaded: faults</text>\n"
        out += "</svg>\n"
        return out
    }

    public func summary() -> String {
        let r = report.readings
        var lines = [
            "scenario \(report.scenario) (\(report.mode), seed \(report.seed)): \(ExpectationEvaluator.seconds(report.virtualDurationMilliseconds)) of trace in \(Int(report.wallMilliseconds)) ms",
            "readings: produced \(r.produced), stored \(r.stored), synced \(r.synced), at server \(r.receivedByServer), duplicates \(r.duplicatesAtServer), dropped by budget \(r.droppedByBudget), lost \(r.lost), uncommitted at crash \(r.uncommittedAtCrash), off their true time \(r.offTrueTime), corrected by the device \(r.correctedByDevice)",
        ]
        if report.alerts.isEmpty { lines.append("alerts: none") }
        for a in report.alerts {
            let position = a.position.map { "\($0.lat), \($0.lon) (\(ExpectationEvaluator.seconds($0.ageMilliseconds)) old)" } ?? "unknown"
            let latency = a.decisionLatencyMilliseconds.map { String(format3($0)) + " ms" } ?? "-"
            let delivered = a.deliveredMilliseconds.map { ExpectationEvaluator.seconds($0) } ?? "never"
            // Both ways the seeds count it: from the first critical observation, and from the
            // reading that completed the rule (the raise).
            let timing =
                a.deliveredMilliseconds.map { at in
                    let fromFirst = ExpectationEvaluator.seconds(at - a.firstCriticalMilliseconds)
                    let fromRule = a.raisedMilliseconds.map { ExpectationEvaluator.seconds(at - $0) } ?? "-"
                    return " (\(fromFirst) after the first critical reading, \(fromRule) after the reading that completed the rule)"
                } ?? ""
            lines.append(
                "alert \(a.kind.rawValue): first critical \(ExpectationEvaluator.seconds(a.firstCriticalMilliseconds)), raised \(a.raisedMilliseconds.map { ExpectationEvaluator.seconds($0) } ?? "-"), decision \(latency), delivered \(delivered)\(timing), state \(a.state.rawValue), position \(position)"
            )
        }
        if let power = report.power { lines += Self.powerLines(power) }
        for e in report.expectations {
            lines.append("\(e.passed ? "PASS" : "FAIL") \(e.expectation): \(e.message)")
        }
        lines.append(
            report.passed
                ? "all \(report.expectations.count) expectations held"
                : "\(report.expectations.filter { !$0.passed }.count) of \(report.expectations.count) expectations FAILED"
        )
        return lines.joined(separator: "\n")
    }

    /// The device battery: each change on the device (its level, what the wearer is shown), the
    /// last heartbeat, and each change the server's protection state showed.
    static func powerLines(_ power: SimulationReport.Power) -> [String] {
        var lines: [String] = []
        for c in power.changes {
            lines.append(
                "device battery at \(ExpectationEvaluator.seconds(c.atMilliseconds)): \(c.percent.map { "\($0) %" } ?? "-") \(c.source?.rawValue ?? "no supply"), level \(c.level.rawValue), wearer shown \(c.wearerShown)"
            )
        }
        for at in power.lastHeartbeatMilliseconds {
            lines.append("device battery critical: last heartbeat sent alone at \(ExpectationEvaluator.seconds(at))")
        }
        for s in power.atServer {
            let low = s.lowForSeconds.map { ", low for \(ExpectationEvaluator.seconds($0 * 1000))" } ?? ""
            lines.append(
                "server at \(ExpectationEvaluator.seconds(s.atMilliseconds)): device battery \(s.percent.map { "\($0) %" } ?? "-") \(s.source?.rawValue ?? "-"), \(s.level?.rawValue ?? "fine")\(low)"
            )
        }
        return lines
    }

    func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
    }
}

func format3(_ value: Double) -> String {
    let scaled = (value * 1000).rounded() / 1000
    return "\(scaled)"
}
