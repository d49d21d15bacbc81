import Foundation
import Logging
import TrackMeCore

/// Tells an unacknowledged alert's emergency contacts, in order and on the schedule, each with
/// their own signed, single-use, expiring link; and confirms a link, which acknowledges the alert.
struct ContactEscalation: Sendable {
    let store: any ServerStore
    let console: ConsoleConfiguration
    let wallClock: @Sendable () -> Int64
    let logger: Logger

    /// One pass: returns how many contacts were told now.
    func run(baseURL: String) async throws -> Int {
        guard let command = console.contactNotifierCommand else { return 0 }
        let now = wallClock()
        var told = 0
        for row in try await store.alertRows(open: true, limit: 1000) where row.acknowledgedMilliseconds == nil {
            guard let person: PersonProfile = try? StoreJSON.decode(row.person), let contacts = person.contacts, !contacts.isEmpty else { continue }
            let due = ContactSchedule.due(
                settings: console.contactSchedule, openedMilliseconds: row.createdMilliseconds, nowMilliseconds: now, contacts: contacts.count)
            for index in 0..<due {
                let link = ContactLink(
                    alertID: row.alertID, contactIndex: index, expiresMilliseconds: now + console.contactLinkLifetime.milliseconds,
                    nonce: BearerToken.generate().secret)
                let notification = ContactNotification(
                    alertID: row.alertID, contactIndex: index, nonce: link.nonce, expiresMilliseconds: link.expiresMilliseconds)
                guard try await store.insertContactNotification(notification, createdMilliseconds: now) else { continue }
                let contact = contacts[index]
                let kind = (try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8)))?.kind.rawValue ?? ""
                let environment = [
                    "TRACKME_CONTACT_NAME": contact.name, "TRACKME_CONTACT_PHONE": contact.phone ?? "", "TRACKME_CONTACT_EMAIL": contact.email ?? "",
                    "TRACKME_PERSON": person.name, "TRACKME_ALERT_ID": row.alertID, "TRACKME_ALERT_KIND": kind,
                    "TRACKME_LINK": baseURL + "/contact/" + link.token(key: console.contactLinkKey),
                ]
                let status = await Self.launch(command, environment: environment)
                if status != 0 {
                    logger.warning("contact notifier failed", metadata: ["alert.id": "\(row.alertID)", "contact.index": "\(index)", "exit": "\(status)"])
                }
                told += 1
            }
        }
        return told
    }

    /// Runs the notifier on a kept thread (`BlockingThreads`), off the cooperative pool; its exit
    /// status (-1 if it could not start).
    static func launch(_ command: String, environment: [String: String]) async -> Int32 {
        await BlockingThreads.shared.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command)
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            do {
                try process.run()
                process.waitUntilExit()
                return process.terminationStatus
            } catch {
                return -1
            }
        }
    }

    enum Confirmation: Equatable {
        case valid(ContactNotification, AlertDeskRow, EmergencyContact?)
        case forged
        case expired
        case used
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
