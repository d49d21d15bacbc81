import Foundation

/// One SQL statement both backends run as written: `?` placeholders (PostgreSQL gets `$1`,
/// `$2`, ...), `instr(haystack, needle)` (PostgreSQL gets `strpos`), no booleans. Retention and
/// erasure are lists of these, so the two stores cannot drift apart on what they delete.
struct PortableStatement: Hashable, Sendable {
    enum Value: Hashable, Sendable {
        case text(String)
        case integer(Int64)
    }

    var sql: String
    var values: [Value]
    /// Whether the rows it changes count as deleted personal data (a bookkeeping insert does not).
    var counts = true

    /// The statement in PostgreSQL's dialect.
    var postgresSQL: String {
        var text = ""
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                text += "$\(index)"
            } else {
                text.append(character)
            }
        }
        return text.replacingOccurrences(of: "instr(", with: "strpos(")
    }
}

/// What each retention kind deletes, as portable statements: the rules of every room's tables
/// (`PersonalTables`), in their order.
enum RetentionSQL {
    /// Statements for `kind` (readings have a store method of their own: `deleteReadings`).
    static func statements(_ cutoff: RetentionCutoff, nowMilliseconds now: Int64) -> [PortableStatement] {
        guard cutoff.kind != .readings else { return [] }
        var statements: [PortableStatement] = []
        for table in PersonalTables.all {
            for rule in table.retention where rule.kind == cutoff.kind {
                let values: [PortableStatement.Value] = rule.binds.map {
                    switch $0 {
                    case .cutoff: .integer(cutoff.beforeMilliseconds)
                    case .cutoffDay: .integer(Int64(GroupFigures.day(cutoff.beforeMilliseconds)))
                    case .now: .integer(now)
                    }
                }
                let sql = rule.whole ? rule.sql : "DELETE FROM \(table.name) WHERE \(rule.sql)"
                statements.append(PortableStatement(sql: sql, values: values, counts: rule.counts))
            }
        }
        return statements
    }
}

/// Everything stored about one device and the person wearing it, as portable statements: every
/// key of every room's tables (`PersonalTables`). The wearer's own account and what hangs on it
/// go first (while `wearer_devices` still says whose the device is), then the rows of its
/// alerts, then the feed's events naming either, then the rows of the device, the device last.
enum ErasureSQL {
    static func statements(deviceID: String, alertIDs: [String]) -> [PortableStatement] {
        let soleWearers =
            "SELECT account_id FROM wearer_devices WHERE device_id = ? AND account_id NOT IN (SELECT account_id FROM wearer_devices WHERE device_id <> ?)"
        var wearer: [PortableStatement] = []
        var alerts: [PortableStatement] = []
        var quoted: [PortableStatement] = []
        var device: [PortableStatement] = []
        for table in PersonalTables.all {
            for key in table.keys {
                switch key {
                case .soleWearer(let column, let prefix):
                    wearer.append(
                        PortableStatement(
                            sql: "DELETE FROM \(table.name) WHERE \(column) IN (SELECT '\(prefix)' || account_id FROM (\(soleWearers)) w)",
                            values: [.text(deviceID), .text(deviceID)]
                        )
                    )
                case .alert(let column):
                    for alertID in alertIDs {
                        alerts.append(PortableStatement(sql: "DELETE FROM \(table.name) WHERE \(column) = ?", values: [.text(alertID)]))
                    }
                case .quoted(let column):
                    for identifier in alertIDs + [deviceID] {
                        quoted.append(
                            PortableStatement(sql: "DELETE FROM \(table.name) WHERE instr(\(column), ?) > 0", values: [.text("\"\(identifier)\"")])
                        )
                    }
                case .device(let column, let prefix):
                    device.append(PortableStatement(sql: "DELETE FROM \(table.name) WHERE \(column) = ?", values: [.text(prefix + deviceID)]))
                }
            }
        }
        return wearer + alerts + quoted + device
    }
}
