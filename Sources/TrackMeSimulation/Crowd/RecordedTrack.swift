public import Foundation
import Glibc
import TrackMeCore
import TrackMeServer

/// One runner's recording, as their watch kept it: a GPX 1.1 track (`<trkpt lat lon>` with
/// `<time>`) or an NMEA log as gpsd and gpsfake read it (GGA and RMC), named by the file's stem.
/// A second with no fix stays without one: a watch gap is replayed as a gap, never filled in.
public struct RecordedTrack: Sendable, Hashable {
    public struct Point: Sendable, Hashable {
        /// UTC milliseconds since 1970.
        public var milliseconds: Int64
        public var latitude: Double
        public var longitude: Double
        /// Metres per second, when the recording says (NMEA RMC).
        public var speed: Double?

        public init(milliseconds: Int64, latitude: Double, longitude: Double, speed: Double? = nil) {
            self.milliseconds = milliseconds
            self.latitude = latitude
            self.longitude = longitude
            self.speed = speed
        }
    }

    /// The file's stem: the runner's name in the race.
    public var name: String
    /// The file, as messages name it.
    public var file: String
    /// In time order, each strictly newer than the one before.
    public var points: [Point]

    public init(name: String, file: String, points: [Point]) {
        self.name = name
        self.file = file
        self.points = points
    }

    /// Reads a track file: GPX when it holds a `<gpx` element, otherwise NMEA.
    public static func read(contentsOf url: URL) throws(TrackError) -> RecordedTrack {
        let text: String
        do {
            text = try String(contentsOf: url, encoding: .utf8)
        } catch {
            throw TrackError(file: url.path, line: nil, message: "cannot be read as UTF-8 text: \(error.localizedDescription)")
        }
        return try parse(text, file: url.path, name: url.deletingPathExtension().lastPathComponent)
    }

    public static func parse(_ text: String, file: String, name: String) throws(TrackError) -> RecordedTrack {
        let points = text.contains("<gpx") ? try parseGPX(text, file: file) : try parseNMEA(text, file: file)
        guard points.count >= 2 else {
            throw TrackError(file: file, line: nil, message: "a track needs at least 2 fixes with a position and a time, found \(points.count)")
        }
        return RecordedTrack(name: name, file: file, points: points)
    }

    // MARK: GPX

    /// The `<trkpt>` points of every segment, in order; each must have a numeric `lat` and `lon`
    /// and a `<time>`, and be newer than the one before.
    static func parseGPX(_ text: String, file: String) throws(TrackError) -> [Point] {
        var lines = LineCounter(text)
        var points: [Point] = []
        var rest = text[...]
        let times = ISO8601Times()
        while let open = rest.range(of: "<trkpt") {
            let line = lines.line(at: open.lowerBound)
            func fail(_ message: String) -> TrackError { TrackError(file: file, line: line, message: message) }
            let afterName = rest[open.upperBound...]
            guard let first = afterName.first, first.isWhitespace || first == ">" || first == "/" else {
                rest = afterName
                continue
            }
            guard let close = afterName.firstIndex(of: ">") else { throw fail("<trkpt is not closed") }
            let attributes = afterName[..<close]
            guard let latitude = RunPath.attribute("lat", in: attributes).flatMap(Double.init), (-90...90).contains(latitude),
                let longitude = RunPath.attribute("lon", in: attributes).flatMap(Double.init), (-180...180).contains(longitude)
            else { throw fail("<trkpt> needs lat in -90...90 and lon in -180...180") }
            guard !attributes.hasSuffix("/"), let end = afterName[close...].range(of: "</trkpt>") else {
                throw fail("<trkpt> has no <time> (a track point needs one to be replayed)")
            }
            let body = afterName[close..<end.lowerBound]
            guard let timeOpen = body.range(of: "<time>"), let timeClose = body[timeOpen.upperBound...].range(of: "</time>") else {
                throw fail("<trkpt> has no <time> (a track point needs one to be replayed)")
            }
            let timeText = body[timeOpen.upperBound..<timeClose.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
            guard let milliseconds = times.milliseconds(timeText) else {
                throw fail("<time>\(timeText)</time> is not an ISO 8601 UTC time (e.g. 2026-05-10T09:00:00Z)")
            }
            if let previous = points.last, milliseconds <= previous.milliseconds {
                throw fail("<time>\(timeText)</time> is not after the point before it")
            }
            points.append(Point(milliseconds: milliseconds, latitude: latitude, longitude: longitude))
            rest = afterName[end.upperBound...]
        }
        return points
    }

    // MARK: NMEA

    /// One fix per epoch (UTC second) with a position, from its GGA and RMC sentences as
    /// `NMEAPositionLog` reads them; epochs without a position (the receiver lost its fix) give
    /// no point, so a gap stays a gap. Dates come from RMC. `#` lines (gpsfake's headers) and
    /// blank lines are skipped; anything else that is not a sentence with a good checksum is
    /// an error, not skipped: a track is evidence of where a runner was.
    static func parseNMEA(_ text: String, file: String) throws(TrackError) -> [Point] {
        struct Epoch {
            var timeOfDay: Int64
            var date: Int64?
            var fix = PositionFix(mode: .none)
            var line: Int
        }
        var epochs: [Epoch] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard line.hasPrefix("$") || line.hasPrefix("!"), line.contains("*") else {
                throw TrackError(file: file, line: index + 1, message: "not an NMEA sentence ($...*hh): \(line.prefix(40))")
            }
            guard let fields = NMEAPositionLog.validSentence(Substring(line)) else {
                throw TrackError(file: file, line: index + 1, message: "bad NMEA checksum: \(line.prefix(40))")
            }
            let type = fields[0].suffix(3)
            guard type == "RMC" || type == "GGA" else { continue }
            guard fields.count > 6, let timeOfDay = NMEAPositionLog.timeOfDay(fields[1]) else {
                throw TrackError(file: file, line: index + 1, message: "\(type) sentence without a UTC time: \(line.prefix(40))")
            }
            if epochs.last?.timeOfDay != timeOfDay { epochs.append(Epoch(timeOfDay: timeOfDay, line: index + 1)) }
            let last = epochs.count - 1
            if type == "RMC" {
                NMEAPositionLog.applyRMC(fields, to: &epochs[last].fix)
                if fields.count > 9 { epochs[last].date = Self.dayMilliseconds(fields[9]) }
            } else {
                NMEAPositionLog.applyGGA(fields, to: &epochs[last].fix)
            }
        }
        // Epochs before the first RMC date take it; without any date the track sits on 1970-01-01.
        var day = epochs.first { $0.date != nil }?.date ?? 0
        var previous: Int64?
        var points: [Point] = []
        for epoch in epochs {
            if let date = epoch.date {
                day = date
            } else if let previous, epoch.timeOfDay < previous {
                day += 86_400_000
            }
            previous = epoch.timeOfDay
            guard epoch.fix.hasPosition, let latitude = epoch.fix.latitude, let longitude = epoch.fix.longitude else { continue }
            let milliseconds = day + epoch.timeOfDay
            if let last = points.last, milliseconds <= last.milliseconds {
                throw TrackError(file: file, line: epoch.line, message: "epoch time is not after the one before it")
            }
            points.append(Point(milliseconds: milliseconds, latitude: latitude, longitude: longitude, speed: epoch.fix.speed))
        }
        return points
    }

    /// RMC's `ddmmyy` as milliseconds since 1970 at 00:00 UTC that day.
    static func dayMilliseconds(_ field: Substring) -> Int64? {
        guard field.count == 6, let day = Int(field.prefix(2)), let month = Int(field.dropFirst(2).prefix(2)),
            let year = Int(field.dropFirst(4))
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        guard let date = calendar.date(from: DateComponents(year: 2000 + year, month: month, day: day)) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}

/// A track file that cannot be replayed: the file, the line, and what is wrong there.
public struct TrackError: Error, Hashable, Sendable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var message: String

    public var description: String { "\(file)\(line.map { ":\($0)" } ?? ""): \(message)" }
}

/// ISO 8601 times as GPX writes them, with or without a fraction of a second.
struct ISO8601Times {
    private let whole = ISO8601DateFormatter()
    private let fractional: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    func milliseconds(_ text: String) -> Int64? {
        guard let date = whole.date(from: text) ?? fractional.date(from: text) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}

/// The 1-based line of positions in a text, counted forward from the last one asked for.
struct LineCounter {
    private let text: String
    private var index: String.Index
    private var line = 1

    init(_ text: String) {
        self.text = text
        index = text.startIndex
    }

    mutating func line(at position: String.Index) -> Int {
        guard position > index else { return line }
        line += text.utf8[index..<position].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        index = position
        return line
    }
}

/// The tracks of `crowd.race.tracks`: files and globs, relative to the scenario's folder or
/// absolute, one runner each.
public enum RecordedTracks {
    /// The files the patterns name, in name order, each once; a pattern that names no file is
    /// an error (a race missing its runners would pass for a smaller race).
    public static func files(_ patterns: [String], relativeTo directory: URL) throws -> [URL] {
        var found: [String] = []
        for pattern in patterns {
            let full = pattern.hasPrefix("/") ? pattern : directory.appendingPathComponent(pattern).path
            var matches = glob_t()
            defer { globfree(&matches) }
            guard Glibc.glob(full, 0, nil, &matches) == 0 else {
                throw ScenarioError(message: "crowd.race.tracks: \(pattern) names no file (looked for \(full))")
            }
            for i in 0..<Int(matches.gl_pathc) {
                if let path = matches.gl_pathv[i] { found.append(String(cString: path)) }
            }
        }
        var seen = Set<String>()
        return found.sorted().filter { seen.insert(URL(fileURLWithPath: $0).standardizedFileURL.path).inserted }.map(URL.init(fileURLWithPath:))
    }

    /// Every track, read whole: the first file that cannot be read stops the load with its
    /// error, and two files of one stem are refused (a runner is named by it).
    public static func load(_ patterns: [String], relativeTo directory: URL) throws -> [RecordedTrack] {
        var tracks: [RecordedTrack] = []
        var names: [String: String] = [:]
        for url in try files(patterns, relativeTo: directory) {
            let track = try RecordedTrack.read(contentsOf: url)
            if let other = names[track.name] {
                throw ScenarioError(
                    message: "crowd.race.tracks: \(other) and \(url.path) are both runner \(track.name) (a runner is named by the file's stem)"
                )
            }
            names[track.name] = url.path
            tracks.append(track)
        }
        return tracks
    }
}

/// A track's own distance and finish, the way a person checking it by hand would count them,
/// independently of the server: drop the points that sit far from every neighbour within a few
/// seconds (a GPS jump is plain to see on a map), then add up the straight lines between the
/// points left, on a flat local projection. A watch gap is crossed in a straight line: the
/// recording says nothing of the way taken.
public struct TrackTruth: Sendable {
    /// The points kept, with metres run to each.
    public private(set) var kept: [(milliseconds: Int64, metres: Double)] = []
    /// Points dropped as jumps.
    public private(set) var jumps = 0

    public var distance: Double { kept.last?.metres ?? 0 }

    /// A point is a jump when it is more than this from the median of its neighbours within
    /// `window`: a runner covers at most some 30 m in 5 s, a jump is hundreds of metres.
    static let jumpMetres = 60.0
    static let windowMilliseconds: Int64 = 5_000

    public init(_ points: [RecordedTrack.Point]) {
        guard let origin = points.first else { return }
        let metresPerDegree = 6_371_008.8 * Double.pi / 180
        let east = metresPerDegree * cos(origin.latitude * .pi / 180)
        let xy = points.map { (x: ($0.longitude - origin.longitude) * east, y: ($0.latitude - origin.latitude) * metresPerDegree) }
        var total = 0.0
        var last: (x: Double, y: Double)?
        for (i, point) in points.enumerated() {
            var xs: [Double] = []
            var ys: [Double] = []
            var j = i - 1
            while j >= 0, point.milliseconds - points[j].milliseconds <= Self.windowMilliseconds {
                xs.append(xy[j].x)
                ys.append(xy[j].y)
                j -= 1
            }
            j = i + 1
            while j < points.count, points[j].milliseconds - point.milliseconds <= Self.windowMilliseconds {
                xs.append(xy[j].x)
                ys.append(xy[j].y)
                j += 1
            }
            if xs.count >= 2 {
                let dx = xy[i].x - Self.median(xs)
                let dy = xy[i].y - Self.median(ys)
                if (dx * dx + dy * dy).squareRoot() > Self.jumpMetres {
                    jumps += 1
                    continue
                }
            }
            if let last {
                let dx = xy[i].x - last.x
                let dy = xy[i].y - last.y
                total += (dx * dx + dy * dy).squareRoot()
            }
            last = xy[i]
            kept.append((point.milliseconds, total))
        }
    }

    /// When the distance reached `metres` (between two kept points, in proportion), or nil.
    public func moment(reaching metres: Double) -> Int64? {
        guard let index = kept.firstIndex(where: { $0.metres >= metres }) else { return nil }
        guard index > 0 else { return kept[0].milliseconds }
        let (a, b) = (kept[index - 1], kept[index])
        let fraction = (metres - a.metres) / max(1e-9, b.metres - a.metres)
        return a.milliseconds + Int64((Double(b.milliseconds - a.milliseconds) * fraction).rounded())
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}
