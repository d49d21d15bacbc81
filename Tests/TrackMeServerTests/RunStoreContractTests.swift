import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The runs room's store, held to one contract on every backend: the same cases, run on SQLite
/// and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("RunStore contract")
struct RunStoreContractTests {
    static let start: Int64 = 1_795_000_000_000

    /// A freshly migrated database of `backend`: the hall's store, intake's (to file readings)
    /// and the runs room's over it.
    static func withStores(_ backend: Backend, _ body: (any RunStore, any IngestStore, any ServerStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, ingest in
            try await body(try TrackMeServer.runStore(for: hall), ingest, hall)
        }
    }

    static func run(_ id: String, name: String = "City 10K", place: String = "Turin", cap: Int? = nil, start: Int64 = start) throws -> Run {
        Run(
            id: id,
            code: "CODE-\(id.uppercased())",
            name: name,
            organiserAccountID: "olga",
            startMilliseconds: start,
            endMilliseconds: start + 3_600_000,
            enrolmentOpen: true,
            path: try RunPath(points: [[45.0, 7.0], [45.01, 7.0]]),
            createdMilliseconds: start - 86_400_000,
            place: place,
            participantCap: cap
        )
    }

    static func entry(_ runID: String, _ deviceID: String, health: Bool = false, checkedIn: Int64? = nil) -> RunEntry {
        RunEntry(
            runID: runID,
            deviceID: deviceID,
            name: "Runner \(deviceID)",
            showToSpectators: true,
            enrolledMilliseconds: start,
            checkedInMilliseconds: checkedIn,
            shareHealth: health
        )
    }

    @Test("a run keeps its place, cap and close; a code is taken once", arguments: Backend.enabled)
    func runsRoundTrip(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, _ throws in
            #expect(try await runs.insertRun(try Self.run("r1", cap: 3)))
            #expect(try await !runs.insertRun(try Self.run("r1-again").withCode("CODE-R1")))
            let stored = try #require(try await runs.run(id: "r1"))
            #expect(stored.place == "Turin" && stored.participantCap == 3 && stored.closedMilliseconds == nil)
            #expect(try await runs.run(code: "CODE-R1")?.id == "r1")
            #expect(try await runs.closeRun(runID: "r1", atMilliseconds: Self.start + 1000))
            #expect(try await runs.closeRun(runID: "r1", atMilliseconds: Self.start + 9000), "closing again is no error")
            let closed = try #require(try await runs.run(id: "r1"))
            #expect(closed.closedMilliseconds == Self.start + 1000, "the first close stands")
            #expect(!closed.enrolmentOpen, "closing shuts enrolment")
            #expect(try await !runs.closeRun(runID: "nope", atMilliseconds: Self.start))
        }
    }

    static func matching(_ text: String?) -> RunListQuery { RunListQuery(text: text, now: start) }

    @Test("runs are found by name or place, whatever the case; % and _ are plain characters", arguments: Backend.enabled)
    func search(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, _ throws in
            #expect(try await runs.insertRun(try Self.run("a", name: "City 10K", place: "Turin", start: Self.start)))
            #expect(try await runs.insertRun(try Self.run("b", name: "Park Run", place: "Milano Parco Sempione", start: Self.start + 1)))
            #expect(try await runs.insertRun(try Self.run("c", name: "100% Trail", place: "Aosta", start: Self.start + 2)))
            #expect(try await runs.runs(Self.matching(nil), after: nil, limit: 10).map(\.id) == ["c", "b", "a"], "newest start first")
            #expect(try await runs.runs(Self.matching("city"), after: nil, limit: 10).map(\.id) == ["a"])
            #expect(try await runs.runs(Self.matching("TURIN"), after: nil, limit: 10).map(\.id) == ["a"])
            #expect(try await runs.runs(Self.matching("parco"), after: nil, limit: 10).map(\.id) == ["b"])
            #expect(try await runs.runs(Self.matching("run"), after: nil, limit: 10).map(\.id) == ["b"])
            #expect(try await runs.runs(Self.matching("%"), after: nil, limit: 10).map(\.id) == ["c"])
            #expect(try await runs.runs(Self.matching("_"), after: nil, limit: 10).isEmpty)
            #expect(try await runs.runs(Self.matching(nil), after: nil, limit: 2).count == 2)
        }
    }

    @Test("enrolment stops at the cap; a removed runner frees a place; nobody is entered twice", arguments: Backend.enabled)
    func cap(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, _ throws in
            #expect(try await runs.insertRun(try Self.run("r", cap: 2)))
            #expect(try await runs.enrol(Self.entry("r", "d1")) == .enrolled)
            #expect(try await runs.enrol(Self.entry("r", "d1")) == .alreadyEntered)
            #expect(try await runs.enrol(Self.entry("r", "d2", health: true)) == .enrolled)
            #expect(try await runs.enrol(Self.entry("r", "d3")) == .full)
            #expect(try await runs.runEntries(runID: "r").map(\.deviceID) == ["d1", "d2"])
            #expect(try await runs.runEntry(runID: "r", deviceID: "d2")?.shareHealth == true)
            #expect(try await runs.runEntry(runID: "r", deviceID: "d1")?.shareHealth == false)
            #expect(try await runs.removeRunEntry(runID: "r", deviceID: "d1", atMilliseconds: Self.start + 5) == .removed)
            #expect(try await runs.enrol(Self.entry("r", "d3")) == .enrolled)
            #expect(try await runs.enrol(Self.entry("r", "d1")) == .alreadyEntered, "a removed runner is not entered again")
        }
    }

    @Test("only a runner who has not checked in is removed; removed runners leave the run's list, not the store", arguments: Backend.enabled)
    func removal(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, _ throws in
            #expect(try await runs.insertRun(try Self.run("r")))
            #expect(try await runs.enrol(Self.entry("r", "late")) == .enrolled)
            #expect(try await runs.enrol(Self.entry("r", "here", checkedIn: Self.start - 60_000)) == .enrolled)
            #expect(try await runs.removeRunEntry(runID: "r", deviceID: "here", atMilliseconds: Self.start) == .checkedIn)
            #expect(try await runs.removeRunEntry(runID: "r", deviceID: "nobody", atMilliseconds: Self.start) == .notFound)
            #expect(try await runs.removeRunEntry(runID: "r", deviceID: "late", atMilliseconds: Self.start) == .removed)
            #expect(try await runs.removeRunEntry(runID: "r", deviceID: "late", atMilliseconds: Self.start) == .notFound)
            #expect(try await runs.runEntries(runID: "r").map(\.deviceID) == ["here"])
            #expect(try await runs.runEntry(runID: "r", deviceID: "late")?.removedMilliseconds == Self.start)
            #expect(try await runs.runEntries(deviceID: "late").count == 1)
        }
    }

    @Test("a stored heart rate by its sequence number, nothing for another kind or device", arguments: Backend.enabled)
    func heartRate(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, ingest, _ throws in
            func row(_ seq: Int64, bpm: Int?, at placed: Int64) throws -> ReadingRow {
                let payload: WireReading.Payload =
                    bpm.map { .heartRate(HeartRateReading(bpm: $0, contact: .detected, rrIntervals: [])) }
                    ?? .position(PositionFix(time: nil, mode: .threeDimensional, latitude: 45, longitude: 7))
                let reading = WireReading(sequence: seq, timestamp: Sample.timestamp(wall: placed), payload: payload)
                return ReadingRow(
                    sequence: seq,
                    kind: reading.kind,
                    placedMilliseconds: placed,
                    wallMilliseconds: placed,
                    timeFlag: nil,
                    body: String(decoding: try WireCodec.encode(reading), as: UTF8.self)
                )
            }
            let rows = [
                try row(1, bpm: 120, at: Self.start + 1000), try row(2, bpm: 150, at: Self.start + 3000),
                try row(3, bpm: nil, at: Self.start + 4000), try row(4, bpm: 170, at: Self.start + 9000),
            ]
            var batch = IngestStoreContractTests.batch(seq: 1, readings: [])
            batch.readings = rows
            batch.digest = BatchDigest.digest(readings: rows, droppedByBudget: 0)
            #expect(try await ingest.ingest(batch).stored == 4)
            #expect(try await runs.heartRate(deviceID: "pi-0001", sequence: 2) == 150)
            #expect(try await runs.heartRate(deviceID: "pi-0001", sequence: 3) == nil, "a fix is no heart rate")
            #expect(try await runs.heartRate(deviceID: "pi-0001", sequence: 99) == nil)
            #expect(try await runs.heartRate(deviceID: "other", sequence: 2) == nil)
        }
    }

    @Test("a runner's newest heart rate is kept with their entry", arguments: Backend.enabled)
    func entryKeepsNewestHeartRate(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, _ throws in
            #expect(try await runs.insertRun(try Self.run("r")))
            var entry = RunEntry(runID: "r", deviceID: "pi-0001", name: "A", showToSpectators: true, enrolledMilliseconds: Self.start)
            #expect(try await runs.enrol(entry) == .enrolled)
            #expect(try await runs.runEntry(runID: "r", deviceID: "pi-0001")?.newestHeartRate == nil)
            entry.newestHeartRate = StoredReadingReference(sequence: 7, placedMilliseconds: Self.start + 7000)
            try await runs.saveRunEntry(entry)
            #expect(try await runs.runEntry(runID: "r", deviceID: "pi-0001")?.newestHeartRate == entry.newestHeartRate)
        }
    }

    @Test("the organiser's reads land in the runner's access log", arguments: Backend.enabled)
    func accessLog(backend: Backend) async throws {
        try await Self.withStores(backend) { runs, _, hall throws in
            try await runs.appendAccessLog(
                AccessLogEntry(
                    id: 0,
                    subject: "device:pi-0001",
                    readerID: "account:olga",
                    readerName: "Olga",
                    readerRole: "organiser",
                    reason: "joined_run",
                    what: "position in the run City 10K",
                    atMilliseconds: Self.start
                )
            )
            let log = try await hall.accessLog(subjects: ["device:pi-0001"], limit: 10)
            #expect(log.map(\.readerName) == ["Olga"])
            #expect(try await runs.accountName(id: "nobody") == nil)
        }
    }
}

extension Run {
    fileprivate func withCode(_ code: String) -> Run {
        var run = self
        run.code = code
        return run
    }
}
