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

/// What each retention kind deletes, as portable statements.
enum RetentionSQL {
    /// An alert the device or a dispatcher closed.
    static let closed = "(outcome IS NOT NULL OR state IN ('resolved', 'cancelled'))"
    /// A device with no token left (retired), no alert kept and no contact since the cut-off.
    static let retired = """
        SELECT device_id FROM devices d
        WHERE NOT EXISTS (SELECT 1 FROM tokens t WHERE t.device_id = d.device_id)
            AND NOT EXISTS (SELECT 1 FROM alerts a WHERE a.device_id = d.device_id)
            AND COALESCE(d.last_seen_ms, d.enrolled_ms) < ?
        """

    /// Statements for `kind` (readings have a store method of their own: `deleteReadings`).
    static func statements(_ cutoff: RetentionCutoff, nowMilliseconds now: Int64) -> [PortableStatement] {
        let before = PortableStatement.Value.integer(cutoff.beforeMilliseconds)
        switch cutoff.kind {
        case .readings:
            return []
        case .alertUpdates:
            let closedIDs = "SELECT alert_id FROM alerts WHERE \(closed)"
            return [
                PortableStatement(sql: "DELETE FROM alert_updates WHERE received_ms < ? AND alert_id IN (\(closedIDs))", values: [before]),
                PortableStatement(sql: "DELETE FROM alert_notes WHERE created_ms < ? AND alert_id IN (\(closedIDs))", values: [before]),
                PortableStatement(sql: "DELETE FROM contact_notifications WHERE created_ms < ? AND alert_id IN (\(closedIDs))", values: [before]),
            ]
        case .closedAlerts:
            let expired = "SELECT alert_id FROM alerts WHERE \(closed) AND COALESCE(resolved_ms, updated_ms) < ?"
            return ["alert_updates", "alert_notes", "contact_notifications"].map {
                PortableStatement(sql: "DELETE FROM \($0) WHERE alert_id IN (\(expired))", values: [before])
            } + [PortableStatement(sql: "DELETE FROM alerts WHERE \(closed) AND COALESCE(resolved_ms, updated_ms) < ?", values: [before])]
        case .feedEvents:
            // The feed has no time column: each pass marks the highest id at its time, and a
            // later pass deletes what was below the newest mark older than the cut-off.
            return [
                PortableStatement(sql: "INSERT INTO feed_marks (at_ms, max_id) SELECT ?, COALESCE(MAX(id), 0) FROM feed", values: [.integer(now)], counts: false),
                PortableStatement(sql: "DELETE FROM feed WHERE id <= (SELECT COALESCE(MAX(max_id), 0) FROM feed_marks WHERE at_ms < ?)", values: [before]),
                PortableStatement(
                    sql: "DELETE FROM feed_marks WHERE at_ms < (SELECT MAX(at_ms) FROM feed_marks WHERE at_ms < ?)", values: [before], counts: false),
            ]
        case .retiredPeople:
            return ["readings", "batches", "device_epochs", "care_settings", "run_entries", "fleet_taxis"].map {
                PortableStatement(sql: "DELETE FROM \($0) WHERE device_id IN (\(retired))", values: [before])
            } + [
                PortableStatement(sql: "DELETE FROM devices WHERE device_id IN (\(retired))", values: [before]),
                PortableStatement(sql: "DELETE FROM wipe_orders WHERE ordered_ms < ?", values: [before], counts: false),
            ]
        case .accessLog:
            return [PortableStatement(sql: "DELETE FROM access_log WHERE at_ms < ?", values: [before])]
        }
    }
}

/// Everything stored about one device and the person wearing it, as portable statements.
enum ErasureSQL {
    /// Deletes every row of `deviceID`, and of `alertIDs` (its alerts), from every table that
    /// holds them; feed events that name either.
    static func statements(deviceID: String, alertIDs: [String]) -> [PortableStatement] {
        var statements: [PortableStatement] = []
        for alertID in alertIDs {
            for table in ["alert_updates", "alert_notes", "contact_notifications"] {
                statements.append(PortableStatement(sql: "DELETE FROM \(table) WHERE alert_id = ?", values: [.text(alertID)]))
            }
            statements.append(quotedInFeed(alertID))
        }
        // The wearer account linked to this device and to no other (issue 20): its sessions,
        // the access requests made to it, its carer links, the reads logged about it (subject
        // `person:ACCOUNT`) or by it (reader `account:ACCOUNT`), then the account. Before
        // `wearer_devices` goes, which says whose it is.
        let soleWearers =
            "SELECT account_id FROM wearer_devices WHERE device_id = ? AND account_id NOT IN (SELECT account_id FROM wearer_devices WHERE device_id <> ?)"
        for (prefix, column) in [("person:", "subject"), ("account:", "reader_id")] {
            statements.append(
                PortableStatement(
                    sql: "DELETE FROM access_log WHERE \(column) IN (SELECT '\(prefix)' || account_id FROM (\(soleWearers)) w)",
                    values: [.text(deviceID), .text(deviceID)]))
        }
        for (table, column) in [("sessions", "account_id"), ("access_requests", "person_id"), ("carer_links", "person_id"), ("accounts", "id")] {
            statements.append(
                PortableStatement(sql: "DELETE FROM \(table) WHERE \(column) IN (\(soleWearers))", values: [.text(deviceID), .text(deviceID)]))
        }
        // Races/ (issue 21): its run entries (name, track) and its fleet terminal row.
        // People/ (issue 20): the device's link to a wearer account, reads logged about it, its daily figures.
        statements.append(PortableStatement(sql: "DELETE FROM access_log WHERE subject = ?", values: [.text("device:\(deviceID)")]))
        statements.append(PortableStatement(sql: "DELETE FROM person_days WHERE person_key = ?", values: [.text(deviceID)]))
        for table in ["readings", "batches", "device_epochs", "tokens", "care_settings", "alert_updates", "alerts", "wearer_devices", "run_entries", "fleet_taxis"] {
            statements.append(PortableStatement(sql: "DELETE FROM \(table) WHERE device_id = ?", values: [.text(deviceID)]))
        }
        statements.append(quotedInFeed(deviceID))
        statements.append(PortableStatement(sql: "DELETE FROM devices WHERE device_id = ?", values: [.text(deviceID)]))
        return statements
    }

    /// Feed events whose JSON holds the identifier as a string value.
    private static func quotedInFeed(_ identifier: String) -> PortableStatement {
        PortableStatement(sql: "DELETE FROM feed WHERE instr(data, ?) > 0", values: [.text("\"\(identifier)\"")])
    }
}
