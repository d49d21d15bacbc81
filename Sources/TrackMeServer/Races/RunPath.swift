import Foundation
import Synchronization
import TrackMeCore

/// A run's course (Track4Run): the points of a GPX track or route, with the distance along the
/// course at each. Pure: no I/O, no clock. A runner's distance is not placed on it but counted
/// along their own fixes (`RaceProgress`): a course may use one street twice.
package struct RunPath: Hashable, Sendable, Codable {
    /// `[latitude, longitude]` pairs, in course order.
    var points: [[Double]]
    /// Metres from the start to each point.
    var cumulative: [Double]

    package var length: Double { cumulative.last ?? 0 }

    init(points: [[Double]]) throws(RunPathError) {
        guard points.count >= 2 else { throw RunPathError("a course needs at least 2 points, got \(points.count)") }
        for (index, point) in points.enumerated() {
            guard point.count == 2, (-90...90).contains(point[0]), (-180...180).contains(point[1]) else {
                throw RunPathError("point \(index): latitude -90...90 and longitude -180...180 expected")
            }
        }
        guard points.count <= Self.maximumPoints else { throw RunPathError("a course may have at most \(Self.maximumPoints) points") }
        self.points = points
        var total = 0.0
        var cumulative = [0.0]
        for index in 1..<points.count {
            total += Self.distance(points[index - 1], points[index])
            cumulative.append(total)
        }
        self.cumulative = cumulative
    }

    static let maximumPoints = 20_000

    /// A course as its store keeps it (the points as JSON), or nil when the text is no valid
    /// course. Every batch of a runner and every read of a run needs the course, which never
    /// changes once made, so the decoded courses are kept by their text: decoding the JSON of
    /// a 200-point course for each batch was the race's largest cost after the database.
    static func stored(_ text: String) -> RunPath? {
        if let known = decoded.withLock({ $0[text] }) { return known }
        guard let points: [[Double]] = try? StoreJSON.decode(text), let path = try? RunPath(points: points) else { return nil }
        decoded.withLock { cache in
            // A few hundred live runs at most at once; past that, start again rather than grow.
            if cache.count >= Self.decodedLimit { cache.removeAll(keepingCapacity: true) }
            cache[text] = path
        }
        return path
    }

    private static let decodedLimit = 256
    private static let decoded = Mutex<[String: RunPath]>([:])

    /// The `trkpt` (or, failing those, `rtept`) points of a GPX document, in order.
    package static func parseGPX(_ text: String) throws(RunPathError) -> RunPath {
        var points = try scan(text, element: "trkpt")
        if points.isEmpty { points = try scan(text, element: "rtept") }
        guard !points.isEmpty else { throw RunPathError("the GPX has no <trkpt> or <rtept> points") }
        return try RunPath(points: points)
    }

    private static func scan(_ text: String, element: String) throws(RunPathError) -> [[Double]] {
        var points: [[Double]] = []
        var rest = Substring(text)
        while let open = rest.range(of: "<\(element)") {
            let afterName = rest[open.upperBound...]
            guard let first = afterName.first, first == " " || first == "\t" || first == "\n" || first == "\r" else {
                rest = afterName
                continue
            }
            guard let close = afterName.firstIndex(of: ">") else { throw RunPathError("<\(element) at point \(points.count) is not closed") }
            let attributes = afterName[..<close]
            guard let latitude = attribute("lat", in: attributes).flatMap(Double.init),
                let longitude = attribute("lon", in: attributes).flatMap(Double.init)
            else { throw RunPathError("<\(element)> number \(points.count + 1) has no numeric lat and lon") }
            points.append([latitude, longitude])
            rest = afterName[close...]
        }
        return points
    }

    package static func attribute(_ name: String, in text: Substring) -> String? {
        var rest = text
        while let found = rest.range(of: name) {
            let before = found.lowerBound == text.startIndex ? " " : text[text.index(before: found.lowerBound)]
            var after = rest[found.upperBound...].drop { $0 == " " }
            guard before == " " || before == "\t" || before == "\n" || before == "\r", after.first == "=" else {
                rest = rest[found.upperBound...]
                continue
            }
            after = after.dropFirst().drop { $0 == " " }
            guard let quote = after.first, quote == "\"" || quote == "'" else { return nil }
            let value = after.dropFirst()
            guard let end = value.firstIndex(of: quote) else { return nil }
            return String(value[..<end])
        }
        return nil
    }

    /// The point `metres` along the course (clamped to it): for simulations and tests.
    package func point(at metres: Double) -> (latitude: Double, longitude: Double) {
        let target = min(max(0, metres), length)
        var index = 1
        while index < cumulative.count - 1 && cumulative[index] < target { index += 1 }
        let span = cumulative[index] - cumulative[index - 1]
        let fraction = span > 0 ? (target - cumulative[index - 1]) / span : 0
        let a = points[index - 1]
        let b = points[index]
        return (a[0] + (b[0] - a[0]) * fraction, a[1] + (b[1] - a[1]) * fraction)
    }

    package static let metresPerDegree = PositionSamplingPolicy.earthRadiusMetres * .pi / 180

    /// Great-circle distance in metres: the one the device's sampling uses.
    static func distance(_ a: [Double], _ b: [Double]) -> Double {
        PositionSamplingPolicy.distanceMetres(fromLatitude: a[0], longitude: a[1], toLatitude: b[0], longitude: b[1])
    }
}

package struct RunPathError: Error, Hashable, Sendable, CustomStringConvertible {
    var message: String
    init(_ message: String) { self.message = message }
    package var description: String { message }
}
