import TrackMeCore

/// The care settings of a device as stored, with who set them.
struct StoredCareSettings: Hashable, Sendable {
    var settings: CareSettings
    var updatedMilliseconds: Int64
    var updatedBy: String
}

/// What an erasure deleted.
struct ErasureResult: Hashable, Sendable {
    /// Rows deleted over every table.
    var rowsDeleted: Int
    /// Wipe orders left for the device's tokens.
    var wipeOrders: Int
}

/// Storage of retention and erasure, and the care settings (`CareSettingsStore`); both
/// backends, and the behaviour suite runs against each.
protocol CareStore: CareSettingsStore, Sendable {
    /// Deletes one kind's data older than the cut-off (`RetentionSQL`; readings through
    /// `deleteReadings(placedBefore:)`, the one method a partitioned table replaces). Returns
    /// the rows deleted.
    func applyRetention(_ cutoff: RetentionCutoff, nowMilliseconds: Int64) async throws -> Int

    /// Deletes, in one transaction, every row of the device and its person from every table
    /// (`ErasureSQL`), leaving a wipe order keyed by a digest of each of its tokens
    /// (`WipeOrderDigest`). Nil if there is no such device.
    func erase(deviceID: String, nowMilliseconds: Int64) async throws -> ErasureResult?

    /// When the device holding a token with this digest was erased, or nil.
    func wipeOrder(tokenDigest: String) async throws -> Int64?
}

/// A device's care settings: read by the care and people rooms, written there and at enrolment
/// (the thresholds enrolled with become the first version).
protocol CareSettingsStore: Sendable {
    func careSettings(deviceID: String) async throws -> StoredCareSettings?

    /// Stores `settings` as the device's next version (1 for the first) and returns them with it;
    /// in the same transaction the device's person becomes `person` (what the console and the
    /// contact escalation read).
    func putCareSettings(
        deviceID: String,
        settings: CareSettings,
        person: PersonProfile,
        by actor: String,
        atMilliseconds: Int64
    ) async throws -> CareSettings
}

/// The key of an erased device's wipe order: a digest of its token's id and secret hash, so the
/// order finds the device when it next presents the token, and the row names nothing else.
enum WipeOrderDigest {
    static func of(tokenID: String, secretHash: String) -> String {
        ServerDigest.sha256Hex("trackme-wipe-order:\(tokenID):\(secretHash)")
    }
}
