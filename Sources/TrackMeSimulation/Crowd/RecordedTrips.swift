import Foundation

/// Occupied taxi rides recorded in the format of the ECML/PKDD 2015 Porto taxi data set
/// (`crowd.fleet.trips`): a CSV with a header naming at least `TRIP_ID`, `TAXI_ID`, `TIMESTAMP`
/// (Unix seconds, the ride's start), `MISSING_DATA` and `POLYLINE` (a JSON list of `[lon, lat]`,
/// one point every 15 s from the start); fields may be quoted with double quotes, as the real
/// file does. A row that cannot be replayed is skipped and counted by reason, never fatal: the
/// real data has rows with missing data, empty polylines and broken JSON.
struct RecordedTrips: Sendable {
    struct Trip: Sendable, Hashable {
        var tripID: String
        var taxiID: String
        /// Unix seconds of the first point.
        var start: Int64
        /// `(latitude, longitude)`, 15 s apart.
        var points: [Point]

        /// Unix seconds of the last point: the drop-off.
        var end: Int64 { start + Int64(points.count - 1) * RecordedTrips.pointSeconds }
    }

    struct Point: Sendable, Hashable {
        var latitude: Double
        var longitude: Double
    }

    /// Why a row was skipped (the report's `fleet.skipped` keys).
    enum Skip: String, Error, Sendable, CaseIterable {
        /// `MISSING_DATA` is True: the recording says points are missing.
        case missingData = "missing_data"
        /// No points, or one point: no ride to replay.
        case emptyPolyline = "empty_polyline"
        /// `POLYLINE` is not a JSON list of `[lon, lat]` pairs within range.
        case badPolyline = "bad_polyline"
        /// Too few fields, or an empty id, or a `TIMESTAMP` that is not whole seconds.
        case badRow = "bad_row"
        /// Starts before the same taxi's previous ride has ended (a taxi drives one ride at a time).
        case overlapping
    }

    struct FormatError: Error, CustomStringConvertible, Sendable {
        var message: String
        var description: String { message }
    }

    static let pointSeconds: Int64 = 15
    static let requiredColumns = ["TRIP_ID", "TAXI_ID", "TIMESTAMP", "MISSING_DATA", "POLYLINE"]

    /// Rides to replay, by start then taxi.
    var trips: [Trip]
    var rows: Int
    var skipped: [Skip: Int]

    /// Parses `text`; throws only when the header lacks a required column.
    init(csv text: String) throws(FormatError) {
        var records = Self.records(text)
        guard !records.isEmpty else { throw FormatError(message: "no header: expected \(Self.requiredColumns.joined(separator: ","))") }
        let header = records.removeFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        var column: [String: Int] = [:]
        for name in Self.requiredColumns {
            guard let index = header.firstIndex(of: name) else {
                throw FormatError(message: "the header has no \(name) column (it has \(header.joined(separator: ",")))")
            }
            column[name] = index
        }
        let width = (column.values.max() ?? 0) + 1
        var trips: [Trip] = []
        var skipped: [Skip: Int] = [:]
        rows = 0
        for record in records where !(record.count == 1 && record[0].isEmpty) {
            rows += 1
            switch Self.trip(record, column: column, width: width) {
            case .success(let trip): trips.append(trip)
            case .failure(let skip): skipped[skip, default: 0] += 1
            }
        }
        // One ride at a time per taxi: a ride that starts before the previous one ended is skipped.
        trips.sort { ($0.taxiID, $0.start, $0.tripID) < ($1.taxiID, $1.start, $1.tripID) }
        var kept: [Trip] = []
        for trip in trips {
            if let last = kept.last, last.taxiID == trip.taxiID, trip.start <= last.end {
                skipped[.overlapping, default: 0] += 1
                continue
            }
            kept.append(trip)
        }
        self.trips = kept.sorted { ($0.start, $0.taxiID) < ($1.start, $1.taxiID) }
        self.skipped = skipped
    }

    private static func trip(_ record: [String], column: [String: Int], width: Int) -> Result<Trip, Skip> {
        guard record.count >= width else { return .failure(.badRow) }
        func field(_ name: String) -> String { column[name].map { record[$0].trimmingCharacters(in: .whitespaces) } ?? "" }
        let tripID = field("TRIP_ID")
        let taxiID = field("TAXI_ID")
        guard !tripID.isEmpty, !taxiID.isEmpty, let start = Int64(field("TIMESTAMP")) else { return .failure(.badRow) }
        switch field("MISSING_DATA").lowercased() {
        case "false", "0", "": break
        default: return .failure(.missingData)
        }
        let polyline = field("POLYLINE")
        guard let points = try? JSONDecoder().decode([[Double]].self, from: Data(polyline.utf8)) else { return .failure(.badPolyline) }
        guard points.count >= 2 else { return .failure(.emptyPolyline) }
        var trip = Trip(tripID: tripID, taxiID: taxiID, start: start, points: [])
        trip.points.reserveCapacity(points.count)
        for point in points {
            guard point.count == 2, (-180...180).contains(point[0]), (-90...90).contains(point[1]) else { return .failure(.badPolyline) }
            trip.points.append(Point(latitude: point[1], longitude: point[0]))
        }
        return .success(trip)
    }

    /// The CSV's records, RFC 4180 style: fields split at commas outside double quotes, `""`
    /// inside quotes is a quote, records end at a newline outside quotes (`\r\n` too).
    static func records(_ text: String) -> [[String]] {
        var records: [[String]] = []
        var record: [String] = []
        var field: [UInt8] = []
        var quoted = false
        var bytes = Array(text.utf8).makeIterator()
        var pending: UInt8? = nil
        func endField() {
            record.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        while let byte = pending ?? bytes.next() {
            pending = nil
            if quoted {
                if byte == UInt8(ascii: "\"") {
                    let next = bytes.next()
                    if next == UInt8(ascii: "\"") {
                        field.append(byte)
                    } else {
                        quoted = false
                        pending = next
                    }
                } else {
                    field.append(byte)
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): quoted = true
            case UInt8(ascii: ","): endField()
            case UInt8(ascii: "\r"): break
            case UInt8(ascii: "\n"):
                endField()
                records.append(record)
                record.removeAll(keepingCapacity: true)
            default: field.append(byte)
            }
        }
        if !field.isEmpty || !record.isEmpty {
            endField()
            records.append(record)
        }
        return records
    }
}
