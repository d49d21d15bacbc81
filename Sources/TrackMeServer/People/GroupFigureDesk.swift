import Foundation
import TrackMeCore

/// Answers group queries over the daily person summaries (`person_days`), applying the rules of
/// `GroupFigures`, and keeps the summaries up to date from the readings (`rollUp`).
struct GroupFigureDesk: Sendable {
    let store: any PeopleRoomStore
    let wallClock: @Sendable () -> Int64
    /// Where a request's scans of the summaries run when the store can read on the calling
    /// thread (SQLite): the heavy requests' own threads, at their priority, so that a group
    /// query's seconds of scanning take no thread intake needs, and a scan still waiting for a
    /// thread is dropped when its client hangs up (`WorkPool.run`). A scan already running
    /// finishes. Nil (the roll-up, benchmarks) or PostgreSQL: the store's own reads.
    var heavyWork: WorkPool? = nil
    var rules = GroupFigures()

    /// Snaps, counts, checks the size and the difference to every earlier overlapping answer,
    /// and answers (recording the group) or throws `GroupFigures.Refusal`. It reads the summaries
    /// as they are: the roll-up is the server's hourly job (`rollUp`), never a request's work, so
    /// the first query of a day costs what any other does.
    ///
    /// With a `budget`, the answer is charged to the asking principal before the totals are read
    /// (`cost`): 429 with `Retry-After` past it, nothing read.
    func answer(_ query: GroupFigures.Query, organisationID: String, budget: Budget? = nil) async throws -> GroupFigures.Answer {
        let cell = try rules.snap(query)
        let overlapping = try await store.answeredGroups().filter { $0.cell.overlaps(cell) }
        if let budget {
            let rows = try await scan(
                onThread: { try $0.groupRowsOnThisThread(in: cell, atMost: budget.ceiling) },
                elsewhere: { try await store.groupRows(in: cell, atMost: budget.ceiling) }
            )
            try budget.charge(Self.cost(rows: rows, differencing: overlapping.count(where: { $0.cell != cell }), ceiling: budget.ceiling))
        }
        let totals = try await scan(onThread: { try $0.groupTotalsOnThisThread(cell) }, elsewhere: { try await store.groupTotals(cell) })
        try rules.checkSize(people: totals.people)
        for earlier in overlapping {
            guard earlier.cell != cell else {
                // The same group asked again after late readings or an erasure changed who is
                // in it: the difference between the two answers would describe the people who
                // came or went, so it is held to the same rule as two overlapping groups.
                let grown = max(0, totals.people - earlier.people)
                let shrunk = max(0, earlier.people - totals.people)
                try rules.checkDifference(onlyInNew: grown, onlyInEarlier: shrunk)
                continue
            }
            let onlyNew = try await scan(
                onThread: { try $0.groupPeopleOnThisThread(in: cell, notIn: earlier.cell) },
                elsewhere: { try await store.groupPeople(in: cell, notIn: earlier.cell) }
            )
            let onlyEarlier = try await scan(
                onThread: { try $0.groupPeopleOnThisThread(in: earlier.cell, notIn: cell) },
                elsewhere: { try await store.groupPeople(in: earlier.cell, notIn: cell) }
            )
            try rules.checkDifference(onlyInNew: onlyNew, onlyInEarlier: onlyEarlier)
        }
        try await store.recordAnsweredGroup(
            AnsweredGroup(organisationID: organisationID, cell: cell, people: totals.people, atMilliseconds: wallClock())
        )
        return rules.answer(totals, group: cell)
    }

    /// A scan of the summaries: on the heavy threads where the store reads on its caller's
    /// thread, else the store's read.
    private func scan<T: Sendable>(
        onThread: @escaping @Sendable (any BlockingReadingStore) throws -> T,
        elsewhere: () async throws -> T
    ) async throws -> T {
        guard let heavyWork, let blocking = store as? any BlockingReadingStore else { return try await elsewhere() }
        return try await heavyWork.run(busy: PersonData.heavyWorkBusy) { try onThread(blocking) }
    }

    /// Who pays for an answer: the most a count needs to find (`ReadingBudget.countCeiling`) and
    /// the charge, which throws 429 past the budget.
    struct Budget: Sendable {
        var ceiling: Int64
        var charge: @Sendable (Int64) throws -> Void
    }

    /// What an answer reads, in the reading budget's unit of one stored row: the cell's
    /// person-days once for the totals, and twice more for each earlier overlapping group (the
    /// two differences scan the cell again). The earlier cells' own rows are taken as many as
    /// this one's, so that the price needs one count, not one per earlier group. A person-day is
    /// charged as one reading: it costs the database one row, as a reading does, which is what
    /// the budget limits, however many readings it summarises. At least one, so that a flood of
    /// queries over empty cells still drains the bucket; at most the ceiling, beyond which the
    /// budget charges every cost as the burst.
    static func cost(rows: Int64, differencing: Int, ceiling: Int64) -> Int64 {
        let scans = Int64(1 + 2 * differencing)
        let (product, overflow) = max(1, rows).multipliedReportingOverflow(by: scans)
        return overflow ? max(1, ceiling) : min(product, max(1, ceiling))
    }

    /// How many days back each roll-up looks again (readings of an offline device arrive late).
    static let lookBackDays = 7

    /// Summarises every whole UTC day up to yesterday not summarised yet, and the last
    /// `lookBackDays` again: one row per person and day (a person's devices together), made of
    /// the counters intake kept for each device's day (`DeviceDay`) and the day's alerts, never
    /// of the readings: a day costs one row per device that sent something.
    func rollUp() async throws {
        let today = GroupFigures.day(wallClock())
        let through = try await store.rollupThroughDay()
        if let through, through >= today - 1 { return }
        let first = through.map { $0 + 1 - Self.lookBackDays } ?? (today - 60)
        guard first < today else { return }
        var owners: [String: (key: String, ageBand: Int)] = [:]
        for device in try await store.devicesForRollup() {
            let age = (try? StoreJSON.decode(device.person) as PersonProfile)?.age ?? 0
            owners[device.deviceID] = (device.wearer.map { "person:\($0)" } ?? "device:\(device.deviceID)", GroupFigures.ageBand(age))
        }
        var alerts: [Int: [(deviceID: String, column: Int)]] = [:]
        let from = Int64(first) * GroupFigures.dayMilliseconds
        for row in try await store.alertRows(createdFrom: from, to: Int64(today) * GroupFigures.dayMilliseconds) {
            guard let kind = AlertSummary(row).kind, let column = GroupFigures.alertKinds.firstIndex(of: GroupFigures.column(for: kind)) else {
                continue
            }
            alerts[GroupFigures.day(row.createdMilliseconds), default: []].append((row.deviceID, column))
        }
        for day in first..<today {
            // Each person's day: their devices' counters together, and their alerts by kind.
            var people: [String: (ageBand: Int, counters: DeviceDay, alerts: [Int64])] = [:]
            func add(_ deviceID: String, _ change: (inout (ageBand: Int, counters: DeviceDay, alerts: [Int64])) -> Void) {
                guard let owner = owners[deviceID] else { return }
                change(&people[owner.key, default: (owner.ageBand, DeviceDay(day: day), Array(repeating: 0, count: GroupFigures.alertKinds.count))])
            }
            for (deviceID, part) in try await store.deviceDays(day: day) { add(deviceID) { $0.counters.merge(part) } }
            for alert in alerts[day] ?? [] { add(alert.deviceID) { $0.alerts[alert.column] += 1 } }
            let summaries = people.map { key, person in
                PersonDay(
                    personKey: key,
                    day: day,
                    ageBand: person.ageBand,
                    cellLatitude: person.counters.cell?.latitude,
                    cellLongitude: person.counters.cell?.longitude,
                    heartRateCount: person.counters.heartRateCount,
                    heartRateSum: person.counters.heartRateSum,
                    bins: person.counters.bins,
                    alerts: person.alerts
                )
            }
            try await store.upsertPersonDays(summaries.filter { $0.heartRateCount > 0 || $0.alerts.contains { $0 > 0 } || $0.cellLatitude != nil })
        }
        try await store.setRollupThroughDay(today - 1)
    }
}
