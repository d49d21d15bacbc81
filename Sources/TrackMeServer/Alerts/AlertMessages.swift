import Foundation
import TrackMeCore

struct ResolveRequest: Codable, Sendable {
    var outcome: AlertOutcome
}

struct ResolveResponse: Codable, Sendable {
    var alertID: String
    var deviceID: String
    var outcome: AlertOutcome
    /// It was closed before (resolved by someone, or cancelled on the device); nothing changed.
    var alreadyClosed: Bool

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case outcome
        case alreadyClosed = "already_closed"
    }
}

struct NoteRequest: Codable, Sendable {
    var text: String
}

/// An alert on the board or in the history.
struct AlertSummary: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var kind: AlertKind?
    var severity: Int
    var state: String
    var open: Bool
    var createdMilliseconds: Int64
    var updatedMilliseconds: Int64
    var acknowledgedMilliseconds: Int64?
    var acknowledgedBy: String?
    var outcome: AlertOutcome?
    var resolvedMilliseconds: Int64?
    var resolvedBy: String?
    var record: AlertRecord?
    var person: PersonProfile?

    init(_ row: AlertDeskRow) {
        let record = try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8))
        alertID = row.alertID
        deviceID = row.deviceID
        kind = record?.kind
        severity = record?.kind.severity ?? 0
        state = row.state
        open = row.isOpen
        createdMilliseconds = row.createdMilliseconds
        updatedMilliseconds = row.updatedMilliseconds
        acknowledgedMilliseconds = row.acknowledgedMilliseconds
        acknowledgedBy = row.acknowledgedBy
        outcome = row.outcome
        resolvedMilliseconds = row.resolvedMilliseconds
        resolvedBy = row.resolvedBy
        self.record = record
        person = try? StoreJSON.decode(row.person)
    }

    /// The board: most severe first, then newest.
    static func boardOrder(_ a: AlertSummary, _ b: AlertSummary) -> Bool {
        if a.severity != b.severity { return a.severity > b.severity }
        return a.createdMilliseconds > b.createdMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case kind, severity, state, open
        case createdMilliseconds = "created_ms"
        case updatedMilliseconds = "updated_ms"
        case acknowledgedMilliseconds = "acknowledged_ms"
        case acknowledgedBy = "acknowledged_by"
        case outcome
        case resolvedMilliseconds = "resolved_ms"
        case resolvedBy = "resolved_by"
        case record, person
    }
}

struct AlertList: Codable, Sendable {
    var alerts: [AlertSummary]
    /// Follow the feed after this id to see every change since this list was read.
    var feedLastID: Int64
    /// The history's next page (`after`); absent on the last page and on the board.
    var next: String?

    enum CodingKeys: String, CodingKey {
        case alerts
        case feedLastID = "feed_last_id"
        case next
    }
}

struct HeartRatePoint: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var bpm: Int

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case bpm
    }
}

struct TrackPoint: Codable, Hashable, Sendable {
    var atMilliseconds: Int64
    var latitude: Double
    var longitude: Double

    enum CodingKeys: String, CodingKey {
        case atMilliseconds = "at_ms"
        case latitude = "lat"
        case longitude = "lon"
    }
}

struct DeviceSummary: Codable, Hashable, Sendable {
    var deviceID: String
    var person: PersonProfile?
    var enrolledMilliseconds: Int64
    var lastSeenMilliseconds: Int64?
    var silent: Bool
    var heartbeat: DeviceHeartbeat?

    init(_ row: DeviceStatusRow) {
        deviceID = row.deviceID
        person = try? StoreJSON.decode(row.person)
        enrolledMilliseconds = row.enrolledMilliseconds
        lastSeenMilliseconds = row.lastSeenMilliseconds
        silent = row.silent
        heartbeat = row.heartbeat.flatMap { try? StoreJSON.decode($0) }
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case person
        case enrolledMilliseconds = "enrolled_ms"
        case lastSeenMilliseconds = "last_seen_ms"
        case silent, heartbeat
    }
}

struct DeviceList: Codable, Sendable {
    var devices: [DeviceSummary]
    /// The next page (`after`); absent on the last page.
    var next: String?
}

struct AlertDetail: Codable, Sendable {
    var alert: AlertSummary
    var timeline: [TimelineEntry]
    var notes: [AlertNote]
    var track: [TrackPoint]
    var heartRate: [HeartRatePoint]
    var device: DeviceSummary?

    enum CodingKeys: String, CodingKey {
        case alert, timeline, notes, track
        case heartRate = "heart_rate"
        case device
    }
}
