import Foundation
import TrackMeCore

/// One step of an alert's life as the console lists it.
struct TimelineEntry: Codable, Hashable, Sendable {
    /// Wall time in ms: the device's for `first_critical` and `raised` when its clock was
    /// trusted, otherwise (and for every other event) the server's.
    var atMilliseconds: Int64
    /// `first_critical`, `raised`, `delivered`, `kind_changed`, `acknowledged`, `note`,
    /// `cancelled`, `closed_on_device`, `resolved`, and for each run of the contact notifier
    /// `contact_notifying` (running), `contact_notified` (exited 0) or `contact_failed`.
    var event: String
    var detail: String?
    /// Set when the time is not the device's own clock: the device's clock was not set (no RTC,
    /// no NTP yet), so the entry is placed by the device's monotonic time before the server's
    /// receipt.
    var timeNote: String? = nil

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case event, detail
        case timeNote = "time_note"
    }
}

/// Builds the timeline and the track of an alert from what the store keeps. Pure.
enum AlertTimeline {
    /// The kind, and the signal that fired where the rule names one: `lethal_rhythm (erratic)`.
    static func kindText(_ alert: AlertRecord) -> String {
        alert.reason.map { "\(alert.kind.rawValue) (\($0))" } ?? alert.kind.rawValue
    }

    static func build(
        row: AlertDeskRow,
        updates: [AlertUpdateRow],
        notes: [AlertNote],
        attempts: [ContactAttempt] = [],
        maxAttempts: Int = 1
    ) -> [TimelineEntry] {
        var entries: [TimelineEntry] = []
        let decoded = updates.compactMap { update in
            (try? WireCodec.decode(AlertUpdate.self, from: Data(update.body.utf8))).map { (update, $0) }
        }
        if let (received, first) = decoded.first {
            let alert = first.alert
            let critical = placed(alert.firstCritical, sent: first.sent, receivedMilliseconds: received.receivedMilliseconds)
            entries.append(TimelineEntry(atMilliseconds: critical.at, event: "first_critical", detail: Self.kindText(alert), timeNote: critical.note))
            if let raised = alert.raised {
                let at = placed(raised, sent: first.sent, receivedMilliseconds: received.receivedMilliseconds)
                entries.append(TimelineEntry(atMilliseconds: at.at, event: "raised", detail: Self.kindText(alert), timeNote: at.note))
            }
        }
        if let first = decoded.first {
            entries.append(TimelineEntry(atMilliseconds: first.0.receivedMilliseconds, event: "delivered", detail: nil))
        }
        var kind = decoded.first?.1.alert.kind
        for (row, update) in decoded {
            if let previous = kind, update.alert.kind != previous {
                entries.append(
                    TimelineEntry(
                        atMilliseconds: row.receivedMilliseconds,
                        event: "kind_changed",
                        detail: "\(previous.rawValue) → \(Self.kindText(update.alert))"
                    )
                )
            }
            kind = update.alert.kind
            switch update.type {
            case .raised, .position, .kindChanged:
                break
            case .cancelled:
                entries.append(
                    TimelineEntry(atMilliseconds: row.receivedMilliseconds, event: "cancelled", detail: update.alert.cancelReason?.rawValue)
                )
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
        let person: PersonProfile? = try? StoreJSON.decode(row.person)
        for attempt in attempts {
            entries.append(Self.entry(attempt, contacts: person?.contacts ?? [], maxAttempts: maxAttempts))
        }
        // Stable: equal times keep the order above (first critical before raised before delivered).
        return entries.enumerated().sorted { ($0.element.atMilliseconds, $0.offset) < ($1.element.atMilliseconds, $1.offset) }.map(\.element)
    }

    /// Where a device time goes on the timeline: its wall time when the device trusted its clock;
    /// otherwise the server's receipt of the first update less the device's monotonic time
    /// between then and sending (same boot), or the receipt itself, with a note saying so. Never
    /// an unset clock's 1970.
    static func placed(_ time: ReadingTimestamp, sent: ReadingTimestamp, receivedMilliseconds: Int64) -> (at: Int64, note: String?) {
        if time.wallClockTrusted, let wall = time.wallClockMilliseconds { return (wall, nil) }
        guard time.bootID == sent.bootID, sent.monotonicNanoseconds >= time.monotonicNanoseconds else {
            return (receivedMilliseconds, "device clock not set: shown at the server's receipt")
        }
        let before = Int64((sent.monotonicNanoseconds - time.monotonicNanoseconds) / 1_000_000)
        let seconds = String(format: "%.1f", Double(before) / 1000)
        return (receivedMilliseconds - before, "device clock not set: \(seconds) s before the server's receipt, by the device's uptime")
    }

    /// One run of the contact notifier, at its end (or start while it runs).
    static func entry(_ attempt: ContactAttempt, contacts: [EmergencyContact], maxAttempts: Int) -> TimelineEntry {
        let name = contacts.indices.contains(attempt.contactIndex) ? contacts[attempt.contactIndex].name : "contact \(attempt.contactIndex + 1)"
        let why: String
        switch attempt.purpose {
        case .escalation: why = ""
        case .raised: why = " (alert raised)"
        case .closed: why = " (alert closed)"
        case .device:
            let path = attempt.detail.flatMap(ContactTold.Path.init(rawValue:)).map(Self.pathText) ?? "its own means"
            return TimelineEntry(
                atMilliseconds: attempt.finishedMilliseconds ?? attempt.startedMilliseconds,
                event: "contact_notified",
                detail: "\(name) (told by the device through \(path), before the alert reached the server)"
            )
        }
        var detail = "\(name)\(why), attempt \(attempt.attempt) of \(max(maxAttempts, attempt.attempt))"
        guard let result = attempt.result else {
            return TimelineEntry(atMilliseconds: attempt.startedMilliseconds, event: "contact_notifying", detail: detail + ": running")
        }
        if let text = attempt.detail { detail += ": \(text)" }
        if result != .told, attempt.attempt >= maxAttempts { detail += "; no more attempts" }
        return TimelineEntry(
            atMilliseconds: attempt.finishedMilliseconds ?? attempt.startedMilliseconds,
            event: result == .told ? "contact_notified" : "contact_failed",
            detail: detail
        )
    }

    static func pathText(_ path: ContactTold.Path) -> String {
        switch path {
        case .localFallback: "its local fallback"
        }
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
