extension PersonalTables {
    /// The people room (Data4Help): wearers' devices, consents, carers, the access log and the
    /// group figures' daily summaries.
    static let people: [PersonalTable] = [
        PersonalTable(name: "access_requests", keys: [.soleWearer("person_id")]),
        PersonalTable(name: "carer_links", keys: [.soleWearer("person_id")]),
        PersonalTable(
            name: "access_log",
            keys: [.soleWearer("subject", prefix: "person:"), .soleWearer("reader_id", prefix: "account:"), .device("subject", prefix: "device:")],
            retention: [.init(kind: .accessLog, sql: "at_ms < ?")]
        ),
        // Keyed `person:ACCOUNT`, or `device:ID` for a device no wearer account is linked to.
        PersonalTable(
            name: "person_days",
            keys: [.soleWearer("person_key", prefix: "person:"), .device("person_key", prefix: "device:")],
            retention: [.init(kind: .groupFigures, sql: "day < ?", binds: [.cutoffDay])]
        ),
        // Kept as long as the readings they summarise: `deleteReadings` deletes them with the
        // readings' cut-off.
        PersonalTable(name: "heart_rate_days", keys: [.device("device_id")], retention: [PersonalTables.retiredRule()]),
        // The counters the daily summaries above are made of: kept as long as those.
        PersonalTable(
            name: "device_days",
            keys: [.device("device_id")],
            retention: [.init(kind: .groupFigures, sql: "day < ?", binds: [.cutoffDay])]
        ),
        PersonalTable(
            name: "group_queries",
            retention: [.init(kind: .groupFigures, sql: "at_ms < ?")],
            holdsNoOne: "an organisation's question and a count over more than 1,000 people"
        ),
        PersonalTable(name: "people_rollup", holdsNoOne: "the last day summarised"),
        PersonalTable(name: "wearer_devices", keys: [.device("device_id")]),
    ]
}
