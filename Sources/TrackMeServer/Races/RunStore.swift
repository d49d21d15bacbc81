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
    /// The runs of one organiser (all runs for nil), newest start first.
    func runs(organiserAccountID: String?) async throws -> [Run]
    /// Runs whose name or place contains `text` (case-insensitive; every run for nil), newest
    /// start first, at most `limit`.
    func runs(matching text: String?, limit: Int) async throws -> [Run]
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
    /// The run's runners not removed, in enrolment order.
    func runEntries(runID: String) async throws -> [RunEntry]
    /// The entries of a device (for the ingest path: which run a fix belongs to).
    func runEntries(deviceID: String) async throws -> [RunEntry]
    /// Takes a runner who has not checked in off the run.
    func removeRunEntry(runID: String, deviceID: String, atMilliseconds: Int64) async throws -> RemovalOutcome

    /// A device's stored readings of one kind in `[from, to)`, in sequence order (its track).
    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow]
    /// The device's newest heart-rate reading placed in `[from, to)`: (placed ms, bpm).
    func newestHeartRate(deviceID: String, fromMilliseconds: Int64, toMilliseconds: Int64) async throws -> (Int64, Int)?

    /// The name an account goes by in the access log, or nil.
    func accountName(id: String) async throws -> String?
    func appendAccessLog(_ entry: AccessLogEntry) async throws
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
        guard let reading = try? WireCodec.decode(WireReading.self, from: Data(body.utf8)), case .heartRate(let hr) = reading.payload else {
            return nil
        }
        return hr.bpm
    }
}
