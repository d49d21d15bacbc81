import Foundation
import Logging
import TrackMeCore
import TrackMeSystem

/// Tells an unacknowledged alert's emergency contacts, in order and on the schedule, each with
/// their own signed, single-use, expiring link; and confirms a link, which acknowledges the alert.
///
/// Telling is a durable job: every run of the notifier is an attempt stored before it starts
/// (`contact_attempts`: which instance runs it, and that it ran at all, survive a crash), has a
/// time limit, and is retried with a doubling wait until it exits 0 or the attempts run out; each
/// attempt and its result is on the alert's timeline.
struct ContactEscalation: Sendable {
    let store: any ContactsRoomStore
    let console: ConsoleConfiguration
    let wallClock: @Sendable () -> Int64
    /// Times each run of the notifier (its limit).
    let clock: any Clock<Duration>
    let logger: Logger

    /// One pass: runs every attempt now due, one after another (each bounded by its time limit).
    /// Returns how many contacts were told now (a run that exited 0).
    ///
    /// An open alert of a person who is told at once (`PersonProfile.tellsContactsAtRaise`) reaches
    /// every contact now, acknowledged or not (purpose `raised`); an unacknowledged one reaches
    /// them in order on the schedule (`escalation`), skipping a contact the raise already reached:
    /// they hold the same link. A contact the device told itself (purpose `device`, from the
    /// alert's updates) is told by neither: one notifier of each contact, not two.
    func run(baseURL: String) async throws -> Int {
        guard let command = console.contactNotifierCommand else { return 0 }
        var told = 0
        for row in try await store.alertRows(open: true, limit: 1000) {
            guard let person: PersonProfile = try? StoreJSON.decode(row.person), let contacts = person.contacts, !contacts.isEmpty else { continue }
            let kind = (try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8)))?.kind
            var attempts = try await store.contactAttempts(alertID: row.alertID)
            let toldByDevice = Set(attempts.filter { $0.purpose == .device && $0.result == .told }.map(\.contactIndex))
            if let kind, person.tellsContactsAtRaise(kind: kind) {
                for index in contacts.indices where !toldByDevice.contains(index) {
                    let result = try await tell(
                        index,
                        purpose: .raised,
                        command: command,
                        row: row,
                        person: person,
                        attempts: attempts,
                        baseURL: baseURL
                    )
                    if result == .told { told += 1 }
                }
                attempts = try await store.contactAttempts(alertID: row.alertID)
            }
            guard row.acknowledgedMilliseconds == nil else { continue }
            let due = ContactSchedule.due(
                settings: console.contactSchedule,
                openedMilliseconds: row.createdMilliseconds,
                nowMilliseconds: wallClock(),
                contacts: contacts.count
            )
            for index in 0..<due where !toldByDevice.contains(index) {
                let reachedAtRaise = attempts.contains { $0.contactIndex == index && $0.purpose == .raised && $0.result == .told }
                guard !reachedAtRaise else { continue }
                let result = try await tell(
                    index,
                    purpose: .escalation,
                    command: command,
                    row: row,
                    person: person,
                    attempts: attempts,
                    baseURL: baseURL
                )
                if result == .told { told += 1 }
            }
        }
        return told + (try await tellClosed(command: command, baseURL: baseURL))
    }

    /// Runs the next attempt for contact `index` and `purpose` if one is due (`ContactRetry`).
    func tell(
        _ index: Int,
        purpose: ContactPurpose,
        command: String,
        row: AlertDeskRow,
        person: PersonProfile,
        attempts: [ContactAttempt],
        baseURL: String
    ) async throws -> ContactAttemptResult? {
        guard let contacts = person.contacts, contacts.indices.contains(index) else { return nil }
        let earlier = attempts.filter { $0.contactIndex == index && $0.purpose == purpose }
        guard case .due(let number) = console.contactRetry.next(after: earlier, nowMilliseconds: wallClock()) else { return nil }
        guard let notification = try await notification(alertID: row.alertID, contactIndex: index) else { return nil }
        return try await attempt(
            number,
            purpose: purpose,
            command: command,
            row: row,
            person: person,
            contact: contacts[index],
            notification: notification,
            baseURL: baseURL
        )
    }

    /// Tells each contact who was told of an alert that closed in the last hour that it closed
    /// (and how), once, through the same attempts and retries.
    func tellClosed(command: String, baseURL: String) async throws -> Int {
        let since = wallClock() - 3_600_000
        var told = 0
        for row in try await store.alertRows(open: false, limit: 100) where (row.resolvedMilliseconds ?? row.updatedMilliseconds) >= since {
            guard let person: PersonProfile = try? StoreJSON.decode(row.person), let contacts = person.contacts, !contacts.isEmpty else { continue }
            let attempts = try await store.contactAttempts(alertID: row.alertID)
            let reached = Set(attempts.filter { $0.result == .told && $0.purpose != .closed }.map(\.contactIndex))
            for index in reached.sorted() where contacts.indices.contains(index) {
                let earlier = attempts.filter { $0.contactIndex == index && $0.purpose == .closed }
                // A contact the device told has no link yet: the closing message has none either.
                guard case .due(let number) = console.contactRetry.next(after: earlier, nowMilliseconds: wallClock()),
                    let notification = try await notification(alertID: row.alertID, contactIndex: index)
                else { continue }
                let result = try await attempt(
                    number,
                    purpose: .closed,
                    command: command,
                    row: row,
                    person: person,
                    contact: contacts[index],
                    notification: notification,
                    baseURL: baseURL
                )
                if result == .told { told += 1 }
            }
        }
        return told
    }

    /// The contact's link for this alert: made (and stored) the first time, the same one on
    /// every later attempt.
    func notification(alertID: String, contactIndex: Int) async throws -> ContactNotification? {
        let now = wallClock()
        let fresh = ContactNotification(
            alertID: alertID,
            contactIndex: contactIndex,
            nonce: BearerToken.generate().secret,
            expiresMilliseconds: now + console.contactLinkLifetime.milliseconds
        )
        if try await store.insertContactNotification(fresh, createdMilliseconds: now) { return fresh }
        return try await store.contactNotification(alertID: alertID, contactIndex: contactIndex)
    }

    /// Claims attempt `number` and runs the notifier once; nil if another instance claimed it.
    func attempt(
        _ number: Int,
        purpose: ContactPurpose,
        command: String,
        row: AlertDeskRow,
        person: PersonProfile,
        contact: EmergencyContact,
        notification: ContactNotification,
        baseURL: String
    ) async throws -> ContactAttemptResult? {
        var attempt = ContactAttempt(
            alertID: row.alertID,
            contactIndex: notification.contactIndex,
            purpose: purpose,
            attempt: number,
            startedMilliseconds: wallClock()
        )
        guard try await store.claimContactAttempt(attempt) else { return nil }
        let link = ContactLink(
            alertID: row.alertID,
            contactIndex: notification.contactIndex,
            expiresMilliseconds: notification.expiresMilliseconds,
            nonce: notification.nonce
        )
        let kind = (try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8)))?.kind.rawValue ?? ""
        var environment = [
            "TRACKME_CONTACT_NAME": contact.name, "TRACKME_CONTACT_PHONE": contact.phone ?? "", "TRACKME_CONTACT_EMAIL": contact.email ?? "",
            "TRACKME_PERSON": person.name, "TRACKME_ALERT_ID": row.alertID, "TRACKME_ALERT_KIND": kind,
            "TRACKME_LINK": baseURL + "/contact/" + link.token(key: console.contactLinkKey), "TRACKME_PURPOSE": purpose.rawValue,
            "TRACKME_ATTEMPT": "\(number)",
        ]
        if purpose == .closed {
            // The link would only say "used" or "expired" now; the message says how it ended.
            environment["TRACKME_LINK"] = ""
            environment["TRACKME_OUTCOME"] = row.outcome?.rawValue ?? row.state
        }
        let outcome = await NotifierProcess.run(command, environment: environment, timeLimit: console.contactNotifierTimeLimit, clock: clock)
        attempt.finishedMilliseconds = wallClock()
        switch outcome {
        case .exited(0):
            attempt.result = .told
            attempt.exitStatus = 0
        case .exited(let status):
            attempt.result = .failed
            attempt.exitStatus = status
            attempt.detail = "exit status \(status)"
        case .signalled(let signal):
            attempt.result = .failed
            attempt.detail = "killed by signal \(signal)"
        case .timedOut:
            attempt.result = .timedOut
            attempt.detail = "still running after \(console.contactNotifierTimeLimit.components.seconds) s; killed"
        case .stopped:
            attempt.result = .failed
            attempt.detail = "killed: the server stopped"
        case .notStarted(let reason):
            attempt.result = .notStarted
            attempt.detail = "could not start \(command): \(reason)"
        }
        try await store.finishContactAttempt(attempt)
        let metadata: Logger.Metadata = [
            "alert.id": "\(row.alertID)", "contact.index": "\(notification.contactIndex)", "contact.purpose": "\(purpose.rawValue)",
            "contact.attempt": "\(number)", "contact.result": "\(attempt.result?.rawValue ?? "")", "contact.detail": "\(attempt.detail ?? "")",
        ]
        if attempt.result == .told {
            logger.info("contact notified", metadata: metadata)
        } else {
            logger.warning("contact notifier failed", metadata: metadata)
        }
        return attempt.result
    }

    enum Confirmation: Equatable {
        case valid(ContactNotification, AlertDeskRow, EmergencyContact?)
        case forged
        case expired
        case used
    }

    enum Following {
        /// The link's alert, open or closed within `ContactFollow.grace`, confirmed or not.
        case live(ContactNotification, AlertDeskRow, EmergencyContact?)
        case forged
        case expired
        /// The alert closed longer than `ContactFollow.grace` ago.
        case over
    }

    /// What a link lets its contact follow now: its own alert only (the signed alert id, and the
    /// nonce stored for that alert and contact).
    func follow(token: String) async throws -> Following {
        guard let link = ContactLink(token: token, key: console.contactLinkKey) else { return .forged }
        let now = wallClock()
        guard let stored = try await store.contactNotification(alertID: link.alertID, contactIndex: link.contactIndex),
            BearerToken.digestsEqual(ServerDigest.sha256Hex(stored.nonce), ServerDigest.sha256Hex(link.nonce)),
            let row = try await store.alertRow(id: link.alertID)
        else { return .forged }
        // An alert long over says so, whether or not the link has also expired since.
        if let closed = ContactFollow.closedMilliseconds(row), now - closed > ContactFollow.grace { return .over }
        guard link.expiresMilliseconds > now else { return .expired }
        let person: PersonProfile? = try? StoreJSON.decode(row.person)
        let contacts = person?.contacts ?? []
        return .live(stored, row, contacts.indices.contains(link.contactIndex) ? contacts[link.contactIndex] : nil)
    }

    /// What a link is worth now, without using it.
    func check(token: String) async throws -> Confirmation {
        guard let link = ContactLink(token: token, key: console.contactLinkKey) else { return .forged }
        guard link.expiresMilliseconds > wallClock() else { return .expired }
        guard let stored = try await store.contactNotification(alertID: link.alertID, contactIndex: link.contactIndex),
            BearerToken.digestsEqual(ServerDigest.sha256Hex(stored.nonce), ServerDigest.sha256Hex(link.nonce)),
            let row = try await store.alertRow(id: link.alertID)
        else { return .forged }
        if stored.confirmedMilliseconds != nil { return .used }
        let person: PersonProfile? = try? StoreJSON.decode(row.person)
        let contacts = person?.contacts ?? []
        return .valid(stored, row, contacts.indices.contains(link.contactIndex) ? contacts[link.contactIndex] : nil)
    }
}
