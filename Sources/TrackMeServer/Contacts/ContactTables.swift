extension PersonalTables {
    /// The contacts room: who was told of an alert, when, each run of the notifier, and whether
    /// they confirmed.
    static let contacts: [PersonalTable] = [
        PersonalTable(
            name: "contact_attempts",
            keys: [.alert("alert_id")],
            retention: [
                .init(kind: .alertUpdates, sql: "started_ms < ? AND alert_id IN (\(closedIDs))"),
                .init(kind: .closedAlerts, sql: "alert_id IN (\(expiredIDs))"),
            ]
        ),
        PersonalTable(
            name: "contact_notifications",
            keys: [.alert("alert_id")],
            retention: [
                .init(kind: .alertUpdates, sql: "created_ms < ? AND alert_id IN (\(closedIDs))"),
                .init(kind: .closedAlerts, sql: "alert_id IN (\(expiredIDs))"),
            ]
        ),
    ]
}
