import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The care room's store, held to one contract on every backend: the same cases, run on SQLite
/// and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("CareRoomStore contract")
struct CareRoomStoreContractTests {
    static let start = IngestStoreContractTests.start

    /// A freshly migrated database of `backend` with `pi-0001` enrolled (its token `tok-pi-0001`)
    /// and its alert `alert-1`; the room's store over it.
    static func withStore(_ backend: Backend, _ body: (any CareRoomStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, ingest in
            try await AlertDeskStoreContractTests.record(ingest, "alert-1")
            let room: any CareRoomStore = hall
            try await body(room)
        }
    }

    @Test("settings are versioned one by one, with who set them, and become the device's person", arguments: Backend.enabled)
    func versions(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any CareRoomStore) async throws in
            #expect(try await store.careSettings(deviceID: "pi-0001") == nil)
            let person = PersonProfile(name: "Ada", age: 70)
            let first = try await store.putCareSettings(
                deviceID: "pi-0001",
                settings: CareSettings(maximumHeartRate: 150),
                person: person,
                by: "account:acc-ada",
                atMilliseconds: Self.start + 1
            )
            #expect(first.version == 1)
            let second = try await store.putCareSettings(
                deviceID: "pi-0001",
                settings: CareSettings(maximumHeartRate: 140),
                person: person,
                by: "admin",
                atMilliseconds: Self.start + 2
            )
            #expect(second.version == 2)
            let stored = try #require(try await store.careSettings(deviceID: "pi-0001"))
            #expect(stored.settings.version == 2 && stored.settings.maximumHeartRate == 140)
            #expect(stored.updatedBy == "admin" && stored.updatedMilliseconds == Self.start + 2)
            #expect(try await store.device(id: "pi-0001")?.person.name == "Ada")
        }
    }

    @Test("an erasure deletes the device's rows once and leaves a wipe order found by its token only", arguments: Backend.enabled)
    func erasedOnce(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any CareRoomStore) async throws in
            #expect(try await store.alertIDs(deviceIDs: ["pi-0001"]) == ["alert-1"])
            let erased = try #require(try await store.erase(deviceID: "pi-0001", nowMilliseconds: Self.start + 10))
            #expect(erased.rowsDeleted > 0 && erased.wipeOrders == 1)
            #expect(try await store.erase(deviceID: "pi-0001", nowMilliseconds: Self.start + 11) == nil)
            #expect(try await store.device(id: "pi-0001") == nil)
            #expect(try await store.alertIDs(deviceIDs: ["pi-0001"]).isEmpty)
            let digest = WipeOrderDigest.of(tokenID: "tok-pi-0001", secretHash: String(repeating: "0", count: 64))
            #expect(try await store.wipeOrder(tokenDigest: digest) == Self.start + 10)
            #expect(try await store.wipeOrder(tokenDigest: WipeOrderDigest.of(tokenID: "tok-pi-0001", secretHash: "x")) == nil)
        }
    }
}
