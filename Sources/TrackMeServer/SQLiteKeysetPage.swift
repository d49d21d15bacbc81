import GRDB

/// One page of a list read by keyset on SQLite: the rows past the cursor's (time, id) in the
/// list's order, both columns in the ORDER BY so that rows of the same millisecond come once each,
/// and at most `limit` rows (all when nil). Every SQLite list ordered by a time and an id pages here.
struct SQLiteKeysetPage {
    var time: String
    var id: String
    var newestFirst: Bool

    /// Continues `sql`, a SELECT with a WHERE clause of its own (`filtered`) or without one.
    func append(to sql: inout String, _ arguments: inout StatementArguments, after: (Int64, String)?, limit: Int?, filtered: Bool) {
        let past = newestFirst ? "<" : ">"
        if let after {
            sql += (filtered ? " AND" : " WHERE") + " (\(time) \(past) ? OR (\(time) = ? AND \(id) \(past) ?))"
            arguments += [after.0, after.0, after.1]
        }
        let order = newestFirst ? " DESC" : ""
        sql += " ORDER BY \(time)\(order), \(id)\(order)"
        if let limit { sql += " LIMIT \(max(1, limit))" }
    }
}
