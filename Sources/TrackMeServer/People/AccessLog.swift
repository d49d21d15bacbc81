/// What writing a person's access log needs of a store: the name a reader's account goes by,
/// and the append.
protocol AccessLogStore: Sendable {
    /// The name an account goes by in the access log, or nil.
    func accountName(id: String) async throws -> String?
    func appendAccessLog(_ entry: AccessLogEntry) async throws
}

/// Writes a read or a change into a person's access log, under the reader's name: a person or an
/// organisation by their account's name, a token without an account by what it is.
struct AccessLog: Sendable {
    let store: any AccessLogStore
    let wallClock: @Sendable () -> Int64

    /// Records a read unless it is the person's own.
    func record(_ principal: Principal, subject: String, grants: [AccessPolicy.Grant], what: String) async throws {
        let reasons = Set(grants.map(\.reason))
        guard reasons != [.ownData], reasons != [.ownDevice] else { return }
        try await record(principal, subject: subject, reason: reasons.map(\.rawValue).sorted().joined(separator: ","), what: what)
    }

    /// Records a read or a change by `principal` in the access log of `subject`
    /// (`person:ACCOUNT` or `device:ID`), for a reason given as text.
    func record(_ principal: Principal, subject: String, reason: String, what: String) async throws {
        var name = PersonData.readerName(principal.role)
        if let accountID = principal.accountID, let accountName = try await store.accountName(id: accountID) { name = accountName }
        try await store.appendAccessLog(
            AccessLogEntry(
                id: 0,
                subject: subject,
                readerID: principal.actor,
                readerName: name,
                readerRole: principal.role.rawValue,
                reason: reason,
                what: what,
                atMilliseconds: wallClock()
            )
        )
    }
}

extension SQLiteServerStore {
    func accountName(id: String) async throws -> String? {
        try await account(id: id)?.displayName
    }
}

#if PostgreSQL
extension PostgresServerStore {
    func accountName(id: String) async throws -> String? {
        try await account(id: id)?.displayName
    }
}
#endif
