extension TrackMeServer {
    /// Fills the group figures' daily summaries with `people` simulated people, `days` days
    /// each ending yesterday (`trackme-sim bench group-query`). Generated inside the database.
    public func seedGroupPopulation(people: Int, days: Int) async throws {
        let today = GroupFigures.day(configuration.wallClock())
        try await store.seedPersonDays(people: people, days: days, firstDay: today - days)
        try await store.setRollupThroughDay(today - 1)
    }

    /// Fills the counters intake keeps (`DeviceDay`) for `devices` simulated devices of made-up
    /// people, `days` days each ending yesterday, and marks the days before yesterday summarised:
    /// the next roll-up does the daily job's work over that population (`trackme-sim bench
    /// rollup --population`). Generated inside the database.
    public func seedDeviceDayPopulation(devices: Int, days: Int) async throws {
        let today = GroupFigures.day(configuration.wallClock())
        try await store.seedDeviceDays(devices: devices, days: days, firstDay: today - days)
        try await store.setRollupThroughDay(today - 2)
    }

    /// What one group query over the seeded population answered, for the benchmark.
    public struct GroupQueryOutcome: Sendable {
        public var people: Int
        public var answered: Bool
        public var reason: String?
    }

    /// A group query as `POST /v1/group-figures` answers it, without HTTP: snapping, counting,
    /// the size rule and the difference rule against every earlier answer.
    public func groupQuery(
        ageFrom: Int,
        ageTo: Int,
        south: Double,
        west: Double,
        north: Double,
        east: Double,
        days: Int,
        organisation: String = "bench"
    ) async throws -> GroupQueryOutcome {
        let to = configuration.wallClock()
        let query = GroupFigures.Query(
            ageFrom: ageFrom,
            ageTo: ageTo,
            south: south,
            west: west,
            north: north,
            east: east,
            fromMilliseconds: to - Int64(days) * GroupFigures.dayMilliseconds,
            toMilliseconds: to
        )
        do {
            let answer = try await GroupFigureDesk(store: store, wallClock: configuration.wallClock).answer(query, organisationID: organisation)
            return GroupQueryOutcome(people: answer.people, answered: true, reason: nil)
        } catch let refusal as GroupFigures.Refusal {
            return GroupQueryOutcome(people: 0, answered: false, reason: refusal.message)
        }
    }

    /// Summarises every whole day not summarised yet (and the last week again) into the group
    /// figures' per-person days: the hourly job's work, and the roll-up benchmark's.
    public func rollUpGroupFigures() async throws {
        try await GroupFigureDesk(store: store, wallClock: configuration.wallClock).rollUp()
    }

    /// The baseline: the plain aggregate SQL (distinct people, readings, sum) over the same rows.
    public func plainGroupAggregate(ageFrom: Int, ageTo: Int, south: Double, west: Double, north: Double, east: Double, days: Int) async throws -> Int
    {
        let to = configuration.wallClock()
        let cell = try GroupFigures().snap(
            GroupFigures.Query(
                ageFrom: ageFrom,
                ageTo: ageTo,
                south: south,
                west: west,
                north: north,
                east: east,
                fromMilliseconds: to - Int64(days) * GroupFigures.dayMilliseconds,
                toMilliseconds: to
            )
        )
        return try await store.plainGroupAggregate(cell).people
    }
}
