extension PersonalTables {
    /// The contacts room: who was told of an alert, when, and whether they confirmed.
    static let contacts: [PersonalTable] = [
        PersonalTable(
            name: "contact_notifications",
            keys: [.alert("alert_id")],
            retention: [
                .init(kind: .alertUpdates, sql: "created_ms < ? AND alert_id IN (\(closedIDs))"),
                .init(kind: .closedAlerts, sql: "alert_id IN (\(expiredIDs))"),
            ]
        )
    ]
}
