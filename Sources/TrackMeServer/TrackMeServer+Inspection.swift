import Foundation
public import TrackMeCore

extension TrackMeServer {
    /// Every reading sequence number the store holds for a device, in order, one entry per
    /// stored row: the simulation compares it with what the device acknowledged.
    public func storedSequences(deviceID: String) async throws -> [Int64] {
        try await storedRows(deviceID: deviceID).map(\.sequence)
    }

    /// Every reading the server holds for a device with where it filed it in time and the
    /// timestamp the device sent, in sequence order (the simulation checks each reading's time).
    public func storedReadingTimes(deviceID: String) async throws -> [(sequence: Int64, placedMilliseconds: Int64, timestamp: ReadingTimestamp)] {
        try await storedRows(deviceID: deviceID).map { row in
            (row.sequence, row.placedMilliseconds, try WireCodec.decodeReading(row.body).timestamp)
        }
    }

    /// Every reading the store holds for a device, exactly as the wire carried it, in sequence
    /// order: tests compare them with what the device's store holds (the agent's sync tests
    /// check the real server, not a copy of it).
    public func storedReadings(deviceID: String) async throws -> [WireReading] {
        try await storedRows(deviceID: deviceID).map { try WireCodec.decodeReading($0.body) }
    }

    /// Every stored row of a device, in sequence order, a page at a time.
    private func storedRows(deviceID: String) async throws -> [StoredReadingRow] {
        var result: [StoredReadingRow] = []
        var after: Int64 = Int64.min
        while true {
            let page = try await store.readings(
                ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: after, limit: 1000)
            )
            guard let last = page.last else { return result }
            result += page
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
        try await storedAlertUpdates().filter { $0.alert.id == alertID }
    }

    /// Every alert update the server took, of every device, in the order they arrived (the
    /// feed's order; its events name the update, the body is the stored one).
    public func storedAlertUpdates() async throws -> [AlertUpdate] {
        var result: [AlertUpdate] = []
        var bodies: [String: [Int64: String]] = [:]
        var after: Int64 = 0
        while true {
            let page = try await store.feedEvents(after: after, limit: 500)
            guard let last = page.last else { return result }
            for event in page where event.kind == FeedKind.alert {
                let reference: AlertFeedReference = try StoreJSON.decode(event.data)
                let sequence = Int64(reference.updateSequence)
                if bodies[reference.alertID]?[sequence] == nil {
                    let rows = try await store.alertUpdates(alertID: reference.alertID)
                    bodies[reference.alertID] = Dictionary(rows.map { ($0.updateSequence, $0.body) }, uniquingKeysWith: { first, _ in first })
                }
                guard let body = bodies[reference.alertID]?[sequence] else { continue }
                result.append(try WireCodec.decode(AlertUpdate.self, from: Data(body.utf8)))
            }
            after = last.id
        }
    }
}

extension TrackMeServer {
    /// Stores an alert update as the intake does (its feed event a reference), without HTTP: the
    /// benchmarks seed hours of 1 Hz positions with it.
    public func recordAlertUpdateDirectly(_ update: AlertUpdate, receivedMilliseconds: Int64) async throws {
        let feedData = try StoreJSON.encode(AlertFeedReference(update, receivedMilliseconds: receivedMilliseconds))
        _ = try await ingestStore.recordAlertUpdate(
            update,
            body: try StoreJSON.encode(update),
            feedData: feedData,
            receivedMilliseconds: receivedMilliseconds
        )
    }
}
