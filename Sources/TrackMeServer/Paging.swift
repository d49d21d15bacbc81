import Foundation
import Hummingbird

/// One page of a list the server answers: at most `limit` items (1 to the configuration's
/// `maxPageSize`; `defaultLimit` when the client names none) after the `after` cursor, which is
/// the previous page's `next`. Every list that grows with the number of people, devices or events
/// reads its page here and bounds its store query with `fetchLimit`, so that no request reads a
/// whole table however large it grows.
struct PageRequest: Hashable, Sendable {
    static let defaultLimit = 100

    var limit: Int
    var after: PageCursor?

    init(limit: Int, after: PageCursor? = nil) {
        self.limit = limit
        self.after = after
    }

    /// Reads `limit` and `after` from the query; either wrong is a 400 naming it.
    init(_ request: Request, maxLimit: Int, defaultLimit: Int = PageRequest.defaultLimit) throws {
        let parameters = request.uri.queryParameters
        let ceiling = max(1, maxLimit)
        var limit = min(defaultLimit, ceiling)
        if let text = parameters.get("limit"), !text.isEmpty {
            guard let value = Int(text), (1...ceiling).contains(value) else { throw APIError.invalid("limit", "must be 1-\(ceiling)") }
            limit = value
        }
        var after: PageCursor?
        if let text = parameters.get("after"), !text.isEmpty {
            guard let cursor = PageCursor(text: text) else {
                throw APIError.invalid("after", "not a cursor of this list: pass the previous page's next unchanged")
            }
            after = cursor
        }
        self.init(limit: limit, after: after)
    }

    /// What to ask the store for: one row more than the page, whose presence says there is a next
    /// page without a second query or an empty last page.
    var fetchLimit: Int { limit + 1 }

    /// The page out of at most `fetchLimit` rows in list order, and the cursor after its last
    /// row when more follow.
    func cut<Row>(_ rows: [Row], cursor: (Row) -> PageCursor) -> (rows: [Row], next: String?) {
        guard rows.count > limit else { return (rows, nil) }
        let page = Array(rows.prefix(limit))
        return (page, page.last.map { cursor($0).text })
    }
}

/// Where a list stopped: the sort key of the last item sent (one or more parts), as opaque
/// base64url text. Clients pass it back unchanged; the list decides what its parts mean, and a
/// cursor of another shape is a 400 rather than a wrong page.
struct PageCursor: Hashable, Sendable {
    var parts: [String]

    init(_ parts: String...) {
        self.parts = parts
    }

    /// Parts are separated by a unit separator, which no identifier the server accepts contains.
    private static let separator: Character = "\u{1F}"

    init?(text: String) {
        guard text.count <= 1024 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let decoded = String(data: data, encoding: .utf8), !decoded.isEmpty else {
            return nil
        }
        parts = decoded.split(separator: Self.separator, omittingEmptySubsequences: false).map(String.init)
    }

    var text: String {
        Data(parts.joined(separator: String(Self.separator)).utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The cursor's only part as text (a list keyed by one id or name).
    func string() throws -> String {
        guard parts.count == 1, let part = parts.first, !part.isEmpty else { throw Self.wrongShape }
        return part
    }

    /// The cursor's only part as an integer (a list keyed by a row id).
    func integer() throws -> Int64 {
        guard let value = Int64(try string()) else { throw Self.wrongShape }
        return value
    }

    /// A cursor of a time and an id (a list in time order, the id breaking ties).
    func timeAndID() throws -> (milliseconds: Int64, id: String) {
        guard parts.count == 2, let milliseconds = Int64(parts[0]), !parts[1].isEmpty else { throw Self.wrongShape }
        return (milliseconds, parts[1])
    }

    private static let wrongShape = APIError.invalid("after", "not a cursor of this list: pass the previous page's next unchanged")
}
