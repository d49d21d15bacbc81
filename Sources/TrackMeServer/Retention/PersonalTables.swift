/// One table as its room declares it: how erasure finds a person's rows in it, and what each
/// retention kind deletes of it. Erasure (`ErasureSQL`) and retention (`RetentionSQL`) walk
/// `PersonalTables.rooms` and nothing else, and a test fails for any table of the database that
/// no room declares: a new table is either reached or says why it holds no one.
struct PersonalTable: Sendable {
    /// How a column names the person whose data is erased.
    enum Key: Sendable {
        /// The device's id, after `prefix` (`device:` in the access log's subject).
        case device(String, prefix: String = "")
        /// One of the device's alert ids.
        case alert(String)
        /// The wearer account linked to this device and to no other device, after `prefix`.
        case soleWearer(String, prefix: String = "")
        /// JSON text that holds the device id or one of its alert ids as a string value.
        case quoted(String)
    }

    /// A value a retention statement is run with.
    enum Bind: Sendable {
        /// The cut-off, server wall time in ms.
        case cutoff
        /// The cut-off's UTC day (tables kept by day).
        case cutoffDay
        /// The pass's time.
        case now
    }

    /// One statement a retention kind runs on this table, in order: `DELETE FROM table WHERE sql`,
    /// or `sql` as it is when `whole`.
    struct Rule: Sendable {
        var kind: PersonalDataKind
        var sql: String
        var binds: [Bind] = [.cutoff]
        /// Whether the rows it changes count as deleted personal data (bookkeeping does not).
        var counts = true
        var whole = false
    }

    var name: String
    var keys: [Key] = []
    var retention: [Rule] = []
    /// For a table without keys: why it holds nothing of a person.
    var holdsNoOne: String? = nil
}

/// Every room's tables, in the order erasure and retention walk them: rows that refer to others
/// (notifications, notes, entries) before what they refer to (alerts, devices), the device last.
enum PersonalTables {
    static var rooms: [(room: String, tables: [PersonalTable])] {
        [
            ("contacts", contacts), ("people", people), ("races", races), ("care", care), ("accounts", accounts), ("alerts", alerts),
            ("fleet", fleet), ("ingest", ingest),
        ]
    }

    static var all: [PersonalTable] { rooms.flatMap(\.tables) }

    /// An alert the device or a dispatcher closed.
    static let closed = "(outcome IS NOT NULL OR state IN ('resolved', 'cancelled'))"
    /// The closed alerts' ids.
    static let closedIDs = "SELECT alert_id FROM alerts WHERE \(closed)"
    /// Closed alerts whose row is due (closed before the cut-off).
    static let expiredIDs = "SELECT alert_id FROM alerts WHERE \(closed) AND COALESCE(resolved_ms, updated_ms) < ?"
    /// A device with no token left (retired), no alert kept and no contact since the cut-off.
    static let retired = """
        SELECT device_id FROM devices d
        WHERE NOT EXISTS (SELECT 1 FROM tokens t WHERE t.device_id = d.device_id)
            AND NOT EXISTS (SELECT 1 FROM alerts a WHERE a.device_id = d.device_id)
            AND COALESCE(d.last_seen_ms, d.enrolled_ms) < ?
        """

    /// The retention rule of a retired person's rows of a device-keyed table.
    static func retiredRule(_ column: String = "device_id") -> PersonalTable.Rule {
        PersonalTable.Rule(kind: .retiredPeople, sql: "\(column) IN (\(retired))")
    }
}
