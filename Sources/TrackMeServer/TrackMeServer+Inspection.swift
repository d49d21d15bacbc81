import Foundation
public import TrackMeCore

extension TrackMeServer {
    /// Every reading sequence number the store holds for a device, in order, one entry per
    /// stored row: the simulation compares it with what the device acknowledged.
    public func storedSequences(deviceID: String) async throws -> [Int64] {
        var result: [Int64] = []
        var after: Int64 = Int64.min
        while true {
            let page = try await store.readings(
                ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: after, limit: 1000))
            guard let last = page.last else { return result }
            result += page.map(\.sequence)
            after = last.sequence
        }
    }

    /// Every reading the server holds for a device with where it filed it in time and the
    /// timestamp the device sent, in sequence order (the simulation checks each reading's time).
    public func storedReadingTimes(deviceID: String) async throws -> [(sequence: Int64, placedMilliseconds: Int64, timestamp: ReadingTimestamp)] {
        var result: [(sequence: Int64, placedMilliseconds: Int64, timestamp: ReadingTimestamp)] = []
        var after: Int64 = Int64.min
        while true {
            let page = try await store.readings(
                ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: after, limit: 1000))
            guard let last = page.last else { return result }
            for row in page {
                let reading = try WireCodec.decode(WireReading.self, from: Data(row.body.utf8))
                result.append((row.sequence, row.placedMilliseconds, reading.timestamp))
            }
            after = last.sequence
        }
    }

    /// The device's last heartbeat as the server keeps it, and when it was last heard from.
    public func deviceContact(deviceID: String) async throws -> (heartbeat: DeviceHeartbeat?, lastSeenMilliseconds: Int64?) {
        let (json, lastSeen) = try await store.deviceContact(id: deviceID)
        let heartbeat = try json.map { try WireCodec.decode(DeviceHeartbeat.self, from: Data($0.utf8)) }
        return (heartbeat, lastSeen)
    }

    /// Every update of an alert the server took (one per update number), in the order they
    /// arrived: tests check that a restarted agent goes on sending them, numbered above the
    /// ones before.
    public func alertUpdates(alertID: String) async throws -> [AlertUpdate] {
        var result: [AlertUpdate] = []
        var after: Int64 = 0
        while true {
            let page = try await store.feedEvents(after: after, limit: 500)
            guard let last = page.last else { return result }
            for event in page where event.kind == FeedKind.alert {
                let update = try WireCodec.decode(AlertUpdate.self, from: Data(event.data.utf8))
                if update.alert.id == alertID { result.append(update) }
            }
            after = last.id
        }
    }
}
