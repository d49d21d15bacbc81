import TrackMeServer

/// What the server holds of what a crowd's devices committed: every committed reading stored
/// once is the data path's promise, however the crowd moved.
struct DeliveryTally {
    /// Readings the devices committed.
    private(set) var fixes = 0
    /// Committed and not at the server.
    private(set) var lost = 0
    /// Stored more than once.
    private(set) var duplicates = 0

    mutating func add(_ device: CrowdDevice, server: TrackMeServer) async throws {
        let committed = Set(await device.committed)
        fixes += committed.count
        let atServer = try await server.storedSequences(deviceID: device.deviceID)
        duplicates += atServer.count - Set(atServer).count
        lost += committed.subtracting(atServer).count
    }

    var whole: Bool { lost == 0 && duplicates == 0 }

    var description: String { "nothing lost or duplicated: \(lost) lost, \(duplicates) duplicated of \(fixes)" }
}
