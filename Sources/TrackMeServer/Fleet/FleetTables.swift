extension PersonalTables {
    /// The fleet room's own table. A ride names its taxis (the one that took it and each one
    /// offered it) in its JSON body: erasing a taxi's driver erases the rides they were part of.
    /// Ended rides age with the taxis' rows; a ride never served ages from its booking.
    static let fleet: [PersonalTable] = [
        PersonalTable(
            name: "fleet_rides",
            keys: [.quoted("body")],
            retention: [.init(kind: .fleetTerminals, sql: "COALESCE(ended_ms, created_ms) < ?")]
        )
    ]
}
