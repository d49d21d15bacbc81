import Foundation
import TrackMeCore

/// Answers group queries over the daily person summaries (`person_days`), applying the rules of
/// `GroupFigures`, and keeps the summaries up to date from the readings (`rollUp`).
struct GroupFigureDesk: Sendable {
    let store: any PeopleRoomStore
    let wallClock: @Sendable () -> Int64
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
            let rows = try await store.groupRows(in: cell, atMost: budget.ceiling)
            try budget.charge(Self.cost(rows: rows, differencing: overlapping.count(where: { $0.cell != cell }), ceiling: budget.ceiling))
        }
        let totals = try await store.groupTotals(cell)
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
            let onlyNew = try await store.groupPeople(in: cell, notIn: earlier.cell)
            let onlyEarlier = try await store.groupPeople(in: earlier.cell, notIn: cell)
            try rules.checkDifference(onlyInNew: onlyNew, onlyInEarlier: onlyEarlier)
        }
        try await store.recordAnsweredGroup(
            AnsweredGroup(organisationID: organisationID, cell: cell, people: totals.people, atMilliseconds: wallClock())
        )
        return rules.answer(totals, group: cell)
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
    /// `lookBackDays` again: one row per person and day (a person's devices together).
    func rollUp() async throws {
        let today = GroupFigures.day(wallClock())
        let through = try await store.rollupThroughDay()
        if let through, through >= today - 1 { return }
        let first = through.map { $0 + 1 - Self.lookBackDays } ?? (today - 60)
        guard first < today else { return }
        let devices = try await store.devicesForRollup()
        for day in first..<today {
            var byPerson: [String: PersonDay] = [:]
            let start = Int64(day) * GroupFigures.dayMilliseconds
            let end = start + GroupFigures.dayMilliseconds
            for device in devices {
                let key = device.wearer.map { "person:\($0)" } ?? "device:\(device.deviceID)"
                let age = (try? StoreJSON.decode(device.person) as PersonProfile)?.age ?? 0
                var summary =
                    byPerson[key]
                    ?? PersonDay(
                        personKey: key,
                        day: day,
                        ageBand: GroupFigures.ageBand(age),
                        cellLatitude: nil,
                        cellLongitude: nil,
                        heartRateCount: 0,
                        heartRateSum: 0,
                        bins: Array(repeating: 0, count: PeopleSchema.binCount),
                        alerts: Array(repeating: 0, count: GroupFigures.alertKinds.count)
                    )
                var latitudes: [Double] = []
                var longitudes: [Double] = []
                var after: Int64 = 0
                let before = summary
                readings: while true {
                    let page: [StoredReadingRow]
                    do {
                        page = try await store.readings(
                            ReadingQuery(
                                deviceID: device.deviceID,
                                fromMilliseconds: start,
                                toMilliseconds: end,
                                kind: nil,
                                afterSequence: after,
                                limit: 5000
                            )
                        )
                    } catch is PersonKeyError {
                        // A person whose readings do not open (their key damaged, or erased
                        // meanwhile) is left out of the day's figures rather than stopping them for
                        // everyone; their own reads answer why.
                        summary = before
                        latitudes = []
                        longitudes = []
                        break readings
                    }
                    for row in page {
                        if let hr = PersonData.heartRate(row, deviceID: device.deviceID), hr.contact, hr.bpm > 0 {
                            summary.heartRateCount += 1
                            summary.heartRateSum += Int64(hr.bpm)
                            summary.bins[GroupFigures.bin(of: hr.bpm)] += 1
                        } else if let fix = PersonData.position(row, deviceID: device.deviceID) {
                            latitudes.append(fix.latitude)
                            longitudes.append(fix.longitude)
                        }
                    }
                    guard page.count == 5000, let last = page.last else { break }
                    after = last.sequence
                }
                if !latitudes.isEmpty {
                    summary.cellLatitude = GroupFigures.cellIndex(latitudes.reduce(0, +) / Double(latitudes.count))
                    summary.cellLongitude = GroupFigures.cellIndex(longitudes.reduce(0, +) / Double(longitudes.count))
                }
                for alertID in try await store.alertIDs(deviceIDs: [device.deviceID]) {
                    guard let row = try await store.alertRow(id: alertID), row.createdMilliseconds >= start, row.createdMilliseconds < end,
                        let kind = AlertSummary(row).kind, let index = GroupFigures.alertKinds.firstIndex(of: GroupFigures.column(for: kind))
                    else { continue }
                    summary.alerts[index] += 1
                }
                byPerson[key] = summary
            }
            let days = byPerson.values.filter { $0.heartRateCount > 0 || $0.alerts.contains { $0 > 0 } || $0.cellLatitude != nil }
            try await store.upsertPersonDays(Array(days))
        }
        try await store.setRollupThroughDay(today - 1)
    }
}
