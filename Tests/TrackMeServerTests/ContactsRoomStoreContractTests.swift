import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The contacts' room's store, held to one contract on every backend: the same cases, run on
/// SQLite and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("ContactsRoomStore contract")
struct ContactsRoomStoreContractTests {
    static let start = IngestStoreContractTests.start

    /// A freshly migrated database of `backend` with `pi-0001` enrolled and its alert `alert-1`
    /// stored as intake stores it; the room's store over it.
    static func withStore(_ backend: Backend, _ body: (any ContactsRoomStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, ingest in
            try await AlertDeskStoreContractTests.record(ingest, "alert-1")
            let room: any ContactsRoomStore = hall
            try await body(room)
        }
    }

    @Test("a contact is told of an alert once, and confirms once, with their link's nonce only", arguments: Backend.enabled)
    func toldOnceConfirmedOnce(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any ContactsRoomStore) async throws in
            let told = ContactNotification(alertID: "alert-1", contactIndex: 0, nonce: "nonce-a", expiresMilliseconds: Self.start + 3_600_000)
            #expect(try await store.insertContactNotification(told, createdMilliseconds: Self.start))
            var again = told
            again.nonce = "nonce-b"
            #expect(try await store.insertContactNotification(again, createdMilliseconds: Self.start + 1000) == false)
            #expect(try await store.contactNotification(alertID: "alert-1", contactIndex: 0) == told)
            #expect(try await store.contactNotification(alertID: "alert-1", contactIndex: 1) == nil)

            #expect(
                try await store.confirmContactNotification(alertID: "alert-1", contactIndex: 0, nonce: "nonce-b", atMilliseconds: Self.start + 2000)
                    == false
            )
            #expect(
                try await store.confirmContactNotification(alertID: "alert-1", contactIndex: 0, nonce: "nonce-a", atMilliseconds: Self.start + 3000)
            )
            #expect(
                try await store.confirmContactNotification(alertID: "alert-1", contactIndex: 0, nonce: "nonce-a", atMilliseconds: Self.start + 4000)
                    == false
            )
            #expect(try await store.contactNotification(alertID: "alert-1", contactIndex: 0)?.confirmedMilliseconds == Self.start + 3000)
        }
    }

    @Test("an attempt is claimed by one instance only; how it ended is recorded", arguments: Backend.enabled)
    func attemptClaimedOnce(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any ContactsRoomStore) async throws in
            var attempt = ContactAttempt(
                alertID: "alert-1",
                contactIndex: 0,
                purpose: .escalation,
                attempt: 1,
                startedMilliseconds: Self.start,
                finishedMilliseconds: nil,
                result: nil,
                exitStatus: nil,
                detail: nil
            )
            #expect(try await store.claimContactAttempt(attempt))
            #expect(try await store.claimContactAttempt(attempt) == false, "a second instance must not run the same attempt")
            attempt.finishedMilliseconds = Self.start + 500
            attempt.result = .told
            attempt.exitStatus = 0
            try await store.finishContactAttempt(attempt)
            #expect(try await store.contactAttempts(alertID: "alert-1") == [attempt])
            #expect(try await store.contactAttempts(alertID: "alert-2").isEmpty)
        }
    }

    @Test("the desk's part the room sees: the alert a link names, acknowledged once, by the contact", arguments: Backend.enabled)
    func theDesksPart(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any ContactsRoomStore) async throws in
            #expect(try await store.alertRows(open: true, limit: 10).map(\.alertID) == ["alert-1"])
            #expect(try await store.alertUpdates(alertID: "alert-1").count == 1)
            #expect(
                try await store.acknowledgeAlert(id: "alert-1", by: "contact:Ann", atMilliseconds: Self.start + 1000)
                    == .acknowledged(deviceID: "pi-0001")
            )
            #expect(try await store.alertRow(id: "alert-1")?.acknowledgedBy == "contact:Ann")
            #expect(try await store.wearerAccount(deviceID: "pi-0001") == nil, "no wearer account linked")
        }
    }
}
