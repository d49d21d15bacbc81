/// A third party's request for one person's data, and, once approved, the consent it became.
struct AccessRequest: Hashable, Sendable {
    enum Status: String, Codable, Hashable, Sendable {
        case pending
        case approved
        case refused
        case revoked
    }

    var id: String
    var organisationID: String
    /// The wearer account the data belongs to.
    var personID: String
    var kinds: Set<PersonDataKind>
    /// How long access lasts once approved.
    var days: Int
    /// The earliest data asked for; nil: from the approval on (new data only).
    var dataFromMilliseconds: Int64?
    var purpose: String
    var status: Status
    var requestedMilliseconds: Int64
    var answeredMilliseconds: Int64?
    /// Data from here on may be read (set at approval).
    var grantedFromMilliseconds: Int64?
    /// Access ends by itself here (set at approval).
    var expiresMilliseconds: Int64?
    var endedMilliseconds: Int64?
    /// Who ended it: `person` or `organisation`.
    var endedBy: String?

    /// A request unanswered this long is refused.
    static let answerWithinMilliseconds: Int64 = 3 * 86_400_000

    /// The status as it stands at `now` on the injected clock: a pending request past its 3
    /// days is refused, an approved one past its expiry has expired.
    func effectiveStatus(now: Int64) -> String {
        switch status {
        case .pending:
            return now >= requestedMilliseconds + Self.answerWithinMilliseconds ? "refused_unanswered" : "pending"
        case .approved:
            if let expires = expiresMilliseconds, now >= expires { return "expired" }
            return "approved"
        case .refused: return "refused"
        case .revoked: return "revoked"
        }
    }

    /// As `AccessPolicy` reads it.
    var consent: AccessPolicy.Consent? {
        guard status == .approved || status == .revoked, let from = grantedFromMilliseconds, let expires = expiresMilliseconds else { return nil }
        return AccessPolicy.Consent(
            accountID: organisationID,
            fromMilliseconds: from,
            untilMilliseconds: expires,
            withdrawn: status == .revoked,
            kinds: Set(kinds.map(\.rawValue))
        )
    }
}

/// One read of a person's data by someone else than the person.
struct AccessLogEntry: Codable, Hashable, Sendable {
    var id: Int64
    /// `person:ACCOUNT` or `device:ID`.
    var subject: String
    var readerID: String
    var readerName: String
    var readerRole: String
    var reason: String
    var what: String
    var atMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case id, subject
        case readerID = "reader_id"
        case readerName = "reader_name"
        case readerRole = "reader_role"
        case reason, what
        case atMilliseconds = "at_ms"
    }
}

/// An answered group query as kept for the differencing check.
struct AnsweredGroup: Hashable, Sendable {
    var organisationID: String
    var cell: GroupFigures.Cell
    var people: Int
    var atMilliseconds: Int64
}

enum LinkOutcome: Hashable, Sendable {
    case linked
    case alreadyLinked
    /// The device is another wearer's.
    case linkedToAnother
}

/// People's data (Data4Help), on both backends.
protocol PeopleStore: CarerStore, AccessLogStore, Sendable {
    func linkDevice(accountID: String, deviceID: String, atMilliseconds: Int64) async throws -> LinkOutcome
    func linkedDevices(accountID: String) async throws -> [String]
    func wearerAccount(deviceID: String) async throws -> String?
    /// Ids of every alert of these devices, newest first.
    func alertIDs(deviceIDs: [String]) async throws -> [String]
    /// The highest stored reading sequence of the device (0 if none).
    func latestReadingSequence(deviceID: String) async throws -> Int64

    func insertAccessRequest(_ request: AccessRequest) async throws
    func accessRequest(id: String) async throws -> AccessRequest?
    /// A person's requests, newest first (the id breaking ties), after `before`, at most `limit`
    /// (nil: every one, which the access policy reads for the consents).
    func accessRequests(personID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest]
    /// An organisation's requests, in the same order and pages.
    func accessRequests(organisationID: String, before: (requestedMilliseconds: Int64, id: String)?, limit: Int?) async throws -> [AccessRequest]
    /// Writes `request` only if the stored one still has `expected` status; false otherwise.
    func updateAccessRequest(_ request: AccessRequest, expected: AccessRequest.Status) async throws -> Bool

    /// The log's entries about these subjects, newest first, with ids below `beforeID` (nil:
    /// from the newest), at most `limit`: one page, bounded in the query.
    func accessLog(subjects: [String], beforeID: Int64?, limit: Int) async throws -> [AccessLogEntry]

    /// Inserts or replaces these person-days.
    func upsertPersonDays(_ days: [PersonDay]) async throws
    func rollupThroughDay() async throws -> Int?
    func setRollupThroughDay(_ day: Int) async throws
    /// Every device with its person's age (enrolled profile) and wearer account, for the roll-up.
    func devicesForRollup() async throws -> [(deviceID: String, person: String, wearer: String?)]
    func groupTotals(_ cell: GroupFigures.Cell) async throws -> GroupFigures.Totals
    /// How many person-days lie in `cell`, counted no further than `atMost`: what one scan of the
    /// cell reads, for the reading budget.
    func groupRows(in cell: GroupFigures.Cell, atMost: Int64) async throws -> Int64
    /// Distinct people with a person-day in `cell` and not in `other`.
    func groupPeople(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) async throws -> Int
    func answeredGroups() async throws -> [AnsweredGroup]
    func recordAnsweredGroup(_ group: AnsweredGroup) async throws
    /// The benchmark's baseline: the plain aggregate SQL over the same rows, nothing else.
    func plainGroupAggregate(_ cell: GroupFigures.Cell) async throws -> (people: Int, readings: Int64, sum: Int64)
    /// The benchmark's population: `people` people, `days` days each from `firstDay`, generated
    /// in the database.
    func seedPersonDays(people: Int, days: Int, firstDay: Int) async throws
    /// Every device's counters of one UTC day (`DeviceDay`).
    func deviceDays(day: Int) async throws -> [(deviceID: String, day: DeviceDay)]
    /// The alerts opened in `[from, to)` (ms), for the group figures' counts by kind.
    func alertRows(createdFrom from: Int64, to: Int64) async throws -> [AlertDeskRow]
    /// For the benchmark: `devices` enrolled devices `sim-N` of made-up people, each with
    /// counters for `days` days from `firstDay`.
    func seedDeviceDays(devices: Int, days: Int, firstDay: Int) async throws
}

extension PeopleStore {
    /// Every request made to the person (the consents the access policy judges by).
    func accessRequests(personID: String) async throws -> [AccessRequest] {
        try await accessRequests(personID: personID, before: nil, limit: nil)
    }

    /// The newest `limit` entries about these subjects.
    func accessLog(subjects: [String], limit: Int) async throws -> [AccessLogEntry] {
        try await accessLog(subjects: subjects, beforeID: nil, limit: limit)
    }
}
