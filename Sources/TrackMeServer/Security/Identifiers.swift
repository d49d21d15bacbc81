import Hummingbird
import TrackMeCore

/// Identifiers from the outside (alert ids, ids in paths, token ids) checked where they enter:
/// 1-128 bytes of UTF-8 with no control character. A NUL would otherwise cut the text short in
/// SQLite (`al\u{0}ert` stored as `al`, and a later `al` answered as its duplicate).
enum Identifier {
    static let maxBytes = 128

    /// Nil when `text` is acceptable, else why not.
    static func problem(_ text: String) -> String? {
        guard !text.isEmpty else { return "must not be empty" }
        guard text.utf8.count <= maxBytes else { return "must be at most \(maxBytes) bytes" }
        for scalar in text.unicodeScalars where scalar.properties.generalCategory == .control {
            return "must not contain control characters (U+\(String(scalar.value, radix: 16, uppercase: true)))"
        }
        return nil
    }

    /// Throws a 400 naming `field` when `text` is not acceptable.
    static func validate(_ text: String, field: String) throws {
        if let problem = problem(text) { throw APIError.invalid(field, problem) }
    }

    /// A path parameter percent-decoded (`a%20b` is `a b`) and validated; a malformed escape is
    /// a 400, not a lookup of the raw text.
    static func pathParameter(_ raw: String?, field: String) throws -> String {
        guard let raw else { throw APIError.invalid(field, "missing") }
        guard let decoded = raw.removingPercentEncodingStrict() else { throw APIError.invalid(field, "malformed percent-encoding") }
        try validate(decoded, field: field)
        return decoded
    }
}

extension String {
    /// Percent-decodes, nil for a `%` not followed by two hex digits or bytes that are not UTF-8.
    /// (Foundation's `removingPercentEncoding` would do, but this keeps the rule in one place.)
    fileprivate func removingPercentEncodingStrict() -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var iterator = utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(Hex.digit), let low = iterator.next().flatMap(Hex.digit) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension ServerRequestContext {
    /// The path parameter `name` as an identifier (`Identifier.pathParameter`): every route
    /// takes its ids through this, so `a%20b` and `a%2Fb` are found and a malformed escape is 400.
    func pathID(_ name: String) throws -> String {
        try Identifier.pathParameter(parameters.get(name), field: name)
    }
}
