import TrackMeCore

#if PostgreSQL
import PostgresNIO
#endif

/// One device's counters of one UTC day for the group figures (`device_days`), added up at
/// intake from each batch it stores, in the batch's own transaction: the readings are decoded
/// there anyway, so the daily roll-up (`GroupFigureDesk.rollUp`) reads one row per device and
/// day instead of every reading, and costs what the number of devices costs, not the number of
/// readings (8.6 billion a day for 100,000 wearers at 1 Hz).
///
/// A position is kept only as the cell it falls in (`GroupFigures.cellIndex`), summed: the day's
/// cell is the mean of its fixes' cells, and no finer place is kept in clear. A batch some of
/// whose readings the server held already (a store that started over) adds nothing, so that no
/// reading is counted twice; the figures may miss such a batch's new readings.
struct DeviceDay: Hashable, Sendable {
    var day: Int
    var heartRateCount: Int64 = 0
    var heartRateSum: Int64 = 0
    var bins: [Int64] = Array(repeating: 0, count: PeopleSchema.binCount)
    var fixCount: Int64 = 0
    var cellLatitudeSum: Int64 = 0
    var cellLongitudeSum: Int64 = 0

    /// The counters' columns after `device_id` and `day`, in the order `values` gives them.
    static var columns: [String] { ["hr_count", "hr_sum"] + PeopleSchema.binColumns + ["fix_count", "cell_lat_sum", "cell_lon_sum"] }

    var values: [Int64] { [heartRateCount, heartRateSum] + bins + [fixCount, cellLatitudeSum, cellLongitudeSum] }

    /// Adds rows of (`device_id`, `day`, counters) to what the days hold: `source` gives the
    /// rows (`VALUES (?, ...)` on SQLite, a `SELECT` over arrays on PostgreSQL).
    static func addSQL(rows source: String) -> String {
        let all = ["device_id", "day"] + columns
        return """
            INSERT INTO device_days (\(all.joined(separator: ", "))) \(source)
            ON CONFLICT (device_id, day) DO UPDATE SET \(columns.map { "\($0) = device_days.\($0) + excluded.\($0)" }.joined(separator: ", "))
            """
    }

    init(day: Int) { self.day = day }

    /// From `values` as `columns` name them; nil when there are not as many.
    init?(day: Int, values: [Int64]) {
        guard values.count == Self.columns.count else { return nil }
        self.day = day
        heartRateCount = values[0]
        heartRateSum = values[1]
        bins = Array(values[2..<(2 + PeopleSchema.binCount)])
        fixCount = values[2 + PeopleSchema.binCount]
        cellLatitudeSum = values[3 + PeopleSchema.binCount]
        cellLongitudeSum = values[4 + PeopleSchema.binCount]
    }

    /// Adds another part of the same day (another batch, or another device of the same person).
    mutating func merge(_ other: DeviceDay) {
        heartRateCount += other.heartRateCount
        heartRateSum += other.heartRateSum
        for index in bins.indices where index < other.bins.count { bins[index] += other.bins[index] }
        fixCount += other.fixCount
        cellLatitudeSum += other.cellLatitudeSum
        cellLongitudeSum += other.cellLongitudeSum
    }

    /// A heart rate counts when the strap touched the skin and saw a beat, as in the statistics.
    mutating func add(bpm: Int, contact: Bool) {
        guard contact, bpm > 0 else { return }
        heartRateCount += 1
        heartRateSum += Int64(bpm)
        bins[GroupFigures.bin(of: bpm)] += 1
    }

    mutating func add(latitude: Double, longitude: Double) {
        guard latitude.isFinite, longitude.isFinite else { return }
        fixCount += 1
        cellLatitudeSum += Int64(GroupFigures.cellIndex(latitude))
        cellLongitudeSum += Int64(GroupFigures.cellIndex(longitude))
    }

    /// The day's cell: the mean of its fixes' cells; nil without a fix.
    var cell: (latitude: Int, longitude: Int)? {
        guard fixCount > 0 else { return nil }
        let count = Double(fixCount)
        return (Int((Double(cellLatitudeSum) / count).rounded()), Int((Double(cellLongitudeSum) / count).rounded()))
    }

    /// A batch's readings summed by the UTC day they are placed in (`placed[i]` for
    /// `readings[i]`), in day order; days with nothing to count are left out.
    static func days(of readings: [WireReading], placed: [Int64]) -> [DeviceDay] {
        var byDay: [Int: DeviceDay] = [:]
        for (reading, milliseconds) in zip(readings, placed) {
            let day = GroupFigures.day(milliseconds)
            switch reading.payload {
            case .heartRate(let heartRate):
                byDay[day, default: DeviceDay(day: day)].add(bpm: heartRate.bpm, contact: heartRate.contact != .notDetected)
            case .position(let fix):
                guard let latitude = fix.latitude, let longitude = fix.longitude else { continue }
                byDay[day, default: DeviceDay(day: day)].add(latitude: latitude, longitude: longitude)
            }
        }
        return byDay.values.filter { $0.heartRateCount > 0 || $0.fixCount > 0 }.sorted { $0.day < $1.day }
    }
}

#if PostgreSQL
extension DeviceDay {
    /// One statement that adds each device's `days`, a column an array, or nil when they count
    /// nothing.
    static func postgresAdd(_ batches: [(deviceID: String, days: [DeviceDay])]) -> PostgresQuery? {
        var devices: [String] = []
        var days: [Int64] = []
        var columns = Array(repeating: [Int64](), count: Self.columns.count)
        for batch in batches {
            for day in batch.days {
                devices.append(batch.deviceID)
                days.append(Int64(day.day))
                for (index, value) in day.values.enumerated() { columns[index].append(value) }
            }
        }
        guard !devices.isEmpty else { return nil }
        var bindings = PostgresBindings(capacity: 2 + columns.count)
        bindings.append(devices)
        bindings.append(days)
        for column in columns { bindings.append(column) }
        let arrays = ["$1::TEXT[]", "$2::BIGINT[]"] + (0..<columns.count).map { "$\($0 + 3)::BIGINT[]" }
        return PostgresQuery(unsafeSQL: addSQL(rows: "SELECT * FROM unnest(\(arrays.joined(separator: ", ")))"), binds: bindings)
    }
}
#endif
