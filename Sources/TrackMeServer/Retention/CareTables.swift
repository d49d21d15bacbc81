extension PersonalTables {
    /// Care settings and erasure's own bookkeeping.
    static let care: [PersonalTable] = [
        PersonalTable(name: "care_settings", keys: [.device("device_id")], retention: [retiredRule()]),
        PersonalTable(
            name: "wipe_orders",
            retention: [.init(kind: .retiredPeople, sql: "ordered_ms < ?", counts: false)],
            holdsNoOne: "a digest of an erased device's token"
        ),
    ]
}
