extension PersonalTables {
    /// The runs (Track4Run) and the taxi fleet.
    static let races: [PersonalTable] = [
        PersonalTable(name: "runs", holdsNoOne: "an organiser's run: name, path and times, no runner"),
        // A runner's name and last public position: gone a retention period after the run ended.
        PersonalTable(
            name: "run_entries",
            keys: [.device("device_id")],
            retention: [.init(kind: .finishedRuns, sql: "run_id IN (SELECT id FROM runs WHERE end_ms < ?)"), retiredRule()]
        ),
        PersonalTable(name: "fleet_zones", holdsNoOne: "the operator's zones"),
        PersonalTable(
            name: "fleet_taxis",
            keys: [.device("device_id")],
            retention: [.init(kind: .fleetTerminals, sql: "last_report_ms < ?"), retiredRule()]
        ),
    ]
}
