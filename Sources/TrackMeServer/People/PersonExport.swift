import Foundation
import TrackMeCore

/// Everything a person downloads about themselves, and its CSV and GPX forms. Pure.
struct PersonExport: Codable, Sendable {
    var personID: String
    var displayName: String
    var fromMilliseconds: Int64?
    var toMilliseconds: Int64?
    var devices: [String]
    var heartRate: [HeartRateSample]
    var positions: [PositionSample]
    var statistics: [DailyStatistics]
    var alerts: [PersonAlert]
    var truncated: Bool

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case displayName = "display_name"
        case fromMilliseconds = "from_ms"
        case toMilliseconds = "to_ms"
        case devices
        case heartRate = "heart_rate"
        case positions, statistics, alerts, truncated
    }

    static func iso(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// One CSV field: quoted when it holds a comma, quote or line break; a leading `= + - @`
    /// is prefixed with `'` so that a spreadsheet does not run it as a formula.
    static func field(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@".contains(first), Double(text) == nil { text = "'" + text }
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// One table for everything: a `record` column says which kind each row is.
    var csv: String {
        var lines = ["record,at_ms,at,device_id,bpm,lat,lon,alert_id,alert_kind,alert_state,outcome,min,mean,max,resting_estimate,seconds_out_of_range"]
        func row(_ values: [String]) { lines.append(values.map(Self.field).joined(separator: ",")) }
        for s in heartRate { row(["heart_rate", "\(s.atMilliseconds)", Self.iso(s.atMilliseconds), s.deviceID, "\(s.bpm)", "", "", "", "", "", "", "", "", "", "", ""]) }
        for p in positions {
            row(["position", "\(p.atMilliseconds)", Self.iso(p.atMilliseconds), p.deviceID, "", "\(p.latitude)", "\(p.longitude)", "", "", "", "", "", "", "", "", ""])
        }
        for d in statistics {
            row([
                "day", "\(d.dayMilliseconds)", Self.iso(d.dayMilliseconds), "", "", "", "", "", "", "", "", d.minimum.map(String.init) ?? "",
                d.mean.map { "\($0)" } ?? "", d.maximum.map(String.init) ?? "", d.restingEstimate.map(String.init) ?? "", "\(d.secondsOutOfRange)",
            ])
        }
        for a in alerts {
            row([
                "alert", "\(a.createdMilliseconds)", Self.iso(a.createdMilliseconds), a.deviceID, "", a.latitude.map { "\($0)" } ?? "",
                a.longitude.map { "\($0)" } ?? "", a.alertID, a.kind?.rawValue ?? "", a.state, a.outcome?.rawValue ?? "", "", "", "", "", "",
            ])
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func xml(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&apos;")
    }

    /// GPX 1.1: one track per device, its fixes in time order.
    var gpx: String {
        var text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="trackme-server" xmlns="http://www.topografix.com/GPX/1/1">
            <metadata><name>\(Self.xml(displayName))</name></metadata>

            """
        for device in devices {
            let points = positions.filter { $0.deviceID == device }
            guard !points.isEmpty else { continue }
            text += "<trk><name>\(Self.xml(device))</name><trkseg>\n"
            for p in points {
                text += "<trkpt lat=\"\(p.latitude)\" lon=\"\(p.longitude)\"><time>\(Self.iso(p.atMilliseconds))</time></trkpt>\n"
            }
            text += "</trkseg></trk>\n"
        }
        return text + "</gpx>\n"
    }
}
