extension PersonalTables {
    /// Alerts, their updates and notes, the dispatcher feed, and the alerts no dispatcher is sent.
    static let alerts: [PersonalTable] = [
        PersonalTable(
            name: "alert_updates",
            keys: [.alert("alert_id"), .device("device_id")],
            retention: [
                .init(kind: .alertUpdates, sql: "received_ms < ? AND alert_id IN (\(closedIDs))"),
                .init(kind: .closedAlerts, sql: "alert_id IN (\(expiredIDs))"),
            ]
        ),
        PersonalTable(
            name: "alert_notes",
            keys: [.alert("alert_id")],
            retention: [
                .init(kind: .alertUpdates, sql: "created_ms < ? AND alert_id IN (\(closedIDs))"),
                .init(kind: .closedAlerts, sql: "alert_id IN (\(expiredIDs))"),
            ]
        ),
        PersonalTable(
            name: "alerts",
            keys: [.device("device_id")],
            retention: [.init(kind: .closedAlerts, sql: "\(closed) AND COALESCE(resolved_ms, updated_ms) < ?")]
        ),
        // Events that predate their time column are aged by marks: each pass marks the highest
        // id at its time, and a later pass deletes what was below the newest mark older than the
        // cut-off.
        PersonalTable(
            name: "feed",
            keys: [.quoted("data")],
            retention: [
                .init(
                    kind: .feedEvents,
                    sql: "INSERT INTO feed_marks (at_ms, max_id) SELECT ?, COALESCE(MAX(id), 0) FROM feed",
                    binds: [.now],
                    counts: false,
                    whole: true
                ),
                .init(kind: .feedEvents, sql: "id <= (SELECT COALESCE(MAX(max_id), 0) FROM feed_marks WHERE at_ms < ?)"),
                .init(
                    kind: .feedEvents,
                    sql: "DELETE FROM feed_marks WHERE at_ms < (SELECT MAX(at_ms) FROM feed_marks WHERE at_ms < ?)",
                    counts: false,
                    whole: true
                ),
            ]
        ),
        PersonalTable(name: "feed_marks", holdsNoOne: "feed ids and times"),
        undispatchedAlerts,
    ]
}
