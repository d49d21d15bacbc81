extension PersonalTables {
    /// Accounts and their sessions: a wearer's own account goes with their only device.
    static let accounts: [PersonalTable] = [
        PersonalTable(name: "sessions", keys: [.soleWearer("account_id")]),
        PersonalTable(name: "account_links", keys: [.soleWearer("account_id")]),
        PersonalTable(name: "accounts", keys: [.soleWearer("id")]),
    ]
}
