import TrackMeCore

/// Checks a run's outcome against the scenario's expectations, saying for each which one and by
/// how much it missed.
public enum ExpectationEvaluator {
    public static func evaluate(_ expectations: [Scenario.Expectation], report: SimulationReport) -> [SimulationReport.ExpectationResult] {
        let accounted = expectations.filter { $0.type == .alert }
        return expectations.map { evaluate($0, report: report, accountedBy: accounted) }
    }

    static func seconds(_ ms: Int64) -> String {
        let s = Double(ms) / 1000
        return s == s.rounded() ? "\(Int(s)) s" : "\((s * 10).rounded() / 10) s"
    }

    static func seconds(_ s: Double) -> String { seconds(Int64((s * 1000).rounded())) }

    static func evaluate(
        _ e: Scenario.Expectation,
        report: SimulationReport,
        accountedBy alertExpectations: [Scenario.Expectation]
    ) -> SimulationReport.ExpectationResult {
        let r = report.readings
        switch e.type {
        case .alert:
            let kind = e.alertKind
            let from = Int64(((e.fromSeconds ?? 0) * 1000).rounded())
            let to = Int64(((e.toSeconds ?? .infinity) * 1000).rounded(.down).clamped(Double(Int64.max / 2)))
            let name =
                "alert \(kind?.rawValue ?? "any") with first critical reading in [\(seconds(from)), \(e.toSeconds.map { seconds($0) } ?? "end")]"
            let candidates = report.alerts.filter { kind == nil || $0.kind == kind }
            if candidates.contains(where: { (from...to).contains($0.firstCriticalMilliseconds) }) {
                return .init(expectation: name, passed: true, message: "raised")
            }
            guard
                let nearest = candidates.min(by: {
                    distance($0.firstCriticalMilliseconds, from, to) < distance($1.firstCriticalMilliseconds, from, to)
                })
            else {
                return .init(expectation: name, passed: false, message: "no \(kind?.rawValue ?? "") alert was raised at all")
            }
            let d = distance(nearest.firstCriticalMilliseconds, from, to)
            let side = nearest.firstCriticalMilliseconds < from ? "early" : "late"
            return .init(
                expectation: name,
                passed: false,
                message: "nearest \(nearest.kind.rawValue) alert at \(seconds(nearest.firstCriticalMilliseconds)), \(seconds(d)) \(side)"
            )
        case .noOtherAlerts:
            let unexpected = report.alerts.filter { alert in
                !alertExpectations.contains { ex in
                    (ex.alertKind == nil || ex.alertKind == alert.kind)
                        && Double(alert.firstCriticalMilliseconds) >= (ex.fromSeconds ?? 0) * 1000
                        && Double(alert.firstCriticalMilliseconds) <= (ex.toSeconds ?? .infinity) * 1000
                }
            }
            let list = unexpected.map { "\($0.kind.rawValue) at \(seconds($0.firstCriticalMilliseconds))" }.joined(separator: ", ")
            return .init(
                expectation: "no alerts besides the expected ones",
                passed: unexpected.isEmpty,
                message: unexpected.isEmpty ? "none" : "\(unexpected.count) unexpected: \(list)"
            )
        case .noReadingsLost:
            return .init(
                expectation: "no readings lost",
                passed: r.lost == 0,
                message: r.lost == 0 ? "0 lost of \(r.stored) stored" : "\(r.lost) of \(r.stored) stored readings never reached the server"
            )
        case .noDuplicates:
            return .init(
                expectation: "no duplicates at the server",
                passed: r.duplicatesAtServer == 0,
                message: "\(r.duplicatesAtServer) readings stored more than once"
            )
        case .alertDeliveredWithin:
            let limit = e.seconds.map { Int64(($0 * 1000).rounded()) } ?? Int64.max - 1
            let name = e.seconds == nil ? "every alert delivered" : "every alert delivered within \(seconds(limit)) of being raised"
            if report.alerts.isEmpty { return .init(expectation: name, passed: false, message: "no alert was raised") }
            var worst: (SimulationReport.Alert, Int64)?
            for alert in report.alerts {
                // From the end of the countdown: the wearer's window to cancel is not dispatch delay.
                let raised = alert.raisedMilliseconds ?? alert.firstCriticalMilliseconds
                let delay = alert.deliveredMilliseconds.map { $0 - raised } ?? Int64.max
                if worst == nil || delay > (worst?.1 ?? 0) { worst = (alert, delay) }
            }
            guard let (alert, delay) = worst else { return .init(expectation: name, passed: false, message: "no alert") }
            if delay == Int64.max {
                return .init(expectation: name, passed: false, message: "\(alert.kind.rawValue) alert \(alert.alertID) was never delivered")
            }
            return .init(
                expectation: name,
                passed: delay <= limit,
                message: delay <= limit
                    ? "slowest took \(seconds(delay))" : "\(alert.kind.rawValue) took \(seconds(delay)), \(seconds(delay - limit)) over"
            )
        case .readingsAtTrueTime:
            return .init(
                expectation: "every reading filed at its true time",
                passed: r.offTrueTime == 0 && r.receivedByServer > 0,
                message: r.offTrueTime == 0
                    ? "\(r.receivedByServer) at their true time, \(r.correctedByDevice) of them corrected by the device"
                    : "\(r.offTrueTime) of \(r.receivedByServer) filed away from their true time"
            )
        case .allSynced:
            let missing = r.produced - r.receivedByServer - r.droppedByBudget
            return .init(
                expectation: "every produced reading reached the server",
                passed: missing <= 0,
                message: missing <= 0 ? "\(r.receivedByServer) of \(r.produced) at the server" : "\(missing) of \(r.produced) missing at the server"
            )
        case .alertPositionAge:
            let alerts = report.alerts.filter { e.alertKind == nil || $0.kind == e.alertKind }
            let wantUnknown = e.fromSeconds == nil && e.toSeconds == nil
            let low = Int64(((e.fromSeconds ?? 0) * 1000).rounded())
            let high = e.toSeconds.map { Int64(($0 * 1000).rounded()) } ?? Int64.max
            let name =
                wantUnknown
                ? "alert positions unknown"
                : "alert positions \(seconds(low)) to \(e.toSeconds.map { seconds($0) } ?? "any age") old"
            guard !alerts.isEmpty else { return .init(expectation: name, passed: false, message: "no alert was raised") }
            for alert in alerts {
                switch (alert.position, wantUnknown) {
                case (nil, true): continue
                case (nil, false):
                    return .init(expectation: name, passed: false, message: "\(alert.kind.rawValue) alert has no position")
                case (let p?, true):
                    return .init(
                        expectation: name,
                        passed: false,
                        message: "\(alert.kind.rawValue) alert has a position \(seconds(p.ageMilliseconds)) old"
                    )
                case (let p?, false):
                    if p.ageMilliseconds < low || p.ageMilliseconds > high {
                        return .init(
                            expectation: name,
                            passed: false,
                            message: "\(alert.kind.rawValue) alert position is \(seconds(p.ageMilliseconds)) old"
                        )
                    }
                }
            }
            return .init(expectation: name, passed: true, message: "\(alerts.count) alert(s) as expected")
        case .alertAcknowledged:
            let name = "every alert acknowledged on the device"
            guard !report.alerts.isEmpty else { return .init(expectation: name, passed: false, message: "no alert was raised") }
            let open = report.alerts.filter { $0.state != .acknowledged && $0.state != .resolved }
            return .init(
                expectation: name,
                passed: open.isEmpty,
                message: open.isEmpty
                    ? "\(report.alerts.count) acknowledged" : open.map { "\($0.kind.rawValue) is \($0.state.rawValue)" }.joined(separator: ", ")
            )
        case .wearerToldBatteryLow, .serverDeviceBattery, .lastHeartbeatSent:
            return evaluatePower(e, report: report)
        case .droppedByBudgetAtLeast:
            let want = e.count ?? 1
            return .init(
                expectation: "at least \(want) readings dropped by the disk budget",
                passed: r.droppedByBudget >= want,
                message: "\(r.droppedByBudget) dropped"
            )
        }
    }

    /// The device battery's expectations: the first time a thing happened, within the window.
    static func evaluatePower(_ e: Scenario.Expectation, report: SimulationReport) -> SimulationReport.ExpectationResult {
        let from = Int64(((e.fromSeconds ?? 0) * 1000).rounded())
        let to = e.toSeconds.map { Int64(($0 * 1000).rounded()) } ?? Int64.max / 2
        let window = "in [\(seconds(from)), \(e.toSeconds.map { seconds($0) } ?? "end")]"
        let power = report.power ?? SimulationReport.Power()
        let name: String
        let first: Int64?
        var detail = ""
        switch e.type {
        case .wearerToldBatteryLow:
            name = "the wearer told the device battery is low \(window)"
            first = power.changes.first { $0.wearerShown == "battery_low" }?.atMilliseconds
        case .serverDeviceBattery:
            let level = e.level ?? .low
            name = "the server shows the device battery \(level.rawValue), with how long, \(window)"
            let seen = power.atServer.first { $0.level == level && $0.lowForSeconds != nil }
            first = seen?.atMilliseconds
            if let seen { detail = " (\(seen.percent.map { "\($0) %, " } ?? "")low for \(seen.lowForSeconds ?? 0) s)" }
        default:
            name = "the device's last heartbeat sent on reaching critical \(window)"
            let sent = power.lastHeartbeatMilliseconds.first
            let held = power.atServer.contains { $0.level == .critical && $0.atMilliseconds >= (sent ?? .max) }
            first = held ? sent : nil
        }
        guard let first else { return .init(expectation: name, passed: false, message: "never") }
        let inWindow = (from...to).contains(first)
        return .init(
            expectation: name,
            passed: inWindow,
            message: inWindow
                ? "at \(seconds(first))\(detail)" : "at \(seconds(first)), \(seconds(distance(first, from, to))) \(first < from ? "early" : "late")"
        )
    }

    static func distance(_ t: Int64, _ from: Int64, _ to: Int64) -> Int64 {
        t < from ? from - t : (t > to ? t - to : 0)
    }
}

extension Double {
    fileprivate func clamped(_ limit: Double) -> Double { Swift.min(self, limit) }
}
