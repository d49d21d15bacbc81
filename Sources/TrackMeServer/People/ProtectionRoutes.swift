import Foundation
import Hummingbird
import TrackMeCore

/// `GET /v1/people/{id}/protection`: what leaves the person less protected than those who look
/// after them would assume, per device, as the console's device list shows it to a dispatcher:
/// the last heartbeat (monitoring paused, the store's state, quarantined rows, the strap's and
/// the device's battery, each condition with how long it has held), when the device was last
/// heard from and whether it is silent, and whether AutomatedSOS is off or discreet SOS on.
///
/// The person, an admin, or a carer of theirs (`AccessPolicy`, reasons own data, administrator,
/// carer); a carer's read is in the person's access log. An organisation's consent covers kinds
/// of data, not this: 403.
struct ProtectionRoutes: Sendable {
    let room: PeopleRoom

    var data: PersonData { room.data }

    func register(on doors: RouteAccess.Doors) {
        doors.on(.get, "/v1/people/:id/protection") { _, context in try await show(try context.signedIn(), id: try context.pathID("id")) }
    }

    func show(_ principal: Principal, id: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        let reason: AccessPolicy.Reason
        switch data.policy.decide(principal, subject: person.subject, now: data.now) {
        case .allowed(.ownData): reason = .ownData
        case .allowed(.administrator): reason = .administrator
        case .allowed(.carer): reason = .carer
        case .allowed, .denied: throw APIError.forbidden("only the person, their carer or an admin reads their protection state")
        }
        var devices: [ProtectionView.Device] = []
        for deviceID in person.deviceIDs {
            guard let row = try await room.store.deviceRow(id: deviceID) else { continue }
            let summary = DeviceSummary(row)
            devices.append(
                ProtectionView.Device(
                    deviceID: deviceID,
                    lastSeenMilliseconds: summary.lastSeenMilliseconds,
                    silent: summary.silent,
                    heartbeat: summary.heartbeat,
                    person: ProtectionView.Care(automatedSOS: summary.person?.automatedSOS, discreetSOS: summary.person?.discreetSOS)
                )
            )
        }
        try await data.log(
            principal,
            subject: "person:\(person.account.id)",
            grants: [AccessPolicy.Grant(reason: reason)],
            what: "protection state"
        )
        return try json(.ok, ProtectionView(personID: person.account.id, devices: devices))
    }
}

struct ProtectionView: Codable, Sendable {
    /// The care switches that change what an alert does, under the names the device list uses.
    struct Care: Codable, Sendable {
        var automatedSOS: AutomatedSOSService?
        var discreetSOS: Bool?

        enum CodingKeys: String, CodingKey {
            case automatedSOS = "automated_sos"
            case discreetSOS = "discreet_sos"
        }
    }

    struct Device: Codable, Sendable {
        var deviceID: String
        var lastSeenMilliseconds: Int64?
        var silent: Bool
        var heartbeat: DeviceHeartbeat?
        var person: Care

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case lastSeenMilliseconds = "last_seen_ms"
            case silent, heartbeat, person
        }
    }

    var personID: String
    var devices: [Device]

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case devices
    }
}
