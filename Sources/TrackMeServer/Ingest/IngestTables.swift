extension PersonalTables {
    /// Devices and what they send; the device row goes last (the other rooms find it by it).
    static let ingest: [PersonalTable] = [
        PersonalTable(name: "readings", keys: [.device("device_id")], retention: [retiredRule()]),
        PersonalTable(name: "batches", keys: [.device("device_id")], retention: [retiredRule()]),
        PersonalTable(name: "device_epochs", keys: [.device("device_id")], retention: [retiredRule()]),
        PersonalTable(name: "tokens", keys: [.device("device_id")]),
        PersonalTable(name: "server_clock", holdsNoOne: "the last trusted wall time"),
        PersonalTable(
            name: "devices",
            keys: [.device("device_id")],
            retention: [PersonalTable.Rule(kind: .retiredPeople, sql: "device_id IN (\(retired))")]
        ),
    ]
}
