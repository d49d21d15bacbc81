import Synchronization

/// Enrolled devices as the ingest path needs them, cached: a device row never changes once
/// enrolled (enrolment is insert-once and nothing deletes a device), so each batch need not
/// read it again. At one batch every 5 s per device, that read would be a third of a batch's time.
final class DeviceDirectory: Sendable {
    private let store: any IngestStore
    private let cache = Mutex<[String: DeviceRow]>([:])

    init(store: any IngestStore) {
        self.store = store
    }

    /// The enrolled device, or nil (not cached: it may be enrolled a moment later).
    func device(id: String) async throws -> DeviceRow? {
        if let cached = cache.withLock({ $0[id] }) { return cached }
        guard let found = try await store.device(id: id) else { return nil }
        cache.withLock { $0[id] = found }
        return found
    }
}
