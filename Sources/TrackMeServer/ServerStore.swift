import TrackMeCore

/// What a principal is: who a bearer token or an account belongs to.
public enum Role: String, Hashable, Sendable, Codable, CaseIterable {
    case admin
    case device
    case dispatcher
    /// The person wearing a device (Data4Help).
    case wearer
    /// Someone the wearer asked to look after them.
    case carer
    /// An organisation the wearer consented to (Data4Help third party).
    case thirdParty = "third_party"
    /// A race organiser (Track4Run).
    case organiser
    case fleetOperator = "fleet_operator"
}

/// A token as stored: its public id, the SHA-256 of its secret, and what it may do.
struct StoredToken: Hashable, Sendable {
    var id: String
    var secretHash: String
    var role: Role
    /// The device a device token speaks for; nil for other roles.
    var deviceID: String?
    /// Refused from this wall time on (dispatcher tokens); nil: until revoked (devices).
    var expiresMilliseconds: Int64? = nil
}

/// An enrolled device as the server keeps it.
struct DeviceRow: Hashable, Sendable {
    var deviceID: String
    var person: PersonProfile
    var enrolledMilliseconds: Int64
}

/// Why a reading's wall time is not taken as truth (WIRE.md, "Readings as the server keeps them").
public enum TimeFlag: String, Hashable, Sendable, Codable, CaseIterable {
    /// The device had no wall time at all.
    case noWallClock = "no_wall_clock"
    /// The device's wall clock had not been set by NTP or GPS.
    case untrustedClock = "untrusted_clock"
    /// Stamped later than the server's own time (plus a tolerance).
    case future
    /// Stamped before the device was enrolled.
    case beforeEnrolment = "before_enrolment"
}

/// Which stored readings to list.
struct ReadingQuery: Hashable, Sendable {
    var deviceID: String
    var fromMilliseconds: Int64?
    var toMilliseconds: Int64?
    var kind: WireReading.Kind?
    var afterSequence: Int64
    var limit: Int
}

/// A stored reading as listed.
struct StoredReadingRow: Hashable, Sendable {
    var sequence: Int64
    var body: String
    var placedMilliseconds: Int64
    var receivedMilliseconds: Int64
    var timeFlag: TimeFlag?
}

/// Where one stored reading of a device is: its sequence number, and when it is placed. Ordered
/// by time, then (at the same moment) by sequence number: the later is the newer.
struct StoredReadingReference: Hashable, Sendable, Comparable {
    var sequence: Int64
    var placedMilliseconds: Int64

    /// A reference from nullable columns: nil unless both are there.
    static func stored(sequence: Int64?, placedMilliseconds: Int64?) -> StoredReadingReference? {
        guard let sequence, let placedMilliseconds else { return nil }
        return StoredReadingReference(sequence: sequence, placedMilliseconds: placedMilliseconds)
    }

    static func < (a: StoredReadingReference, b: StoredReadingReference) -> Bool {
        (a.placedMilliseconds, a.sequence) < (b.placedMilliseconds, b.sequence)
    }
}

/// Counts for `/metrics` and `/health`.
struct StoreCounts: Hashable, Sendable {
    var devices: Int64
    var readings: Int64
    var alerts: Int64
    var silentDevices: Int64
}

/// The server's storage outside the rooms that have a store of their own (device intake:
/// `IngestStore`; the dispatcher's desk and feed: `AlertDeskStore`, which the hall's backends
/// still implement). Both implementations (SQLite, PostgreSQL) give the same answers; the
/// shared behaviour suite in TrackMeServerTests runs against each.
///
/// Every method that changes more than one row does so in one transaction: a feed event is appended in the transaction of the change it
/// reports, so the feed never tells of something that was rolled back and never misses what
/// was committed.
protocol ServerStore:
    AccessRoomStore, AuthenticatorStore, HallStore, AlertDeskStore, ContactsRoomStore, PeopleRoomStore, RaceStore, CareRoomStore,
    UndispatchedAlertStore, Sendable
{
    /// A short name for logs: `sqlite:/path` or `postgres://host:port/db`.
    var displayName: String { get }

    /// Creates or upgrades the schema (append-only migrations).
    func migrate() async throws

    /// The per-person keys the store seals contacts, notes and reading bodies with.
    var personKeys: PersonKeys { get }

    /// Seals the contacts, notes, undispatched alerts' updates and reading bodies still in clear;
    /// returns how many values.
    func sealClearPersonalData() async throws -> Int

    func insertToken(_ token: StoredToken, createdMilliseconds: Int64) async throws
    func token(id: String) async throws -> StoredToken?

    /// Enrols a device with its first token; false if the device id is taken.
    func enrolDevice(_ device: DeviceRow, token: StoredToken) async throws -> Bool
    func device(id: String) async throws -> DeviceRow?

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow]
    /// How many rows `readings(query)` would answer (at most its limit), counted without reading
    /// them: what a download costs, known before it starts.
    func readingCount(_ query: ReadingQuery) async throws -> Int

    /// Marks devices not heard from since `lastSeenBefore` as silent, appending one
    /// `device_silent` event each; returns their ids.
    func markSilentDevices(lastSeenBefore: Int64, nowMilliseconds: Int64) async throws -> [String]

    /// Deletes readings filed before the cutoff; alerts are kept. Returns how many went.
    func deleteReadings(placedBefore cutoff: Int64) async throws -> Int

    /// The last wall time the retention job trusted (kept across restarts), or nil.
    func trustedWallTime() async throws -> Int64?
    func setTrustedWallTime(_ milliseconds: Int64) async throws

    /// The database's own consistency check (`PRAGMA quick_check`, or a catalogue and table scan
    /// on PostgreSQL): nil when healthy, else what is wrong.
    func integrityProblem() async -> String?

    /// Whether the database answers and a write would succeed now (`/health`); never throws:
    /// what is wrong is in the answer.
    func readiness(minimumFreeBytes: Int64) async -> StoreReadiness

    /// The device's last heartbeat (JSON as received) and when it was last heard from.
    func deviceContact(id: String) async throws -> (heartbeatJSON: String?, lastSeenMilliseconds: Int64?)

    func counts() async throws -> StoreCounts

    func close() async throws
}

/// What `/health` learns from the database. Each problem is a sentence for the operator.
struct StoreReadiness: Sendable, Equatable {
    var answers = true
    var writable = true
    /// Bytes the server may still write where the database file lives; nil where the server
    /// cannot see the database's disk (PostgreSQL's is the database server's to watch).
    var freeBytes: Int64?
    var problems: [String] = []
}
