import Foundation
import Hummingbird
import Logging
import TrackMeCore

/// AutomatedSOS as a service a person is enrolled in:
///
/// - `GET /v1/people/{id}/automated-sos`: whether it is active and who provides it (the person,
///   an admin, a carer of theirs, an organisation with their consent).
/// - `PUT /v1/people/{id}/automated-sos` `{active: bool}`: the person turns it on or off; an
///   organisation only with their consent in force that covers their alerts (then it provides
///   it); an admin on their behalf. Anyone else: 403. Carers read it and do not switch it: the
///   service is an agreement between the person and whoever provides it.
///
/// It is kept in the care settings of each of the person's devices (`CareSettings.automatedSOS`),
/// so it reaches the device with its next sync. Off means: the device still records (readings,
/// rules, its own journal and feedback) and the SOS button still reaches a dispatcher, but the
/// server takes the rules' alerts from the device without putting them in front of a dispatcher
/// or telling the contacts (`AutomatedSOSService`). Distinct from pause, which stops the
/// device's monitoring itself.
struct AutomatedSOSRoutes: Sendable {
    let room: PeopleRoom

    var data: PersonData { room.data }

    func register(on doors: RouteAccess.Doors) {
        doors.on(.get, "/v1/people/:id/automated-sos") { _, context in try await show(try context.signedIn(), id: try context.pathID("id")) }
        doors.on(.put, "/v1/people/:id/automated-sos") { request, context in
            try await change(request, try context.signedIn(), id: try context.pathID("id"))
        }
    }

    /// Why the principal may read (`read`) or switch the person's enrolment; 403 otherwise.
    func access(_ principal: Principal, _ person: PersonData.Person, switching: Bool) throws -> AccessPolicy.Reason {
        let decision = data.policy.decide(principal, subject: person.subject, now: data.now)
        switch decision {
        case .allowed(.ownData), .allowed(.administrator):
            break
        case .allowed(.consent) where principal.role == .thirdParty:
            let grants = data.policy.grants(principal, subject: person.subject, now: data.now)
            guard grants.contains(where: { $0.covers(.alerts) }) else {
                throw APIError.forbidden("an organisation switches AutomatedSOS only with the person's consent to their alerts")
            }
        case .allowed(.carer) where !switching:
            break
        case .allowed, .denied:
            throw APIError.forbidden("only the person, or an organisation with their consent, switches their AutomatedSOS")
        }
        guard case .allowed(let reason) = decision else { throw APIError.forbidden("no access to this person") }
        return reason
    }

    func show(_ principal: Principal, id: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        let reason = try access(principal, person, switching: false)
        let view = try await view(person)
        try await data.log(
            principal,
            subject: "person:\(person.account.id)",
            grants: [AccessPolicy.Grant(reason: reason)],
            what: "AutomatedSOS enrolment"
        )
        return try json(.ok, view)
    }

    func change(_ request: Request, _ principal: Principal, id: String) async throws -> Response {
        let person = try await data.person(id, principal: principal)
        let reason = try access(principal, person, switching: true)
        let body = try await room.services.body(AutomatedSOSRequest.self, of: request)
        guard !person.deviceIDs.isEmpty else { throw APIError.notFound("no device is linked to this person yet") }
        let now = data.now
        let enrolment = try await enrolment(person, principal: principal, active: body.active, now: now)
        for device in person.devices {
            var settings = try await room.store.careSettings(deviceID: device.deviceID)?.settings ?? CareSettings()
            settings.automatedSOS = enrolment
            _ = try await room.store.putCareSettings(
                deviceID: device.deviceID,
                settings: settings,
                person: CareAccess.profile(device.person, with: settings),
                by: principal.actor,
                atMilliseconds: now
            )
        }
        try await data.log(
            principal,
            subject: "person:\(person.account.id)",
            grants: [AccessPolicy.Grant(reason: reason)],
            what: "turned AutomatedSOS \(body.active ? "on" : "off")"
        )
        room.services.logger.notice("AutomatedSOS switched", metadata: ["server.by": "\(principal.actor)", "automated_sos.active": "\(body.active)"])
        return try json(.ok, try await view(person))
    }

    /// The enrolment as switched by `principal`: an organisation provides what it turns on; the
    /// person keeps their provider (the operator's dispatch centre when none).
    func enrolment(_ person: PersonData.Person, principal: Principal, active: Bool, now: Int64) async throws -> AutomatedSOSService {
        let current = try await current(person)
        var provider = current.provider
        var providerID = current.providerID
        if principal.role == .thirdParty, let accountID = principal.accountID {
            provider = try await room.store.account(id: accountID)?.displayName ?? provider
            providerID = accountID
        }
        let by: String
        switch principal.role {
        case .wearer: by = "person"
        case .thirdParty: by = "organisation"
        default: by = principal.role.rawValue
        }
        return AutomatedSOSService(active: active, provider: provider, providerID: providerID, changedBy: by, changedMilliseconds: now)
    }

    /// The person's enrolment: that of their first device that has one, else the default.
    func current(_ person: PersonData.Person) async throws -> AutomatedSOSService {
        for deviceID in person.deviceIDs {
            if let service = try await room.store.careSettings(deviceID: deviceID)?.settings.automatedSOS { return service }
        }
        return AutomatedSOSService()
    }

    func view(_ person: PersonData.Person) async throws -> AutomatedSOSView {
        var devices: [AutomatedSOSView.Device] = []
        for device in person.devices {
            let stored = try await room.store.careSettings(deviceID: device.deviceID)
            let contact = try await room.store.deviceContact(id: device.deviceID)
            let heartbeat = contact.heartbeatJSON.flatMap { try? WireCodec.decode(DeviceHeartbeat.self, from: Data($0.utf8)) }
            devices.append(
                AutomatedSOSView.Device(
                    deviceID: device.deviceID,
                    active: (stored?.settings.automatedSOS ?? AutomatedSOSService()).active,
                    settingsVersion: stored?.settings.version,
                    deviceVersion: heartbeat?.careVersion
                )
            )
        }
        return AutomatedSOSView(personID: person.account.id, service: try await current(person), devices: devices)
    }
}

struct AutomatedSOSRequest: Codable, Sendable {
    var active: Bool
}

struct AutomatedSOSView: Codable, Sendable {
    struct Device: Codable, Sendable {
        var deviceID: String
        var active: Bool
        /// The care settings version that carries it, and the one the device last reported
        /// running (equal once the device has it).
        var settingsVersion: Int64?
        var deviceVersion: Int64?

        enum CodingKeys: String, CodingKey {
            case deviceID = "device_id"
            case active
            case settingsVersion = "settings_version"
            case deviceVersion = "device_version"
        }
    }

    var personID: String
    var service: AutomatedSOSService
    var devices: [Device]

    enum CodingKeys: String, CodingKey {
        case personID = "person_id"
        case service, devices
    }
}
