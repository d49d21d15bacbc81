import TrackMeCore

/// A contact's notification of an alert, as stored.
struct ContactNotification: Hashable, Sendable {
    var alertID: String
    var contactIndex: Int
    var nonce: String
    var expiresMilliseconds: Int64
    var confirmedMilliseconds: Int64?
}

/// What the contacts' room reads and writes, and nothing more: its own tables, and of the
/// desk's only the alert a link names (its row, its updates, acknowledging it) and the open ones
/// the escalation walks; the person's access log for a contact's read.
protocol ContactsRoomStore: ContactStore, AccessLogStore {
    func alertRows(open: Bool, limit: Int) async throws -> [AlertDeskRow]
    func alertRow(id: String) async throws -> AlertDeskRow?
    func alertUpdates(alertID: String) async throws -> [AlertUpdateRow]
    func acknowledgeAlert(id: String, by tokenID: String, atMilliseconds: Int64) async throws -> AcknowledgeOutcome
    func wearerAccount(deviceID: String) async throws -> String?
}

/// Which contacts were told of which alert, and who confirmed; both backends.
protocol ContactStore: ContactAttemptStore, Sendable {
    /// Records that contact `index` is being told of the alert; false if they were already.
    func insertContactNotification(_ notification: ContactNotification, createdMilliseconds: Int64) async throws -> Bool
    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification?
    /// Marks the notification confirmed if it is not yet and the nonce matches; false otherwise.
    func confirmContactNotification(alertID: String, contactIndex: Int, nonce: String, atMilliseconds: Int64) async throws -> Bool
}

/// Why a contact is told: the alert went unacknowledged (the escalation schedule), it was just
/// raised (a contact who asked to hear at once), or it closed; or `device`: the device told them
/// itself (its local fallback, while the server did not have the alert), which the server records
/// from the alert's update and does not repeat.
enum ContactPurpose: String, Codable, Hashable, Sendable, CaseIterable {
    case escalation
    case raised
    case closed
    case device
}

/// How one run of the notifier ended.
enum ContactAttemptResult: String, Codable, Hashable, Sendable {
    /// Exited 0: the message is on its way.
    case told
    /// Exited non-zero or was killed by a signal.
    case failed
    /// Still running at the time limit; killed.
    case timedOut = "timed_out"
    /// The executable could not be started.
    case notStarted = "not_started"
}

/// One run of the notifier for one contact, as stored (`contact_attempts`).
struct ContactAttempt: Hashable, Sendable {
    var alertID: String
    var contactIndex: Int
    var purpose: ContactPurpose
    /// 1 for the first try.
    var attempt: Int
    var startedMilliseconds: Int64
    var finishedMilliseconds: Int64?
    /// nil while it runs (or if the server stopped during it).
    var result: ContactAttemptResult?
    var exitStatus: Int32?
    var detail: String?
}

/// The notifier's attempts; both backends.
protocol ContactAttemptStore: Sendable {
    /// Every attempt for the alert, by contact, purpose and attempt number.
    func contactAttempts(alertID: String) async throws -> [ContactAttempt]
    /// Claims attempt number `attempt.attempt` (an unfinished row); false if an instance has it.
    func claimContactAttempt(_ attempt: ContactAttempt) async throws -> Bool
    /// Records how a claimed attempt ended.
    func finishContactAttempt(_ attempt: ContactAttempt) async throws
}

extension ContactAttempt {
    /// The contacts an alert update says the device told (`AlertUpdate.contactsTold`), as told
    /// attempts of purpose `device`, placed on the server's clock like the alert's own times.
    static func toldByDevice(_ update: AlertUpdate, receivedMilliseconds: Int64) -> [ContactAttempt] {
        update.contactsTold.map { told in
            let at = AlertTimeline.placed(told.at, sent: update.sent, receivedMilliseconds: receivedMilliseconds).at
            return ContactAttempt(
                alertID: update.alert.id,
                contactIndex: told.contactIndex,
                purpose: .device,
                attempt: 1,
                startedMilliseconds: at,
                finishedMilliseconds: at,
                result: .told,
                detail: told.path.rawValue
            )
        }
    }
}
