/// A recorded heart-rate trace in the shared CSV format (`traces/hr/`):
/// `t_ms,bpm,rr_ms,contact` with a header line, `rr_ms` space-separated RR intervals in ms, and
/// `contact` `yes` or `no`. One row is one strap notification.
public struct HeartRateTrace: Sendable, Hashable {
    public struct Row: Sendable, Hashable {
        /// Milliseconds from the start of the record.
        public var timeMilliseconds: Int64
        public var bpm: Int
        public var rrMilliseconds: [Int]
        public var contact: Bool

        public init(timeMilliseconds: Int64, bpm: Int, rrMilliseconds: [Int], contact: Bool) {
            self.timeMilliseconds = timeMilliseconds
            self.bpm = bpm
            self.rrMilliseconds = rrMilliseconds
            self.contact = contact
        }

        /// The reading a strap that reports contact would have sent for this row (RR in the
        /// strap's 1/1024 s unit).
        public var reading: HeartRateReading {
            HeartRateReading(
                bpm: bpm,
                contact: contact ? .detected : .notDetected,
                energyExpendedKilojoules: nil,
                rrIntervals: rrMilliseconds.map(HeartRateReading.rrUnits(fromMilliseconds:))
            )
        }
    }

    public struct ParseError: Error, Hashable, Sendable, CustomStringConvertible {
        /// 1-based line number in the file.
        public var line: Int
        public var message: String

        public var description: String { "line \(line): \(message)" }
    }

    public var rows: [Row]

    public init(rows: [Row]) {
        self.rows = rows
    }

    /// Parses the CSV text. Rows must be in time order.
    public init(csv text: String) throws(ParseError) {
        var rows: [Row] = []
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine[...]
            if line.isEmpty || line.hasPrefix("#") { continue }
            if lineNumber == 1 || line.hasPrefix("t_ms") {
                guard line.hasPrefix("t_ms,bpm,rr_ms,contact") else {
                    throw ParseError(line: lineNumber, message: "expected header t_ms,bpm,rr_ms,contact")
                }
                continue
            }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 4 else {
                throw ParseError(line: lineNumber, message: "expected 4 fields, found \(fields.count)")
            }
            guard let t = Int64(fields[0]) else { throw ParseError(line: lineNumber, message: "t_ms is not an integer") }
            guard let bpm = Int(fields[1]), bpm >= 0 else {
                throw ParseError(line: lineNumber, message: "bpm is not a non-negative integer")
            }
            var rr: [Int] = []
            for part in fields[2].split(separator: " ") {
                guard let value = Int(part), value > 0 else {
                    throw ParseError(line: lineNumber, message: "rr_ms holds \"\(part)\", not a positive integer")
                }
                rr.append(value)
            }
            let contact: Bool
            switch fields[3] {
            case "yes": contact = true
            case "no": contact = false
            default: throw ParseError(line: lineNumber, message: "contact must be yes or no")
            }
            if let last = rows.last, t < last.timeMilliseconds {
                throw ParseError(line: lineNumber, message: "t_ms goes backwards")
            }
            rows.append(Row(timeMilliseconds: t, bpm: bpm, rrMilliseconds: rr, contact: contact))
        }
        self.rows = rows
    }

    /// The trace's length from its first to its last row.
    public var duration: Duration {
        guard let first = rows.first, let last = rows.last else { return .zero }
        return .milliseconds(last.timeMilliseconds - first.timeMilliseconds)
    }
}
