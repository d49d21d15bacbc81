import Foundation
import TrackMeCore

/// The text downloads the server gives people (a wearer's export, a run's results and tracks):
/// one CSV field rule, one GPX writer, one timestamp form, whoever asks. Pure.
enum Downloads {
    /// One CSV field: quoted when it holds a comma, quote or line break; a leading `= + - @`,
    /// tab or carriage return is prefixed with `'` (unless the field is a number) so that a
    /// spreadsheet never runs a name as a formula.
    static func csvField(_ text: String) -> String {
        var value = text
        if let first = value.first, "=+-@\t\r".contains(first), Double(value) == nil { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Wall-clock milliseconds as ISO 8601 UTC with milliseconds (`CivilDate`: a download writes
    /// one per row, and a Foundation formatter made for each cost more than the rest of the row).
    static func iso(_ milliseconds: Int64) -> String { CivilDate.iso8601(milliseconds: milliseconds) }
}

/// GPX 1.1 output: one `<trk>` per runner or device. Every text is escaped for XML.
enum GPXWriter {
    struct Track: Sendable {
        var name: String
        /// `(wall ms, latitude, longitude)`, in time order.
        var points: [(Int64, Double, Double)]
    }

    static func document(name: String, tracks: [Track]) -> String {
        var out = header(name: name)
        for track in tracks {
            out += trackStart(name: track.name)
            for (time, latitude, longitude) in track.points { out += point(time, latitude, longitude) }
            out += trackEnd
        }
        return out + footer
    }

    // The document's pieces, for a download written as its fixes are read.
    static func header(name: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="trackme-server" xmlns="http://www.topografix.com/GPX/1/1">
        <metadata><name>\(escape(name))</name></metadata>

        """
    }

    static func trackStart(name: String) -> String { "<trk><name>\(escape(name))</name><trkseg>\n" }

    static func point(_ time: Int64, _ latitude: Double, _ longitude: Double) -> String {
        "<trkpt lat=\"\(latitude)\" lon=\"\(longitude)\"><time>\(Downloads.iso(time))</time></trkpt>\n"
    }

    static let trackEnd = "</trkseg></trk>\n"
    static let footer = "</gpx>\n"

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}
