import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The people's room's store, held to one contract on every backend: the same cases, run on
/// SQLite and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("PeopleRoomStore contract")
struct PeopleRoomStoreContractTests {
    static let start = IngestStoreContractTests.start

    /// A freshly migrated database of `backend` with `pi-0001` enrolled and the wearers `ada` and
    /// `bea`, the carer `cal` and the organisation `org`; the room's store and intake's over it.
    static func withStores(_ backend: Backend, _ body: (any PeopleRoomStore, any IngestStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, ingest in
            for (name, role) in [("ada", Role.wearer), ("bea", .wearer), ("cal", .carer), ("org", .thirdParty)] {
                #expect(try await hall.insertAccount(AccessRoomStoreContractTests.account(name, role: role)))
            }
            let room: any PeopleRoomStore = hall
            try await body(room, ingest)
        }
    }

    static func request(_ id: String, at: Int64) -> AccessRequest {
        AccessRequest(
            id: id,
            organisationID: "acc-org",
            personID: "acc-ada",
            kinds: [.heartRate],
            days: 30,
            dataFromMilliseconds: nil,
            purpose: "a study",
            status: .pending,
            requestedMilliseconds: at
        )
    }

    @Test("a device is linked to one wearer: again is no change, to another wearer a refusal", arguments: Backend.enabled)
    func deviceLinkedOnce(backend: Backend) async throws {
        try await Self.withStores(backend) { (store: any PeopleRoomStore, _: any IngestStore) async throws in
            #expect(try await store.linkDevice(accountID: "acc-ada", deviceID: "pi-0001", atMilliseconds: Self.start) == .linked)
            #expect(try await store.linkDevice(accountID: "acc-ada", deviceID: "pi-0001", atMilliseconds: Self.start + 1) == .alreadyLinked)
            #expect(try await store.linkDevice(accountID: "acc-bea", deviceID: "pi-0001", atMilliseconds: Self.start + 2) == .linkedToAnother)
            #expect(try await store.linkedDevices(accountID: "acc-ada") == ["pi-0001"])
            #expect(try await store.linkedDevices(accountID: "acc-bea").isEmpty)
            #expect(try await store.wearerAccount(deviceID: "pi-0001") == "acc-ada")
        }
    }

    @Test("a request changes only from the status it was read in; both sides page it newest first", arguments: Backend.enabled)
    func requestsCompareAndSet(backend: Backend) async throws {
        try await Self.withStores(backend) { (store: any PeopleRoomStore, _: any IngestStore) async throws in
            for index in 0..<3 { try await store.insertAccessRequest(Self.request("req-\(index)", at: Self.start + Int64(index))) }
            var approved = try #require(try await store.accessRequest(id: "req-1"))
            approved.status = .approved
            approved.answeredMilliseconds = Self.start + 10
            #expect(try await store.updateAccessRequest(approved, expected: .pending))
            var refused = approved
            refused.status = .refused
            #expect(try await store.updateAccessRequest(refused, expected: .pending) == false, "answered already")
            #expect(try await store.accessRequest(id: "req-1")?.status == .approved)
            let first = try await store.accessRequests(personID: "acc-ada", before: nil, limit: 2)
            #expect(first.map(\.id) == ["req-2", "req-1"])
            let next = try await store.accessRequests(personID: "acc-ada", before: (Self.start + 1, "req-1"), limit: 2)
            #expect(next.map(\.id) == ["req-0"])
            #expect(try await store.accessRequests(organisationID: "acc-org", before: nil, limit: nil).count == 3)
            #expect(try await store.accessRequests(organisationID: "acc-bea", before: nil, limit: nil).isEmpty)
        }
    }

    @Test("a carer is linked once (again changes may_export), found from both sides, unlinked once", arguments: Backend.enabled)
    func carers(backend: Backend) async throws {
        try await Self.withStores(backend) { (store: any PeopleRoomStore, _: any IngestStore) async throws in
            let link = CarerLink(personID: "acc-ada", carerID: "acc-cal", mayExport: false, grantedMilliseconds: Self.start, grantedBy: "person")
            #expect(try await store.linkCarer(link) == .linked)
            var exporting = link
            exporting.mayExport = true
            #expect(try await store.linkCarer(exporting) == .updated)
            #expect(try await store.carerLinks(personID: "acc-ada").map(\.mayExport) == [true])
            #expect(try await store.carerLinks(carerID: "acc-cal").map(\.personID) == ["acc-ada"])
            #expect(try await store.unlinkCarer(personID: "acc-ada", carerID: "acc-cal"))
            #expect(try await store.unlinkCarer(personID: "acc-ada", carerID: "acc-cal") == false)
            #expect(try await store.carerLinks(personID: "acc-ada").isEmpty)
        }
    }

    @Test("the access log pages newest first by id and holds only the subjects asked for", arguments: Backend.enabled)
    func accessLog(backend: Backend) async throws {
        try await Self.withStores(backend) { (store: any PeopleRoomStore, _: any IngestStore) async throws in
            for index in 0..<5 {
                try await store.appendAccessLog(
                    AccessLogEntry(
                        id: 0,
                        subject: index == 4 ? "person:acc-bea" : "person:acc-ada",
                        readerID: "account:acc-org",
                        readerName: "Org",
                        readerRole: "third_party",
                        reason: "consent",
                        what: "heart_rate \(index)",
                        atMilliseconds: Self.start + Int64(index)
                    )
                )
            }
            let page = try await store.accessLog(subjects: ["person:acc-ada"], beforeID: nil, limit: 3)
            #expect(page.map(\.what) == ["heart_rate 3", "heart_rate 2", "heart_rate 1"])
            let rest = try await store.accessLog(subjects: ["person:acc-ada"], beforeID: page.last?.id, limit: 3)
            #expect(rest.map(\.what) == ["heart_rate 0"])
            #expect(try await store.accountName(id: "acc-org") == "Org")
        }
    }

    @Test("a day's counters are what intake stored once: a replay adds nothing, another batch adds to the day", arguments: Backend.enabled)
    func dayCounters(backend: Backend) async throws {
        try await Self.withStores(backend) { (store: any PeopleRoomStore, ingest: any IngestStore) async throws in
            let day = GroupFigures.day(Self.start)
            var first = IngestStoreContractTests.batch(seq: 1, readings: [1, 2])
            var counters = DeviceDay(day: day)
            counters.add(bpm: 60, contact: true)
            counters.add(bpm: 90, contact: true)
            first.days = [counters]
            #expect(try await ingest.ingest(first).stored == 2)
            #expect(try await ingest.ingest(first).replayed)
            var second = IngestStoreContractTests.batch(seq: 2, readings: [3])
            var more = DeviceDay(day: day)
            more.add(latitude: 45.05, longitude: 9.05)
            second.days = [more]
            #expect(try await ingest.ingest(second).stored == 1)
            let kept = try await store.deviceDays(day: day)
            #expect(kept.map(\.deviceID) == ["pi-0001"])
            let total = try #require(kept.first?.day)
            #expect(total.heartRateCount == 2 && total.heartRateSum == 150 && total.fixCount == 1)
            #expect(total.bins[GroupFigures.bin(of: 60)] == 1 && total.bins[GroupFigures.bin(of: 90)] == 1)
            #expect(total.cell?.latitude == GroupFigures.cellIndex(45.05) && total.cell?.longitude == GroupFigures.cellIndex(9.05))
            #expect(try await store.deviceDays(day: day + 1).isEmpty)
        }
    }
}
