import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// Everything a person downloads about themselves, as JSON, CSV or GPX, written while it is read:
/// the readings come from the store one page at a time (`PersonData.forEachPage`) and leave in
/// chunks of about `chunkBytes`, the day figures are counters (`DailyStatistics.Accumulator`), so years
/// of 1 Hz data cost the server one page and a few counters per day, not the whole history; and
/// when the client goes away the reading stops before its next page (`HangUpWatch`).
///
/// Heart rate and positions come device by device, each device's in time order.
struct PersonExport: Sendable {
    enum Format: String, Sendable {
        case json, csv, gpx
    }

    let data: PersonData
    let person: PersonData.Person
    let grants: [AccessPolicy.Grant]
    let from: Int64?
    let to: Int64?
    let alerts: [PersonAlert]
    /// Logs the download once, before the first of the person's data leaves.
    let readLog: ReadLog

    /// The download's row in the person's access log, written at most once, when the first of
    /// their data is about to leave (only reads that returned data are logged).
    actor ReadLog {
        private var pending: (@Sendable () async throws -> Void)?

        init(_ log: @escaping @Sendable () async throws -> Void) { pending = log }

        func mark() async throws {
            guard let log = pending else { return }
            pending = nil
            try await log()
        }
    }

    static let chunkBytes = 64 * 1024
    static let csvHeader =
        "record,at_ms,at,device_id,bpm,lat,lon,alert_id,alert_kind,alert_state,outcome,min,mean,max,resting_estimate,seconds_out_of_range,dispatched"

    func response(_ format: Format) -> Response {
        var headers = HTTPFields()
        switch format {
        case .json: headers[.contentType] = "application/json"
        case .csv: headers[.contentType] = "text/csv; charset=utf-8"
        case .gpx: headers[.contentType] = "application/gpx+xml"
        }
        headers[.contentDisposition] = "attachment; filename=\"trackme-\(person.account.id).\(format.rawValue)\""
        headers[.xContentTypeOptions] = "nosniff"
        let export = self
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                var pending = ""
                func emit(_ text: String) async throws {
                    pending += text
                    guard pending.utf8.count >= Self.chunkBytes else { return }
                    try await writer.write(ByteBuffer(string: pending))
                    pending = ""
                }
                switch format {
                case .json: try await export.json(emit)
                case .csv: try await export.csv(emit)
                case .gpx: try await export.gpx(emit)
                }
                if !pending.isEmpty { try await writer.write(ByteBuffer(string: pending)) }
                try await writer.finish(nil)
            }
        )
    }

    typealias Emit = (String) async throws -> Void

    private var limits: HeartRateLimits { data.limits(person) }

    /// Heart rate page by page: each page decoded, counted into the day figures and turned into
    /// text (each sample `render`ed, joined by `separator`) on the heavy requests' threads
    /// (`PersonData.onHeavyThreads`: millions of rows would otherwise be formatted on the pool
    /// that takes alerts in), its text then handed to `emit`; returns the day figures.
    private func heartRate(
        separator: String = "",
        _ emit: Emit,
        _ render: @escaping @Sendable (HeartRateSample) throws -> String
    ) async throws -> [DailyStatistics] {
        var days = DailyStatistics.Accumulator(limits: limits)
        var first = true
        try await data.forEachPage(person, kind: .heartRate, from: from, to: to, grants: grants) { deviceID, page in
            let before = days
            let (text, after) = try await data.onHeavyThreads { () throws -> (String?, DailyStatistics.Accumulator) in
                var days = before
                let text = try Self.text(of: page, { PersonData.heartRate($0, deviceID: deviceID) }, separator: separator, render) { days.add($0) }
                return (text, days)
            }
            days = after
            if let text { try await emitPage(text, separator: separator, first: &first, emit) }
        }
        return days.days
    }

    /// Positions page by page, each page decoded and rendered as heart rate is (`heartRate`);
    /// `device` is told before the first page of each device that has any.
    private func positions(
        separator: String = "",
        _ emit: Emit,
        device: (String) async throws -> Void = { _ in },
        _ render: @escaping @Sendable (PositionSample) throws -> String
    ) async throws {
        var first = true
        var current: String?
        try await data.forEachPage(person, kind: .position, from: from, to: to, grants: grants) { deviceID, page in
            let text = try await data.onHeavyThreads {
                try Self.text(of: page, { PersonData.position($0, deviceID: deviceID) }, separator: separator, render)
            }
            guard let text else { return }
            if current != deviceID {
                try await readLog.mark()
                try await device(deviceID)
                current = deviceID
            }
            try await emitPage(text, separator: separator, first: &first, emit)
        }
    }

    /// A page's samples (the rows `decode` makes one of), each `render`ed and seen by `each`,
    /// joined by `separator`; nil when no row is one. Run on the heavy requests' threads.
    private static func text<Sample>(
        of page: [StoredReadingRow],
        _ decode: (StoredReadingRow) -> Sample?,
        separator: String,
        _ render: (Sample) throws -> String,
        each: (Sample) -> Void = { _ in }
    ) rethrows -> String? {
        var text: String?
        for row in page {
            guard let sample = decode(row) else { continue }
            each(sample)
            if text == nil { text = "" } else { text? += separator }
            text? += try render(sample)
        }
        return text
    }

    /// A page's text, after the separator when it is not the first; the first of the person's
    /// data to leave is logged first.
    private func emitPage(_ text: String, separator: String, first: inout Bool, _ emit: Emit) async throws {
        if first {
            try await readLog.mark()
        } else if !separator.isEmpty {
            try await emit(separator)
        }
        first = false
        try await emit(text)
    }

    /// The object's members in the order of the former whole-document export: `person_id`,
    /// `display_name`, `from_ms`, `to_ms`, `devices`, `heart_rate`, `positions`, `statistics`,
    /// `alerts`, `truncated` (always false: nothing is cut).
    private func json(_ emit: Emit) async throws {
        try await emit(
            "{\"person_id\":\(try StoreJSON.encode(person.account.id)),\"display_name\":\(try StoreJSON.encode(person.account.displayName)),"
                + "\"from_ms\":\(from.map(String.init) ?? "null"),\"to_ms\":\(to.map(String.init) ?? "null"),"
                + "\"devices\":\(try StoreJSON.encode(person.deviceIDs)),\"heart_rate\":["
        )
        let statistics = try await heartRate(separator: ",", emit) { try StoreJSON.encode($0) }
        try await emit("],\"positions\":[")
        try await positions(separator: ",", emit) { try StoreJSON.encode($0) }
        try await emit(
            "],\"statistics\":\(try StoreJSON.encode(statistics)),\"alerts\":\(try StoreJSON.encode(alerts)),\"truncated\":false}"
        )
    }

    private static func csvRow(_ values: [String]) -> String { values.map(Downloads.csvField).joined(separator: ",") + "\r\n" }

    /// One table for everything: a `record` column says which kind each row is.
    private func csv(_ emit: Emit) async throws {
        try await emit(Self.csvHeader + "\r\n")
        let statistics = try await heartRate(emit) { s in
            Self.csvRow([
                "heart_rate", "\(s.atMilliseconds)", Downloads.iso(s.atMilliseconds), s.deviceID, "\(s.bpm)", "", "", "", "", "", "", "", "", "", "",
                "", "",
            ])
        }
        try await positions(emit) { p in
            Self.csvRow([
                "position", "\(p.atMilliseconds)", Downloads.iso(p.atMilliseconds), p.deviceID, "", "\(p.latitude)", "\(p.longitude)", "", "", "", "",
                "", "", "", "", "", "",
            ])
        }
        for d in statistics {
            try await emit(
                Self.csvRow([
                    "day", "\(d.dayMilliseconds)", Downloads.iso(d.dayMilliseconds), "", "", "", "", "", "", "", "", d.minimum.map(String.init) ?? "",
                    d.mean.map { "\($0)" } ?? "", d.maximum.map(String.init) ?? "", d.restingEstimate.map(String.init) ?? "",
                    "\(d.secondsOutOfRange)", "",
                ])
            )
        }
        for a in alerts {
            try await emit(
                Self.csvRow([
                    "alert", "\(a.createdMilliseconds)", Downloads.iso(a.createdMilliseconds), a.deviceID, "", a.latitude.map { "\($0)" } ?? "",
                    a.longitude.map { "\($0)" } ?? "", a.alertID, a.kind?.rawValue ?? "", a.state, a.outcome?.rawValue ?? "", "", "", "", "", "",
                    // Whether a dispatcher was sent it (false: kept because AutomatedSOS was off).
                    "\(a.dispatched)",
                ])
            )
        }
    }

    /// GPX 1.1: one track per device that has fixes, its fixes in time order.
    private func gpx(_ emit: Emit) async throws {
        try await emit(GPXWriter.header(name: person.account.displayName))
        var track: String?
        try await positions(
            emit,
            device: { deviceID in
                if track != nil { try await emit(GPXWriter.trackEnd) }
                try await emit(GPXWriter.trackStart(name: deviceID))
                track = deviceID
            },
            { GPXWriter.point($0.atMilliseconds, $0.latitude, $0.longitude) }
        )
        if track != nil { try await emit(GPXWriter.trackEnd) }
        try await emit(GPXWriter.footer)
    }
}
