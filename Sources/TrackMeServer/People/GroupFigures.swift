import TrackMeCore

/// Anonymised group figures: the rules, pure. A group is every person-day whose person was in an
/// age band, whose day's mean position fell in an area, within a span of days. The answer holds
/// only group-level values (people, readings, mean and percentiles of heart rate, alerts per
/// kind) and is given only when more than `minimumPeople` distinct people are in the group.
///
/// Against the differencing attack (two overlapping groups whose difference is one person) the
/// design has three parts (simulations/GROUP-FIGURES.md):
/// 1. The group snaps outward to a coarse grid before anything is counted: whole decades of age,
///    cells of `cellDegrees` of latitude and longitude, whole UTC days. Nudging a border by a
///    street or an hour gives the same group, so the same answer.
/// 2. Every answered group is kept; a new group is answered only if, against each earlier one
///    it overlaps, the people whose person-days are in one group and not the other are either
///    none or more than `minimumPeople`, in each direction. A difference of one person (or of
///    1,000) is refused with the reason.
/// 3. Means and percentiles are whole bpm, and percentiles come from 10-bpm bins: one person's
///    day moves a group of a thousand by far less than the rounding.
struct GroupFigures: Sendable {
    /// More than this many distinct people, or no answer (000 R22).
    var minimumPeople = 1000
    /// The area grid, in degrees.
    static let cellDegrees = 0.1
    static let cellsPerDegree = 10.0
    static let dayMilliseconds = CivilDate.dayMilliseconds
    /// The alert kinds counted, in column order (fixed: the table's columns follow it).
    static let alertKinds: [AlertKind] = [.heartRateLow, .heartRateHigh, .noPulse, .contactLost, .strapSilent, .manual]

    /// The column an alert kind is counted in: a lethal rhythm is a cardiac arrest seen in the
    /// beats, counted with the flat line (`no_pulse`), so the table keeps its columns.
    static func column(for kind: AlertKind) -> AlertKind {
        switch kind {
        case .lethalRhythm: .noPulse
        case .heartRateLow, .heartRateHigh, .noPulse, .contactLost, .strapSilent, .manual: kind
        }
    }

    /// A group as asked for.
    struct Query: Codable, Hashable, Sendable {
        var ageFrom: Int
        var ageTo: Int
        var south: Double
        var west: Double
        var north: Double
        var east: Double
        var fromMilliseconds: Int64
        var toMilliseconds: Int64

        enum CodingKeys: String, CodingKey {
            case ageFrom = "age_from"
            case ageTo = "age_to"
            case south, west, north, east
            case fromMilliseconds = "from_ms"
            case toMilliseconds = "to_ms"
        }
    }

    /// A group on the grid: age bands `[ageBandFrom, ageBandTo]` (decades: 7 is 70-79), cells
    /// `[south, north] x [west, east]` (inclusive cell indices), days `[dayFrom, dayTo]`.
    struct Cell: Codable, Hashable, Sendable {
        var ageBandFrom: Int
        var ageBandTo: Int
        var south: Int
        var west: Int
        var north: Int
        var east: Int
        var dayFrom: Int
        var dayTo: Int

        func overlaps(_ other: Cell) -> Bool {
            ageBandFrom <= other.ageBandTo && other.ageBandFrom <= ageBandTo && south <= other.north && other.south <= north
                && west <= other.east && other.west <= east && dayFrom <= other.dayTo && other.dayFrom <= dayTo
        }

        enum CodingKeys: String, CodingKey {
            case ageBandFrom = "age_band_from"
            case ageBandTo = "age_band_to"
            case south, west, north, east
            case dayFrom = "day_from"
            case dayTo = "day_to"
        }
    }

    struct Refusal: Error, Hashable, Sendable {
        enum Code: String, Hashable, Sendable {
            case invalid
            case tooFewPeople = "too_few_people"
            case differencing
        }
        var code: Code
        var message: String
    }

    static func cellIndex(_ degrees: Double) -> Int { Int((degrees * cellsPerDegree).rounded(.down)) }
    static func ageBand(_ age: Int) -> Int { max(0, age) / 10 }
    static func day(_ milliseconds: Int64) -> Int { Int(CivilDate.days(containing: milliseconds)) }

    /// Snaps a query outward to the grid, or says what is wrong with it.
    func snap(_ query: Query) throws(Refusal) -> Cell {
        guard (0...130).contains(query.ageFrom), (0...130).contains(query.ageTo), query.ageFrom <= query.ageTo else {
            throw Refusal(code: .invalid, message: "age_from and age_to must be 0-130, age_from <= age_to")
        }
        guard (-90...90).contains(query.south), (-90...90).contains(query.north), query.south < query.north else {
            throw Refusal(code: .invalid, message: "south and north must be -90..90, south < north")
        }
        guard (-180...180).contains(query.west), (-180...180).contains(query.east), query.west < query.east else {
            throw Refusal(code: .invalid, message: "west and east must be -180..180, west < east (no box across the antimeridian)")
        }
        guard query.fromMilliseconds < query.toMilliseconds, query.toMilliseconds - query.fromMilliseconds <= 400 * Self.dayMilliseconds else {
            throw Refusal(code: .invalid, message: "from_ms must be before to_ms, at most 400 days apart")
        }
        // The upper edges are exclusive in the query: a box ending exactly on a grid line does not take the next cell.
        func upperCell(_ degrees: Double) -> Int {
            let scaled = degrees * Self.cellsPerDegree
            return scaled.rounded(.down) == scaled ? Int(scaled) - 1 : Int(scaled.rounded(.down))
        }
        return Cell(
            ageBandFrom: Self.ageBand(query.ageFrom),
            ageBandTo: Self.ageBand(query.ageTo),
            south: Self.cellIndex(query.south),
            west: Self.cellIndex(query.west),
            north: max(Self.cellIndex(query.south), upperCell(query.north)),
            east: max(Self.cellIndex(query.west), upperCell(query.east)),
            dayFrom: Self.day(query.fromMilliseconds),
            dayTo: Self.day(query.toMilliseconds - 1)
        )
    }

    /// The first rule: more than `minimumPeople` distinct people.
    func checkSize(people: Int) throws(Refusal) {
        guard people > minimumPeople else {
            throw Refusal(
                code: .tooFewPeople,
                message:
                    "the group holds \(people <= minimumPeople ? "\(minimumPeople) people or fewer" : "too few people"); figures are given only over more than \(minimumPeople)"
            )
        }
    }

    /// The second rule, for one earlier group: the people in one and not the other, each way.
    func checkDifference(onlyInNew: Int, onlyInEarlier: Int) throws(Refusal) {
        for difference in [onlyInNew, onlyInEarlier] where difference > 0 && difference <= minimumPeople {
            throw Refusal(
                code: .differencing,
                message: "the group differs from one answered before by \(minimumPeople) people or fewer; the difference would describe them"
            )
        }
    }

    /// Sums over the group, as the store adds them up.
    struct Totals: Hashable, Sendable {
        var people: Int
        var readings: Int64
        var heartRateSum: Int64
        var bins: [Int64]
        var alerts: [Int64]
    }

    /// The answer: group-level values only, rounded.
    struct Answer: Codable, Hashable, Sendable {
        var group: Cell
        var people: Int
        var readings: Int64
        var meanHeartRate: Int?
        var percentiles: [String: Int]
        var alertsByKind: [String: Int64]

        enum CodingKeys: String, CodingKey {
            case group, people, readings
            case meanHeartRate = "mean_heart_rate"
            case percentiles
            case alertsByKind = "alerts_by_kind"
        }
    }

    static let percentileLevels = [10, 25, 50, 75, 90]

    /// Bin `i` holds `[lower(i), lower(i) + 10)` bpm; the first and last are open-ended, read as
    /// 40-49 and 150-159 for interpolation.
    static func binLower(_ index: Int) -> Int { 40 + 10 * index }

    static func bin(of bpm: Int) -> Int { min(PeopleSchema.binCount - 1, max(0, (bpm - 40) / 10)) }

    func answer(_ totals: Totals, group: Cell) -> Answer {
        var percentiles: [String: Int] = [:]
        let total = totals.bins.reduce(0, +)
        if total > 0 {
            for level in Self.percentileLevels {
                let target = Double(total) * Double(level) / 100
                var seen: Int64 = 0
                for (index, count) in totals.bins.enumerated() where count > 0 {
                    if Double(seen + count) >= target {
                        let within = (target - Double(seen)) / Double(count)
                        percentiles["p\(level)"] = Int((Double(Self.binLower(index)) + 10 * within).rounded())
                        break
                    }
                    seen += count
                }
            }
        }
        var alerts: [String: Int64] = [:]
        for (index, kind) in Self.alertKinds.enumerated() where index < totals.alerts.count { alerts[kind.rawValue] = totals.alerts[index] }
        let mean = totals.readings > 0 ? Int((Double(totals.heartRateSum) / Double(totals.readings)).rounded()) : nil
        return Answer(
            group: group,
            people: totals.people,
            readings: totals.readings,
            meanHeartRate: mean,
            percentiles: percentiles,
            alertsByKind: alerts
        )
    }
}

/// One person's day as the group figures count it.
struct PersonDay: Hashable, Sendable {
    var personKey: String
    var day: Int
    var ageBand: Int
    /// The cell of the day's mean position; nil when the day had no fix (then no area holds it).
    var cellLatitude: Int?
    var cellLongitude: Int?
    var heartRateCount: Int64
    var heartRateSum: Int64
    var bins: [Int64]
    var alerts: [Int64]
}
