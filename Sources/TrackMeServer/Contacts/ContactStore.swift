/// A contact's notification of an alert, as stored.
struct ContactNotification: Hashable, Sendable {
    var alertID: String
    var contactIndex: Int
    var nonce: String
    var expiresMilliseconds: Int64
    var confirmedMilliseconds: Int64?
}

/// Which contacts were told of which alert, and who confirmed; both backends.
protocol ContactStore: Sendable {
    /// Records that contact `index` is being told of the alert; false if they were already.
    func insertContactNotification(_ notification: ContactNotification, createdMilliseconds: Int64) async throws -> Bool
    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification?
    /// Marks the notification confirmed if it is not yet and the nonce matches; false otherwise.
    func confirmContactNotification(alertID: String, contactIndex: Int, nonce: String, atMilliseconds: Int64) async throws -> Bool
}
