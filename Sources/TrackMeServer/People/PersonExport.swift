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

    /// One table for everything: a `record` column says which kind each row is.
    var csv: String {
        var lines = ["record,at_ms,at,device_id,bpm,lat,lon,alert_id,alert_kind,alert_state,outcome,min,mean,max,resting_estimate,seconds_out_of_range"]
        func row(_ values: [String]) { lines.append(values.map(Downloads.csvField).joined(separator: ",")) }
        for s in heartRate { row(["heart_rate", "\(s.atMilliseconds)", Downloads.iso(s.atMilliseconds), s.deviceID, "\(s.bpm)", "", "", "", "", "", "", "", "", "", "", ""]) }
        for p in positions {
            row(["position", "\(p.atMilliseconds)", Downloads.iso(p.atMilliseconds), p.deviceID, "", "\(p.latitude)", "\(p.longitude)", "", "", "", "", "", "", "", "", ""])
        }
        for d in statistics {
            row([
                "day", "\(d.dayMilliseconds)", Downloads.iso(d.dayMilliseconds), "", "", "", "", "", "", "", "", d.minimum.map(String.init) ?? "",
                d.mean.map { "\($0)" } ?? "", d.maximum.map(String.init) ?? "", d.restingEstimate.map(String.init) ?? "", "\(d.secondsOutOfRange)",
            ])
        }
        for a in alerts {
            row([
                "alert", "\(a.createdMilliseconds)", Downloads.iso(a.createdMilliseconds), a.deviceID, "", a.latitude.map { "\($0)" } ?? "",
                a.longitude.map { "\($0)" } ?? "", a.alertID, a.kind?.rawValue ?? "", a.state, a.outcome?.rawValue ?? "", "", "", "", "", "",
            ])
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// GPX 1.1: one track per device, its fixes in time order.
    var gpx: String {
        let tracks = devices.compactMap { device -> GPXWriter.Track? in
            let points = positions.filter { $0.deviceID == device }.map { ($0.atMilliseconds, $0.latitude, $0.longitude) }
            return points.isEmpty ? nil : GPXWriter.Track(name: device, points: points)
        }
        return GPXWriter.document(name: displayName, tracks: tracks)
    }
}
