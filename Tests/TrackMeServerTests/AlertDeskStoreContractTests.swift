import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The alerts room's store, held to one contract on every backend: the same cases, run on
/// SQLite and on PostgreSQL, against the store itself (no HTTP in between). Alerts come in as
/// device intake stores them.
@Suite("AlertDeskStore contract")
struct AlertDeskStoreContractTests {
    static let start = IngestStoreContractTests.start
    static let minute: Int64 = 60_000

    /// A freshly migrated database of `backend` (the one intake's contract opens, with `pi-0001`
    /// enrolled), the desk's store over it and intake's to raise alerts with.
    static func withStores(_ backend: Backend, _ body: (any AlertDeskStore, any IngestStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, ingest in
            let desk: any AlertDeskStore = hall
            try await body(desk, ingest)
        }
    }

    /// Stores an update of `alertID` as intake does, with its feed reference, received at `at`.
    static func record(
        _ ingest: any IngestStore,
        _ alertID: String,
        seq: Int = 0,
        type: AlertUpdate.UpdateType = .raised,
        at: Int64 = start
    ) async throws {
        let update = Sample.alert("pi-0001", id: alertID, updateSeq: seq, type: type)
        let feedData = try StoreJSON.encode(AlertFeedReference(update, receivedMilliseconds: at))
        let outcome = try await ingest.recordAlertUpdate(update, body: try StoreJSON.encode(update), feedData: feedData, receivedMilliseconds: at)
        #expect(outcome == .accepted(AlertIntakeResult(duplicate: false, acknowledged: false)))
    }

    @Test("an alert is acknowledged once: one alert_acknowledged event, the first acknowledger kept; no alert, not found", arguments: Backend.enabled)
    func acknowledgedOnce(backend: Backend) async throws {
        try await Self.withStores(backend) { desk, ingest in
            try await Self.record(ingest, "alert-1")
            let first = try await desk.acknowledgeAlert(id: "alert-1", by: "dispatcher-1", atMilliseconds: Self.start + 1000)
            #expect(first == .acknowledged(deviceID: "pi-0001"))
            let again = try await desk.acknowledgeAlert(id: "alert-1", by: "dispatcher-2", atMilliseconds: Self.start + 2000)
            #expect(again == .alreadyAcknowledged(deviceID: "pi-0001"))
            #expect(try await desk.acknowledgeAlert(id: "alert-none", by: "dispatcher-1", atMilliseconds: Self.start) == .notFound)

            let row = try #require(try await desk.alertRow(id: "alert-1"))
            #expect(row.acknowledgedBy == "dispatcher-1" && row.acknowledgedMilliseconds == Self.start + 1000)
            let acknowledgements = try await desk.feedEvents(after: 0, limit: 100).filter { $0.kind == FeedKind.alertAcknowledged }
            #expect(acknowledgements.count == 1)
            let data: AlertAcknowledgedData = try StoreJSON.decode(try #require(acknowledgements.first).data)
            #expect(data == AlertAcknowledgedData(alertID: "alert-1", deviceID: "pi-0001", acknowledgedMilliseconds: Self.start + 1000))
        }
    }

    @Test("the feed after an id: oldest first, at most the limit, nothing after the head", arguments: Backend.enabled)
    func feedAfterIDWithLimit(backend: Backend) async throws {
        try await Self.withStores(backend) { desk, ingest in
            #expect(try await desk.feedHead() == 0)
            #expect(try await desk.feedEvents(after: 0, limit: 10).isEmpty)
            for (index, alertID) in ["a1", "a2", "a3", "a4", "a5"].enumerated() {
                try await Self.record(ingest, alertID, at: Self.start + Int64(index) * 1000)
            }
            let all = try await desk.feedEvents(after: 0, limit: 100)
            #expect(all.count == 5)
            #expect(all.map(\.id) == all.map(\.id).sorted() && Set(all.map(\.id)).count == 5)
            #expect(all.map { FeedReplay.alertID(of: $0) } == ["a1", "a2", "a3", "a4", "a5"])
            #expect(try await desk.feedHead() == all[4].id)

            let page = try await desk.feedEvents(after: 0, limit: 2)
            #expect(page == Array(all[0..<2]))
            let next = try await desk.feedEvents(after: page[1].id, limit: 2)
            #expect(next == Array(all[2..<4]))
            #expect(try await desk.feedEvents(after: next[1].id, limit: 2) == [all[4]])
            #expect(try await desk.feedEvents(after: all[4].id, limit: 2).isEmpty)
        }
    }

    @Test("replay is bounded: a resume from before the window starts at the window and says so", arguments: Backend.enabled)
    func boundedReplay(backend: Backend) async throws {
        try await Self.withStores(backend) { desk, ingest in
            // Three days old, an hour old, and two within the window.
            try await Self.record(ingest, "old", at: Self.start)
            try await Self.record(ingest, "hour", at: Self.start + 3 * 24 * 60 * Self.minute)
            try await Self.record(ingest, "recent-1", at: Self.start + 3 * 24 * 60 * Self.minute + 55 * Self.minute)
            try await Self.record(ingest, "recent-2", at: Self.start + 3 * 24 * 60 * Self.minute + 58 * Self.minute)
            let now = Self.start + 3 * 24 * 60 * Self.minute + 60 * Self.minute
            let events = try await desk.feedEvents(after: 0, limit: 100)
            #expect(events.count == 4)

            let floor = try await desk.feedFloor(sinceMilliseconds: now - FeedReplay.window)
            #expect(floor >= events[1].id && floor < events[2].id, "the floor is just before the window's first event")
            #expect(try await desk.feedEvents(after: floor, limit: 100).compactMap(FeedReplay.alertID(of:)) == ["recent-1", "recent-2"])
            // Nothing in the window: the floor is the head, and a resume replays nothing.
            #expect(try await desk.feedFloor(sinceMilliseconds: now + 1) == events[3].id)

            let fromZero = try await FeedReplay.start(requested: 0, store: desk, now: now)
            #expect(fromZero.after == floor && fromZero.reset)
            let fresh = try await FeedReplay.start(requested: nil, store: desk, now: now)
            #expect(fresh.after == floor && !fresh.reset)
            let within = try await FeedReplay.start(requested: events[2].id, store: desk, now: now)
            #expect(within.after == events[2].id && !within.reset)
        }
    }

    @Test("an alert's detail reads every update that is not a position and only the newest positions", arguments: Backend.enabled)
    func detailBoundedInPositions(backend: Backend) async throws {
        try await Self.withStores(backend) { desk, ingest in
            try await Self.record(ingest, "alert-1")
            for seq in 1...30 { try await Self.record(ingest, "alert-1", seq: seq, type: .position, at: Self.start + Int64(seq) * 1000) }
            try await Self.record(ingest, "alert-1", seq: 31, type: .kindChanged, at: Self.start + 31_000)
            for seq in 32...40 { try await Self.record(ingest, "alert-1", seq: seq, type: .position, at: Self.start + Int64(seq) * 1000) }

            #expect(try await desk.alertUpdates(alertID: "alert-1").map(\.updateSequence) == Array(0...40))
            let bounded = try await desk.deskUpdates(alertID: "alert-1", recentPositions: 12)
            #expect(bounded.map(\.updateSequence) == [0] + Array(28...30) + [31] + Array(32...40))
            #expect(bounded.filter { $0.type == AlertUpdate.UpdateType.position.rawValue }.count == 12)
            #expect(try await desk.deskUpdates(alertID: "alert-none", recentPositions: 12).isEmpty)
        }
    }

    @Test("resolve closes once and a note needs an alert; each change is on the feed", arguments: Backend.enabled)
    func resolveAndNotes(backend: Backend) async throws {
        try await Self.withStores(backend) { desk, ingest in
            try await Self.record(ingest, "alert-1")
            #expect(try await desk.alertRows(open: true, limit: 100).map(\.alertID) == ["alert-1"])
            let note = try #require(
                try await desk.addNote(alertID: "alert-1", author: "Dee", text: "called the son", atMilliseconds: Self.start + 10)
            )
            #expect(try await desk.notes(alertID: "alert-1") == [note])
            #expect(try await desk.addNote(alertID: "alert-none", author: "Dee", text: "x", atMilliseconds: Self.start) == nil)

            let resolved = try await desk.resolveAlert(id: "alert-1", outcome: .falseAlarm, by: "dispatcher-1", atMilliseconds: Self.start + 20)
            #expect(resolved == .resolved(deviceID: "pi-0001"))
            let again = try await desk.resolveAlert(id: "alert-1", outcome: .helpArrived, by: "dispatcher-2", atMilliseconds: Self.start + 30)
            #expect(again == .alreadyClosed(deviceID: "pi-0001"))
            #expect(try await desk.resolveAlert(id: "alert-none", outcome: .falseAlarm, by: "d", atMilliseconds: Self.start) == .notFound)
            let row = try #require(try await desk.alertRow(id: "alert-1"))
            #expect(row.outcome == .falseAlarm && row.resolvedBy == "dispatcher-1" && !row.isOpen)
            #expect(try await desk.alertRows(open: true, limit: 100).isEmpty)
            #expect(try await desk.alertRows(open: false, limit: 100).map(\.alertID) == ["alert-1"])

            let kinds = try await desk.feedEvents(after: 0, limit: 100).map(\.kind)
            #expect(kinds == [FeedKind.alert, FeedKind.alertNote, FeedKind.alertResolved])
        }
    }

    @Test("the access log the desk writes, under the reader's account name when it has one", arguments: Backend.enabled)
    func accessLogOfTheDesk(backend: Backend) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, _ in
            let desk: any AlertDeskStore = hall
            #expect(try await desk.accountName(id: "no-such-account") == nil)
            let log = AccessLog(store: desk, wallClock: { Self.start + 5 })
            let dispatcher = Principal(role: .dispatcher, tokenID: "tok-d")
            try await log.record(dispatcher, subject: "device:pi-0001", reason: "alert_handling", what: "alert a1")
            let entries = try await hall.accessLog(subjects: ["device:pi-0001"], limit: 10)
            #expect(entries.count == 1)
            let entry = try #require(entries.first)
            #expect(entry.readerID == "tok-d" && entry.readerName == "A dispatcher" && entry.readerRole == "dispatcher")
            #expect(entry.what == "alert a1" && entry.atMilliseconds == Self.start + 5)
        }
    }
}
