import Foundation
import TrackMeCore

/// What the runs room may do to the database, and nothing more: runs, their entries, a runner's
/// positions and heart rate within a run, and the access log entries of the organiser's reads.
/// Only `RunsRoom` and `RaceIngest` hold it. Both implementations (`SQLiteRunStore`,
/// `PostgresRunStore`) give the same answers; `RunStoreContractTests` runs the same cases on each.
protocol RunStore: Sendable {
    /// False if the code is taken.
    func insertRun(_ run: Run) async throws -> Bool
    func run(id: String) async throws -> Run?
    func run(code: String) async throws -> Run?
    /// One page of the runs `query` selects: newest start first, the id (descending) breaking
    /// ties, past `after` (the start and id of the previous page's last run), at most `limit`.
    func runs(_ query: RunListQuery, after: (startMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Run]
    /// False if there is no such run.
    func setEnrolmentOpen(runID: String, open: Bool) async throws -> Bool
    /// Closes the run at `atMilliseconds` (its standings final, enrolment shut); a run closed
    /// before keeps its first close. False if there is no such run.
    func closeRun(runID: String, atMilliseconds: Int64) async throws -> Bool

    /// Enters a runner, unless the run's participant cap is reached (counted over the runners
    /// not removed, atomically with the insert) or they are entered already.
    func enrol(_ entry: RunEntry) async throws -> EnrolmentOutcome
    /// The entry of `(run, device)`, removed or not.
    func runEntry(runID: String, deviceID: String) async throws -> RunEntry?
    /// Inserts or replaces the entry of `(run_id, device_id)`.
    func saveRunEntry(_ entry: RunEntry) async throws
    /// The run's runners not removed, in enrolment order: the whole run, for its standings.
    func runEntries(runID: String) async throws -> [RunEntry]
    /// One page of the run's runners not removed, in standing order (`RunStanding`), past
    /// `after`, at most `limit`.
    func runEntries(runID: String, after: RunStanding?, limit: Int) async throws -> [RunEntry]
    /// How many runners the run has, not counting those removed.
    func runnerCount(runID: String) async throws -> Int
    /// The entries of a device (for the ingest path: which run a fix belongs to).
    func runEntries(deviceID: String) async throws -> [RunEntry]
    /// Takes a runner who has not checked in off the run.
    func removeRunEntry(runID: String, deviceID: String, atMilliseconds: Int64) async throws -> RemovalOutcome

    /// A device's stored readings of one kind in `[from, to)`, in sequence order (its track).
    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow]
    /// The beats per minute of the device's stored heart-rate reading `sequence`; nil when that
    /// reading is gone (retention, erasure) or is not a heart rate.
    func heartRate(deviceID: String, sequence: Int64) async throws -> Int?

    /// The name an account goes by in the access log, or nil.
    func accountName(id: String) async throws -> String?
    func appendAccessLog(_ entry: AccessLogEntry) async throws
}

/// Which runs a list holds: one organiser's (everyone's for nil), those whose name or place
/// contains `text` (case-insensitive, every run for nil), those of one status at `now` (any for
/// nil). The store selects them, so that a page is full whatever the filter leaves out.
struct RunListQuery: Hashable, Sendable {
    var organiserAccountID: String?
    var text: String?
    var status: Run.Status?
    var now: Int64

    /// A run's status in SQL, as `Run.status(now:)` decides it, with `now` the placeholder that
    /// binds the time (SQLite's `?` twice, PostgreSQL's `$n` once).
    static func statusSQL(now: String) -> String {
        "CASE WHEN closed_ms IS NOT NULL OR end_ms < \(now) THEN 'finished' WHEN start_ms > \(now) THEN 'upcoming' ELSE 'live' END"
    }
}

/// Where a runner stands, as `RaceStanding.ranked` orders a run: finished runners first, the
/// earlier finish first, then the farther, then the earlier last fix, then the device id. The
/// stores page the organiser's list of runners by it, so each part is a column's value with the
/// missing ones replaced as the ranking treats them, and the distance negated so that every part
/// ascends; `rank` is the runner's place, which numbers the next page. While the race is live
/// runners overtake between two pages: each page is the standings as they were when it was read,
/// as a refresh of the organiser's page is.
struct RunStanding: Hashable, Sendable {
    var rank: Int
    var unfinished: Int64
    var finishMilliseconds: Int64
    var negatedDistance: Double
    var fixMilliseconds: Int64
    var deviceID: String

    init(_ entry: RunEntry, rank: Int) {
        self.rank = rank
        unfinished = entry.finishMilliseconds == nil ? 1 : 0
        finishMilliseconds = entry.finishMilliseconds ?? 0
        negatedDistance = -(entry.distanceMetres ?? -1)
        fixMilliseconds = entry.fixMilliseconds ?? .max
        deviceID = entry.deviceID
    }

    /// The standing key in SQL, in `RaceStanding.ranked`'s order, every part ascending.
    static let keySQL =
        "(CASE WHEN finish_ms IS NULL THEN 1 ELSE 0 END), coalesce(finish_ms, 0), -coalesce(distance_m, -1.0), coalesce(fix_ms, 9223372036854775807), device_id"

    var cursor: PageCursor {
        var cursor = PageCursor()
        cursor.parts = [String(rank), String(unfinished), String(finishMilliseconds), String(negatedDistance), String(fixMilliseconds), deviceID]
        return cursor
    }

    /// The standing a cursor of this list names; any other cursor is a 400.
    init(_ cursor: PageCursor) throws {
        let parts = cursor.parts
        guard parts.count == 6, let rank = Int(parts[0]), rank >= 1, let unfinished = Int64(parts[1]), (0...1).contains(unfinished),
            let finish = Int64(parts[2]), let distance = Double(parts[3]), distance.isFinite, let fix = Int64(parts[4]), !parts[5].isEmpty
        else {
            throw APIError.invalid("after", "not a cursor of this list: pass the previous page's next unchanged")
        }
        self.rank = rank
        self.unfinished = unfinished
        finishMilliseconds = finish
        negatedDistance = distance
        fixMilliseconds = fix
        deviceID = parts[5]
    }
}

enum EnrolmentOutcome: Hashable, Sendable {
    case enrolled
    /// The run has as many runners as its cap.
    case full
    /// The device was entered already (its entry is unchanged).
    case alreadyEntered
}

enum RemovalOutcome: Hashable, Sendable {
    case removed
    /// A runner who checked in runs; they are not removed.
    case checkedIn
    case notFound
}

extension RunStore {
    /// Decodes a heart-rate reading's body for its bpm.
    static func bpm(ofBody body: String) -> Int? {
        guard let reading = try? WireCodec.decodeReading(body), case .heartRate(let hr) = reading.payload else {
            return nil
        }
        return hr.bpm
    }
}
