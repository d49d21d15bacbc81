import Foundation
import TrackMeCore

/// One step of an alert's life as the console lists it.
struct TimelineEntry: Codable, Hashable, Sendable {
    /// Wall time in ms (the device's for `first_critical` and `raised`, the server's otherwise).
    var atMilliseconds: Int64
    /// `first_critical`, `raised`, `delivered`, `kind_changed`, `acknowledged`, `note`,
    /// `cancelled`, `closed_on_device`, `resolved`.
    var event: String
    var detail: String?

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case event, detail
    }
}

/// Builds the timeline and the track of an alert from what the store keeps. Pure.
enum AlertTimeline {
    /// The kind, and the signal that fired where the rule names one: `lethal_rhythm (erratic)`.
    static func kindText(_ alert: AlertRecord) -> String {
        alert.reason.map { "\(alert.kind.rawValue) (\($0))" } ?? alert.kind.rawValue
    }

    static func build(row: AlertDeskRow, updates: [AlertUpdateRow], notes: [AlertNote]) -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let decoded = updates.compactMap { update in
            (try? WireCodec.decode(AlertUpdate.self, from: Data(update.body.utf8))).map { (update, $0) }
        }
        if let first = decoded.first?.1.alert {
            if let wall = first.firstCritical.wallClockMilliseconds {
                entries.append(TimelineEntry(atMilliseconds: wall, event: "first_critical", detail: Self.kindText(first)))
            }
            if let wall = first.raised?.wallClockMilliseconds {
                entries.append(TimelineEntry(atMilliseconds: wall, event: "raised", detail: Self.kindText(first)))
            }
        }
        if let first = decoded.first {
            entries.append(TimelineEntry(atMilliseconds: first.0.receivedMilliseconds, event: "delivered", detail: nil))
        }
        var kind = decoded.first?.1.alert.kind
        for (row, update) in decoded {
            if let previous = kind, update.alert.kind != previous {
                entries.append(
                    TimelineEntry(atMilliseconds: row.receivedMilliseconds, event: "kind_changed", detail: "\(previous.rawValue) → \(Self.kindText(update.alert))"))
            }
            kind = update.alert.kind
            switch update.type {
            case .raised, .position, .kindChanged:
                break
            case .cancelled:
                entries.append(TimelineEntry(atMilliseconds: row.receivedMilliseconds, event: "cancelled", detail: update.alert.cancelReason?.rawValue))
            case .resolved:
                entries.append(TimelineEntry(atMilliseconds: row.receivedMilliseconds, event: "closed_on_device", detail: nil))
            }
        }
        if let at = row.acknowledgedMilliseconds {
            entries.append(TimelineEntry(atMilliseconds: at, event: "acknowledged", detail: row.acknowledgedBy))
        }
        for note in notes {
            entries.append(TimelineEntry(atMilliseconds: note.createdMilliseconds, event: "note", detail: note.author))
        }
        if let at = row.resolvedMilliseconds, let outcome = row.outcome {
            entries.append(TimelineEntry(atMilliseconds: at, event: "resolved", detail: outcome.rawValue))
        }
        // Stable: equal times keep the order above (first critical before raised before delivered).
        return entries.enumerated().sorted { ($0.element.atMilliseconds, $0.offset) < ($1.element.atMilliseconds, $1.offset) }.map(\.element)
    }

    /// The positions the alert's updates carried (1 Hz while open), oldest first, repeats dropped.
    static func track(_ updates: [AlertUpdateRow]) -> [TrackPoint] {
        var points: [TrackPoint] = []
        for row in updates {
            guard let update = try? WireCodec.decode(AlertUpdate.self, from: Data(row.body.utf8)),
                let fix = update.alert.position?.fix, let latitude = fix.latitude, let longitude = fix.longitude
            else { continue }
            if let last = points.last, last.latitude == latitude, last.longitude == longitude { continue }
            points.append(TrackPoint(atMilliseconds: row.receivedMilliseconds, latitude: latitude, longitude: longitude))
        }
        return points
    }
}
