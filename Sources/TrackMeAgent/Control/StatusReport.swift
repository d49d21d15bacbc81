import TrackMeCore

/// Renders an `AgentStatus` as the table `trackme-agent status` prints for people.
public enum StatusReport {
    public static func render(_ status: AgentStatus) -> String {
        var rows: [(String, String, String)] = []
        rows.append(("agent", status.monitoringPaused ? "PAUSED" : "ok", "device \(status.deviceID), up \(duration(seconds: status.uptimeSeconds))"))

        if let profile = status.profile, profile.profile != .wearer {
            // A taxi shows its availability first; a runner its run.
            switch profile.profile {
            case .wearer:
                break
            case .taxi:
                rows.append(
                    ("profile", "taxi", "state \(profile.taxi?.rawValue ?? "unknown"); position every 30 s and on a state change; manual SOS only")
                )
            case .runner:
                let run =
                    profile.run.map { run in
                        "run \(run.code), \(run.showToSpectators ? "shown to spectators" : "not shown to spectators"), "
                            + (run.shareHealth ? "heart rate shared with the organiser, " : "")
                            + (run.checkedInMilliseconds == nil ? "not checked in" : "checked in")
                    } ?? "no run joined (trackme-agent run-join CODE)"
                rows.append(("profile", "runner", run + "; position at 1 Hz"))
            }
        }

        var strapDetail: [String] = []
        if let address = status.strap.address { strapDetail.append(address) }
        if let battery = status.strap.batteryPercent { strapDetail.append("battery \(battery)%" + (status.strap.batteryLow == true ? " LOW" : "")) }
        if let location = status.strap.bodyLocation { strapDetail.append("on the \(location.split(separator: "_").joined(separator: " "))") }
        rows.append(("strap", status.strap.link.rawValue, strapDetail.joined(separator: ", ")))

        if let hr = status.strap.lastHeartRate {
            rows.append(("heart rate", "\(hr.bpm) bpm", "contact \(hr.contact.rawValue), \(age(hr.ageMilliseconds))"))
        } else {
            rows.append(("heart rate", "none", "no reading yet"))
        }

        rows.append(("gpsd", status.gpsd.connection.rawValue, ""))
        if let fix = status.gpsd.lastFix {
            var detail: [String] = []
            if let lat = fix.latitude, let lon = fix.longitude { detail.append(String(format6(lat)) + ", " + format6(lon)) }
            if let eph = fix.horizontalError { detail.append("±\(Int(eph.rounded())) m") }
            if let ms = status.gpsd.fixAgeMilliseconds { detail.append(age(ms)) }
            let mode: String
            switch fix.mode {
            case .none: mode = "no fix"
            case .twoDimensional: mode = "2D fix"
            case .threeDimensional: mode = "3D fix"
            }
            rows.append(("position", mode, detail.joined(separator: ", ")))
        } else {
            rows.append(("position", "none", "no fix yet"))
        }

        let percent = status.store.budgetBytes > 0 ? " (\(status.store.bytes * 100 / status.store.budgetBytes)% of budget)" : ""
        var storeDetail = "\(status.store.bytes) bytes\(percent)"
        if status.store.state == "memory_only" { storeDetail += "; MEMORY ONLY, nothing survives a restart" }
        if let problem = status.store.problem { storeDetail += "; \(problem)" }
        if let quarantined = status.store.quarantined, quarantined > 0 { storeDetail += "; \(quarantined) damaged readings quarantined" }
        if let lost = status.store.unsalvageable, lost > 0 { storeDetail += "; LOST \(lost) unsent rows or runs beyond salvage" }
        if let keyID = status.store.keyID { storeDetail += "; encrypted (key \(keyID))" }
        rows.append(("store", "\(status.store.depth) pending", storeDetail))

        if let ms = status.sync.lastSuccessAgeMilliseconds {
            rows.append(("sync", "ok", "last success \(age(ms))" + (status.sync.lastError.map { "; last error: \($0)" } ?? "")))
        } else {
            rows.append(("sync", status.sync.lastError == nil ? "never" : "failing", status.sync.lastError ?? "no batch acknowledged yet"))
        }

        if let alert = status.alert {
            var detail = "\(alert.kind.rawValue) \(alert.id)"
            if let remaining = alert.countdownRemainingSeconds { detail += ", \(Int(remaining.rounded(.up))) s to cancel" }
            rows.append(("alert", alert.state.rawValue.uppercased(), detail))
        } else {
            rows.append(("alert", "none", ""))
        }

        if let limits = status.limits {
            rows.append(("limits", "\(limits.minimumBPM)-\(limits.maximumBPM) bpm", limits.why))
        }
        if let feedback = status.feedback {
            rows.append(("feedback", feedback.rawValue, ""))
        }
        if let care = status.care {
            let source = care.version.map { "server v\($0)" } ?? "config file"
            let detail = care.conflicts.isEmpty ? "" : "LOCAL OVERRIDE differs from the server: " + care.conflicts.joined(separator: ", ")
            rows.append(("care", source, detail))
            let service = care.automatedSOS
            rows.append(
                (
                    "automated sos", service.active ? "on" : "OFF",
                    service.active
                        ? "provided by \(service.provider)"
                        : "rule alerts reach no dispatcher and the device calls nobody for them; the SOS button does"
                )
            )
            if care.discreetSOS {
                rows.append(("discreet sos", "on", "the device shows and sounds nothing of any alert (care setting)"))
            }
        }

        let first = rows.map(\.0.count).max() ?? 0
        let second = rows.map(\.1.count).max() ?? 0
        return rows.map { row in
            let line = pad(row.0, first) + "  " + pad(row.1, second) + "  " + row.2
            return String(line.reversed().drop { $0 == " " }.reversed())
        }.joined(separator: "\n")
    }

    static func age(_ milliseconds: Int64) -> String {
        if milliseconds < 1000 { return "\(milliseconds) ms ago" }
        return duration(seconds: Double(milliseconds) / 1000) + " ago"
    }

    static func duration(seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        if total < 60 { return "\(total) s" }
        if total < 3600 { return "\(total / 60) min \(total % 60) s" }
        if total < 86_400 { return "\(total / 3600) h \(total % 3600 / 60) min" }
        return "\(total / 86_400) d \(total % 86_400 / 3600) h"
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }

    private static func format6(_ value: Double) -> String {
        let scaled = (value * 1_000_000).rounded() / 1_000_000
        return "\(scaled)"
    }
}
