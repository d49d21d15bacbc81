import Foundation
import HTTPTypes
import TrackMeCore

/// Reads one person's data for one principal, through `AccessPolicy` only: gathers the facts
/// (the person's devices, their alerts, the consents they gave), asks the policy for the grants,
/// reads no more than they cover, and logs every read that is not the person's own.
///
/// A person is a wearer account; their data is that of the devices linked to it.
struct PersonData: Sendable {
    let store: any PeopleRoomStore
    let configuration: ServerConfiguration
    /// The threads downloads and statistics decode and (on SQLite) read on (`PeopleRoom.heavyWork`).
    let heavyWork: WorkPool
    var policy = AccessPolicy()

    var now: Int64 { configuration.wallClock() }

    struct Person: Sendable {
        var account: Account
        var deviceIDs: [String]
        var subject: AccessPolicy.Subject
        var devices: [DeviceRow]
    }

    /// The wearer behind `id` (`me` is the principal's own account). 404 for anything that is not a wearer.
    func person(_ id: String, principal: Principal) async throws -> Person {
        let accountID = id == "me" ? (principal.accountID ?? "") : id
        guard let account = try await store.account(id: accountID), account.role == .wearer else {
            throw APIError.notFound("no person \(id)")
        }
        let deviceIDs = try await store.linkedDevices(accountID: account.id)
        var spans: [AccessPolicy.AlertSpan] = []
        for alertID in try await store.alertIDs(deviceIDs: deviceIDs) {
            guard let row = try await store.alertRow(id: alertID) else { continue }
            spans.append(Self.span(row))
        }
        let consents = try await store.accessRequests(personID: account.id).compactMap(\.consent)
        let carers = try await store.carerLinks(personID: account.id).map(\.policyCarer)
        var devices: [DeviceRow] = []
        for deviceID in deviceIDs { if let device = try await store.device(id: deviceID) { devices.append(device) } }
        return Person(
            account: account,
            deviceIDs: deviceIDs,
            subject: AccessPolicy.Subject(
                personID: account.id,
                deviceIDs: Set(deviceIDs),
                alerts: spans,
                consents: consents,
                ownerAccountIDs: [account.id],
                carers: carers
            ),
            devices: devices
        )
    }

    static func span(_ row: AlertDeskRow) -> AccessPolicy.AlertSpan {
        AccessPolicy.AlertSpan(
            openedMilliseconds: row.createdMilliseconds,
            closedMilliseconds: row.isOpen ? nil : (row.resolvedMilliseconds ?? row.updatedMilliseconds)
        )
    }

    /// The grants of the principal over the person now; 403 when there are none.
    func grants(_ principal: Principal, _ person: Person) throws -> [AccessPolicy.Grant] {
        let grants = policy.grants(principal, subject: person.subject, now: now)
        guard !grants.isEmpty else {
            throw APIError.forbidden("no access to this person's data now (none granted, revoked, expired or not yet approved)")
        }
        return grants
    }

    /// The grants among `grants` that cover `kind`; 403 when none does (an organisation asking
    /// for a kind the person did not approve is refused, not answered with an empty list).
    func grants(_ grants: [AccessPolicy.Grant], covering kind: PersonDataKind) throws -> [AccessPolicy.Grant] {
        let covering = grants.filter { $0.covers(kind) }
        guard !covering.isEmpty else {
            throw APIError.forbidden("the person has not approved reading their \(kind.rawValue.replacingOccurrences(of: "_", with: " "))")
        }
        return covering
    }

    /// Records a read in the person's access log unless it is their own.
    func log(_ principal: Principal, subject: String, grants: [AccessPolicy.Grant], what: String) async throws {
        try await AccessLog(store: store, wallClock: configuration.wallClock).record(principal, subject: subject, grants: grants, what: what)
    }

    /// Records a read or a change by `principal` in the access log of `subject` (`person:ACCOUNT`
    /// or `device:ID`), for a reason given as text.
    func log(_ principal: Principal, subject: String, reason: String, what: String) async throws {
        try await AccessLog(store: store, wallClock: configuration.wallClock).record(principal, subject: subject, reason: reason, what: what)
    }

    /// What the access log calls a reader that has no account (a token), in place of its id.
    static func readerName(_ role: Role) -> String {
        switch role {
        case .admin: "The administrator"
        case .device: "A device"
        case .dispatcher: "A dispatcher"
        case .wearer: "A wearer"
        case .carer: "A carer"
        case .thirdParty: "An organisation"
        case .organiser: "A race organiser"
        case .fleetOperator: "A fleet operator"
        }
    }

    /// The stored readings of one device of `kind` in `[from, to)` that some grant covers, in
    /// sequence order; at most `limit` (then `truncated`).
    func readings(
        deviceID: String,
        kind: PersonDataKind,
        from: Int64?,
        to: Int64?,
        grants: [AccessPolicy.Grant],
        afterSequence: Int64 = 0,
        limit: Int
    ) async throws -> (rows: [StoredReadingRow], truncated: Bool) {
        let wire: WireReading.Kind = kind == .position ? .position : .heartRate
        var rows: [StoredReadingRow] = []
        var seen = Set<Int64>()
        for grant in grants where grant.covers(kind) {
            let lower = [from, grant.fromMilliseconds].compactMap { $0 }.max()
            let upper = [to, grant.untilMilliseconds].compactMap { $0 }.min()
            if let lower, let upper, lower >= upper { continue }
            var after = afterSequence
            let pageSize = configuration.maxPageSize
            while rows.count <= limit {
                // The views read up to `limit` readings: they stop between pages when their
                // client hung up (`HangUpWatch`).
                try Task.checkCancellation()
                let page = try await store.readings(
                    ReadingQuery(
                        deviceID: deviceID,
                        fromMilliseconds: lower,
                        toMilliseconds: upper,
                        kind: wire,
                        afterSequence: after,
                        limit: pageSize
                    )
                )
                for row in page where seen.insert(row.sequence).inserted { rows.append(row) }
                guard page.count == pageSize, let last = page.last else { break }
                after = last.sequence
            }
        }
        rows.sort { $0.sequence < $1.sequence }
        let truncated = rows.count > limit
        return (Array(rows.prefix(limit)), truncated)
    }

    /// The windows in `[from, to)` that the grants covering `kind` open, merged where they
    /// overlap, in time order (nil: unbounded on that side).
    static func windows(_ kind: PersonDataKind, from: Int64?, to: Int64?, grants: [AccessPolicy.Grant]) -> [(lower: Int64?, upper: Int64?)] {
        var windows: [(lower: Int64?, upper: Int64?)] = []
        for grant in grants where grant.covers(kind) {
            let lower = [from, grant.fromMilliseconds].compactMap { $0 }.max()
            let upper = [to, grant.untilMilliseconds].compactMap { $0 }.min()
            if let lower, let upper, lower >= upper { continue }
            windows.append((lower, upper))
        }
        windows.sort { ($0.lower ?? .min) < ($1.lower ?? .min) }
        var merged: [(lower: Int64?, upper: Int64?)] = []
        for window in windows {
            if let last = merged.last, last.upper.map({ $0 >= (window.lower ?? .min) }) ?? true {
                merged[merged.count - 1].upper = last.upper.flatMap { upper in window.upper.map { max(upper, $0) } }
            } else {
                merged.append(window)
            }
        }
        return merged
    }

    /// Hands `body` the readings of `kind` of each of the person's devices that a grant covers
    /// in `[from, to)`, one store page at a time, each device's in sequence order: a download or
    /// a statistic over years of 1 Hz data holds one page, never the whole. Stops between pages
    /// when the task is cancelled (the client went away).
    func forEachPage(
        _ person: Person,
        kind: PersonDataKind,
        from: Int64?,
        to: Int64?,
        grants: [AccessPolicy.Grant],
        _ body: (_ deviceID: String, _ page: [StoredReadingRow]) async throws -> Void
    ) async throws {
        for deviceID in person.deviceIDs {
            for window in Self.windows(kind, from: from, to: to, grants: grants) {
                try await forEachPage(deviceID: deviceID, kind: kind, from: window.lower, to: window.upper) { page in
                    try await body(deviceID, page)
                }
            }
        }
    }

    /// One device's readings of `kind` in `[from, to)`, a store page at a time, in sequence
    /// order. The caller has decided that a grant covers the span.
    private func forEachPage(
        deviceID: String,
        kind: PersonDataKind,
        from: Int64?,
        to: Int64?,
        _ body: (_ page: [StoredReadingRow]) async throws -> Void
    ) async throws {
        let wire: WireReading.Kind = kind == .position ? .position : .heartRate
        let pageSize = configuration.maxPageSize
        var after: Int64 = 0
        while true {
            try Task.checkCancellation()
            let page = try await heavyReadings(
                ReadingQuery(deviceID: deviceID, fromMilliseconds: from, toMilliseconds: to, kind: wire, afterSequence: after, limit: pageSize)
            )
            if !page.isEmpty { try await body(page) }
            guard page.count == pageSize, let last = page.last else { break }
            after = last.sequence
        }
    }

    /// How a statistics request reads the person's heart rate over `[from, to)` within the
    /// grants: whole days that are over from kept summaries (`HeartRateDays`), a whole day
    /// without one that stands summarised once from its readings and kept, and the partial days
    /// at the span's ends and the days too recent to keep read each time.
    struct StatisticsPlan: Sendable {
        var limits: HeartRateLimits
        var kept: [(day: Int64, figures: DailyStatistics.Accumulator.Day)] = []
        /// A device's days to summarise, in one pass over the span from the first to the last.
        var summarise: [(deviceID: String, days: [Int64])] = []
        var read: [(deviceID: String, span: Range<Int64>)] = []

        /// The readings the plan reads: the spans of the days it summarises and its pieces.
        var readSpans: [(deviceID: String, span: Range<Int64>)] {
            summarise.compactMap { item in Self.span(item.days).map { (item.deviceID, $0) } } + read
        }

        /// From the first of `days` to the end of the last: one pass reads them all.
        static func span(_ days: [Int64]) -> Range<Int64>? {
            guard let first = days.first, let last = days.last else { return nil }
            return (first * GroupFigures.dayMilliseconds)..<((last + 1) * GroupFigures.dayMilliseconds)
        }
    }

    func statisticsPlan(_ person: Person, from: Int64, to: Int64, grants: [AccessPolicy.Grant]) async throws -> StatisticsPlan {
        var plan = StatisticsPlan(limits: limits(person))
        for deviceID in person.deviceIDs {
            for window in Self.windows(.heartRate, from: from, to: to, grants: grants) {
                let cut = HeartRateDays.plan(from: window.lower ?? from, to: window.upper ?? to, now: now)
                if let keptDays = cut.keptDays {
                    var standing: [Int64: DailyStatistics.Accumulator.Day] = [:]
                    for row in try await store.heartRateDays(deviceID: deviceID, days: keptDays) where HeartRateDays.stands(row, limits: plan.limits)
                    {
                        if let summary = row.summary, let figures = HeartRateDays.decode(summary) { standing[row.day] = figures }
                    }
                    var missing: [Int64] = []
                    for day in keptDays {
                        if let figures = standing[day] { plan.kept.append((day, figures)) } else { missing.append(day) }
                    }
                    if !missing.isEmpty { plan.summarise.append((deviceID, missing)) }
                }
                plan.read += cut.readPieces.map { (deviceID, $0) }
            }
        }
        return plan
    }

    /// How many readings the plan reads, counted in the store and no further than `atMost`.
    func readingCost(_ plan: StatisticsPlan, atMost: Int64) async throws -> Int64 {
        try await readingCost(
            plan.readSpans.map { deviceID, span in
                ReadingQuery(
                    deviceID: deviceID,
                    fromMilliseconds: span.lowerBound,
                    toMilliseconds: span.upperBound,
                    kind: .heartRate,
                    afterSequence: 0,
                    limit: 0
                )
            },
            atMost: atMost
        )
    }

    /// How many readings `queries` select together, counted query by query and no further than
    /// `atMost` (each query's limit is what is left of it).
    private func readingCost(_ queries: [ReadingQuery], atMost: Int64) async throws -> Int64 {
        var total: Int64 = 0
        for var query in queries {
            guard total < atMost else { break }
            query.limit = Int(atMost - total)
            total += Int64(try await heavyReadingCount(query))
        }
        return total
    }

    /// What a statistics request read: the day figures, and how many device-days came from kept
    /// summaries and how many were summarised now from their readings.
    struct DayFigures: Sendable {
        var days: DailyStatistics.Accumulator
        var keptDaysUsed = 0
        var daysSummarised = 0
    }

    func dayFigures(_ plan: StatisticsPlan) async throws -> DayFigures {
        var figures = DayFigures(days: DailyStatistics.Accumulator(limits: plan.limits))
        for (day, kept) in plan.kept { figures.days.merge(dayNumber: day, kept) }
        figures.keptDaysUsed = plan.kept.count
        for (deviceID, days) in plan.summarise {
            guard let span = StatisticsPlan.span(days) else { continue }
            // The pass's time is taken before its first read: a reading arriving late during it
            // marks the day after this time, so the summary kept here does not stand (`HeartRateDays`).
            let pass = now
            var device = DailyStatistics.Accumulator(limits: plan.limits)
            // One pass from the first missing day to the last; days between them that stand are
            // read again but only the missing ones are taken.
            try await forEachPage(deviceID: deviceID, kind: .heartRate, from: span.lowerBound, to: span.upperBound) { page in
                device = try await counted(page, deviceID: deviceID, into: device)
            }
            var summaries: [Int64: String] = [:]
            for day in days {
                let counted = device.figures(ofDay: day) ?? DailyStatistics.Accumulator.Day()
                figures.days.merge(dayNumber: day, counted)
                summaries[day] = try HeartRateDays.encode(counted)
            }
            figures.daysSummarised += days.count
            try await store.saveHeartRateDays(deviceID: deviceID, summaries, limits: plan.limits, computedMilliseconds: pass)
        }
        for (deviceID, span) in plan.read {
            try await forEachPage(deviceID: deviceID, kind: .heartRate, from: span.lowerBound, to: span.upperBound) { page in
                figures.days = try await counted(page, deviceID: deviceID, into: figures.days)
            }
        }
        return figures
    }

    /// How many readings of `kinds` a download or statistic over `[from, to)` would read (each
    /// device, each window a grant opens), counted in the store and no further than `atMost`:
    /// the request's cost, known before any of it is read.
    func readingCost(
        _ person: Person,
        kinds: [PersonDataKind],
        from: Int64?,
        to: Int64?,
        grants: [AccessPolicy.Grant],
        atMost: Int64
    ) async throws -> Int64 {
        var queries: [ReadingQuery] = []
        for kind in kinds {
            let wire: WireReading.Kind = kind == .position ? .position : .heartRate
            for deviceID in person.deviceIDs {
                for window in Self.windows(kind, from: from, to: to, grants: grants) {
                    queries.append(
                        ReadingQuery(
                            deviceID: deviceID,
                            fromMilliseconds: window.lower,
                            toMilliseconds: window.upper,
                            kind: wire,
                            afterSequence: 0,
                            limit: 0
                        )
                    )
                }
            }
        }
        return try await readingCost(queries, atMost: atMost)
    }

    /// A page of readings as a download or statistic reads it: on SQLite, read and opened on
    /// the heavy requests' own threads (the database's work then runs at their priority: GRDB
    /// runs a blocking read on the calling thread; opening a page of sealed rows is a page of
    /// decryptions), and handed back; elsewhere, the store's read.
    func heavyReadings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        guard let blocking = store as? any BlockingReadingStore else { return try await store.readings(query) }
        let rows = try await heavyWork.run(busy: Self.heavyWorkBusy) { try blocking.sealedReadingRows(query) }
        guard rows.contains(where: { PersonKeys.isSealed($0.body) }) else { return rows }
        let opener = try await blocking.personKeys.readingOpener(owner: query.deviceID)
        return try await heavyWork.run(busy: Self.heavyWorkBusy) { try opener.open(rows) }
    }

    /// What a download or statistic will read, counted as `heavyReadings` reads.
    func heavyReadingCount(_ query: ReadingQuery) async throws -> Int {
        guard let blocking = store as? any BlockingReadingStore else { return try await store.readingCount(query) }
        return try await heavyWork.run(busy: Self.heavyWorkBusy) { try blocking.readingCountOnThisThread(query) }
    }

    /// A page of heart rate decoded and counted into `days`, on the heavy requests' threads.
    func counted(_ page: [StoredReadingRow], deviceID: String, into days: DailyStatistics.Accumulator) async throws -> DailyStatistics.Accumulator {
        try await onHeavyThreads {
            var days = days
            for row in page {
                if let sample = Self.heartRate(row, deviceID: deviceID) { days.add(sample) }
            }
            return days
        }
    }

    /// `work` (a page decoded, counted, turned into text) on the heavy requests' own threads
    /// (`PeopleRoom.heavyWork`), not the cooperative pool that takes alerts in.
    func onHeavyThreads<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await heavyWork.run(busy: Self.heavyWorkBusy, work)
    }

    static var heavyWorkBusy: APIError {
        var error = APIError(
            status: .serviceUnavailable,
            code: .unavailable,
            message: "the server is busy with other downloads, statistics and group queries: try again shortly"
        )
        error.retryAfterSeconds = 5
        return error
    }

    static func heartRate(_ row: StoredReadingRow, deviceID: String) -> HeartRateSample? {
        guard let wire = try? WireCodec.decodeReading(row.body), case .heartRate(let hr) = wire.payload else {
            return nil
        }
        return HeartRateSample(atMilliseconds: row.placedMilliseconds, bpm: hr.bpm, deviceID: deviceID, contact: hr.contact != .notDetected)
    }

    static func position(_ row: StoredReadingRow, deviceID: String) -> PositionSample? {
        guard let wire = try? WireCodec.decodeReading(row.body), case .position(let fix) = wire.payload,
            let latitude = fix.latitude, let longitude = fix.longitude
        else { return nil }
        return PositionSample(atMilliseconds: row.placedMilliseconds, latitude: latitude, longitude: longitude, deviceID: deviceID)
    }

    func heartRate(
        _ person: Person,
        from: Int64?,
        to: Int64?,
        grants: [AccessPolicy.Grant],
        limit: Int
    ) async throws -> (samples: [HeartRateSample], truncated: Bool) {
        var samples: [HeartRateSample] = []
        var truncated = false
        for deviceID in person.deviceIDs {
            let (rows, more) = try await readings(deviceID: deviceID, kind: .heartRate, from: from, to: to, grants: grants, limit: limit)
            truncated = truncated || more
            samples += rows.compactMap { Self.heartRate($0, deviceID: deviceID) }
        }
        samples.sort { $0.atMilliseconds < $1.atMilliseconds }
        return (samples, truncated)
    }

    func positions(
        _ person: Person,
        from: Int64?,
        to: Int64?,
        grants: [AccessPolicy.Grant],
        limit: Int
    ) async throws -> (samples: [PositionSample], truncated: Bool) {
        var samples: [PositionSample] = []
        var truncated = false
        for deviceID in person.deviceIDs {
            let (rows, more) = try await readings(deviceID: deviceID, kind: .position, from: from, to: to, grants: grants, limit: limit)
            truncated = truncated || more
            samples += rows.compactMap { Self.position($0, deviceID: deviceID) }
        }
        samples.sort { $0.atMilliseconds < $1.atMilliseconds }
        return (samples, truncated)
    }

    /// The person's alerts that a grant covers (by when they opened), newest first: those sent
    /// to a dispatcher and the rules' alerts kept while the person was not enrolled in
    /// AutomatedSOS (`dispatched` false). Every one (a download).
    func alerts(_ person: Person, grants: [AccessPolicy.Grant]) async throws -> [PersonAlert] {
        try await alerts(person, grants: grants, page: nil).alerts
    }

    /// One page of them: at most `page.limit` from each table after the cursor, merged in one
    /// order (time, then alert id, both descending), so the store reads no more than a page
    /// plus one whatever the person's history. An alert outside every grant takes its place in
    /// the page unshown, so a page may hold fewer than the limit while more follow.
    func alerts(_ person: Person, grants: [AccessPolicy.Grant], page: PageRequest?) async throws -> (alerts: [PersonAlert], next: String?) {
        let before = try page?.after.map { try $0.timeAndID() }
        let limit = page?.fetchLimit
        let desk = try await store.alertRows(
            deviceIDs: person.deviceIDs,
            before: before.map { ($0.milliseconds, $0.id) },
            limit: limit
        )
        let dispatched = Set(desk.map(\.alertID))
        let kept = try await store.undispatchedAlerts(deviceIDs: person.deviceIDs, before: before.map { ($0.milliseconds, $0.id) }, limit: limit)
        // A kept alert handed to the desk since is listed once, as the desk's.
        var merged = desk.map { PersonAlert(AlertSummary($0)) } + kept.filter { !dispatched.contains($0.alertID) }.map(PersonAlert.init)
        merged.sort { a, b in
            a.createdMilliseconds != b.createdMilliseconds ? a.createdMilliseconds > b.createdMilliseconds : a.alertID > b.alertID
        }
        var next: String?
        if let page {
            (merged, next) = page.cut(Array(merged.prefix(page.fetchLimit))) { PageCursor(String($0.createdMilliseconds), $0.alertID) }
        }
        let shown = merged.filter { alert in grants.contains { $0.covers(.alerts, at: alert.createdMilliseconds) } }
        return (shown, next)
    }

    /// The heart-rate limits of the person (their first device's profile).
    func limits(_ person: Person) -> HeartRateLimits {
        HeartRateLimits(profile: person.devices.first?.person ?? PersonProfile(name: person.account.displayName, age: 40))
    }
}

/// An alert as the person's pages show it: what, when, where, and how it ended.
struct PersonAlert: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var kind: AlertKind?
    var state: String
    var open: Bool
    var createdMilliseconds: Int64
    var acknowledgedMilliseconds: Int64?
    var outcome: AlertOutcome?
    var resolvedMilliseconds: Int64?
    var latitude: Double?
    var longitude: Double?
    /// False for a rule's alert of a person not enrolled in AutomatedSOS: kept for the person
    /// and their carers, never sent to a dispatcher or told to the contacts.
    var dispatched = true
    var reason: String?

    init(_ summary: AlertSummary) {
        alertID = summary.alertID
        deviceID = summary.deviceID
        kind = summary.kind
        state = summary.state
        open = summary.open
        createdMilliseconds = summary.createdMilliseconds
        acknowledgedMilliseconds = summary.acknowledgedMilliseconds
        outcome = summary.outcome
        resolvedMilliseconds = summary.resolvedMilliseconds
        latitude = summary.record?.position?.fix.latitude
        longitude = summary.record?.position?.fix.longitude
        reason = summary.record?.reason
    }

    init(_ kept: UndispatchedAlert) {
        let record = kept.record
        alertID = kept.alertID
        deviceID = kept.deviceID
        kind = kept.kind
        state = kept.state.rawValue
        open = kept.state.isOpen
        createdMilliseconds = kept.raisedMilliseconds
        resolvedMilliseconds = kept.state.isOpen ? nil : kept.updatedMilliseconds
        latitude = record?.position?.fix.latitude
        longitude = record?.position?.fix.longitude
        dispatched = false
        reason = kept.reason
    }

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case kind, state, open
        case createdMilliseconds = "created_ms"
        case acknowledgedMilliseconds = "acknowledged_ms"
        case outcome
        case resolvedMilliseconds = "resolved_ms"
        case latitude = "lat"
        case longitude = "lon"
        case dispatched, reason
    }
}

/// A store whose heavy reads can run on the calling thread (SQLite: GRDB runs a blocking read
/// there), so that a download's or a group query's database work runs on the heavy requests'
/// niced threads (`PeopleRoom.heavyWork`) and not at the priority of the threads that take
/// alerts in. Reading bodies come sealed; the caller opens them.
protocol BlockingReadingStore: Sendable {
    var personKeys: PersonKeys { get }
    func sealedReadingRows(_ query: ReadingQuery) throws -> [StoredReadingRow]
    func readingCountOnThisThread(_ query: ReadingQuery) throws -> Int
    func groupTotalsOnThisThread(_ cell: GroupFigures.Cell) throws -> GroupFigures.Totals
    func groupRowsOnThisThread(in cell: GroupFigures.Cell, atMost: Int64) throws -> Int64
    func groupPeopleOnThisThread(in cell: GroupFigures.Cell, notIn other: GroupFigures.Cell) throws -> Int
}

extension SQLiteServerStore: BlockingReadingStore {}
