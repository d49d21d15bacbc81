import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

/// The person's side of retention and care (Data4Help):
///
/// - `GET /v1/devices/{id}/care-settings`: the settings, their version, and the version the
///   device reports running with the fields its own configuration overrides (conflicts) and
///   the thresholds it runs on there.
/// - `GET /v1/devices/{id}/care-version`: only the version on the server, the one the device
///   runs and the names of the fields it overrides, for a page to poll: it reads the settings
///   again (logged) when one of them changed, so a page left open does not fill the person's
///   access log with the same read, and says nothing of the settings' values.
/// - `PUT /v1/devices/{id}/care-settings`: the next version; it reaches the device in the
///   reply to its next batch (`orders.care_settings`), and the person's profile (console,
///   contact escalation) takes the thresholds and contacts at once.
/// - `POST /v1/devices/{id}/erase`: erases every row of the device and its person, in every
///   table; the device is told to wipe its store at its next sync (410 `device_erased` with
///   `orders.wipe`).
///
/// Who may: an admin (token or account), on the person's behalf, and the person themself: a
/// wearer account, for the device linked to it (`CareAccess.mayAct`); a carer the person linked
/// reads and sets the settings, and does not erase. Dispatchers read them around an alert of the
/// person being handled (`AccessPolicy`). Every read and change by anyone but the person is in
/// the person's access log.
///
/// The room holds its `CareRoomStore` and nothing of the hall's.
struct CareRoom: Sendable {
    static let access: [String: RouteAccess.Requirement] = [
        "GET /v1/devices/{id}/care-settings": .personData(CareAccess.readers),
        "GET /v1/devices/{id}/care-version": .personData(CareAccess.readers),
        "PUT /v1/devices/{id}/care-settings": .personData(CareAccess.changers),
        "POST /v1/devices/{id}/erase": .personData(CareAccess.erasers),
    ]

    private let store: any CareRoomStore
    private let services: RoomServices

    init(store: any CareRoomStore, services: RoomServices) {
        self.store = store
        self.services = services
    }

    private var now: Int64 { services.configuration.wallClock() }

    /// The room's routes at their full paths, each behind the door `access` declares.
    func routes() -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: services.authenticator)
        let room = self
        doors.on(.get, "/v1/devices/:id/care-settings") { _, context in
            try await room.show(try context.signedIn(), deviceID: try context.pathID("id"))
        }
        doors.on(.get, "/v1/devices/:id/care-version") { _, context in
            try await room.version(try context.signedIn(), deviceID: try context.pathID("id"))
        }
        doors.on(.put, "/v1/devices/:id/care-settings") { request, context in
            try await room.change(request, try context.signedIn(), deviceID: try context.pathID("id"))
        }
        doors.on(.post, "/v1/devices/:id/erase") { _, context in
            try await room.erase(try context.signedIn(), deviceID: try context.pathID("id"))
        }
        return routes
    }

    func show(_ principal: Principal, deviceID: String) async throws -> Response {
        let access = try await CareAccess.mayAct(principal, on: deviceID, store: store, now: now)
        guard try await store.device(id: deviceID) != nil else { throw APIError.notFound("no device \(deviceID)") }
        let stored = try await store.careSettings(deviceID: deviceID)
        let contact = try await store.deviceContact(id: deviceID)
        let heartbeat = contact.heartbeatJSON.flatMap { try? WireCodec.decode(DeviceHeartbeat.self, from: Data($0.utf8)) }
        var updatedByName: String?
        if let by = stored?.updatedBy {
            if by.hasPrefix("account:") {
                updatedByName = try await store.accountName(id: String(by.dropFirst("account:".count)))
            } else {
                updatedByName = by
            }
        }
        try await log(principal, access, deviceID: deviceID, what: "care settings of \(deviceID)")
        return try json(
            .ok,
            CareSettingsView(
                deviceID: deviceID,
                settings: stored?.settings,
                updatedMilliseconds: stored?.updatedMilliseconds,
                updatedBy: stored?.updatedBy,
                updatedByName: updatedByName,
                deviceVersion: heartbeat?.careVersion,
                deviceConflicts: heartbeat?.careConflicts ?? [],
                deviceOverrides: heartbeat?.careOverrides ?? [:],
                deviceReportedMilliseconds: contact.lastSeenMilliseconds
            )
        )
    }

    func version(_ principal: Principal, deviceID: String) async throws -> Response {
        try await CareAccess.mayAct(principal, on: deviceID, store: store, now: now)
        guard try await store.device(id: deviceID) != nil else { throw APIError.notFound("no device \(deviceID)") }
        let stored = try await store.careSettings(deviceID: deviceID)
        let heartbeat = try await store.deviceContact(id: deviceID).heartbeatJSON.flatMap {
            try? WireCodec.decode(DeviceHeartbeat.self, from: Data($0.utf8))
        }
        return try json(
            .ok,
            CareVersionView(
                deviceID: deviceID,
                settingsVersion: stored?.settings.version,
                deviceVersion: heartbeat?.careVersion,
                deviceConflicts: heartbeat?.careConflicts ?? []
            )
        )
    }

    func change(_ request: Request, _ principal: Principal, deviceID: String) async throws -> Response {
        let access = try await CareAccess.mayAct(principal, on: deviceID, store: store, now: now)
        var settings = try RequestBody.decode(CareSettings.self, try await RequestBody.read(request, limit: services.configuration.maxBodyBytes))
        if let problem = settings.problem() { throw APIError.invalid(problem.field, problem.message) }
        guard let device = try await store.device(id: deviceID) else { throw APIError.notFound("no device \(deviceID)") }
        // The AutomatedSOS enrolment is switched only through its own endpoint (`AutomatedSOSRoutes`).
        settings.automatedSOS = try await store.careSettings(deviceID: deviceID)?.settings.automatedSOS
        let stored = try await store.putCareSettings(
            deviceID: deviceID,
            settings: settings,
            person: CareAccess.profile(device.person, with: settings),
            by: principal.actor,
            atMilliseconds: now
        )
        try await log(principal, access, deviceID: deviceID, what: "changed care settings of \(deviceID) to version \(stored.version)")
        services.logger.notice("care settings changed", metadata: ["device.id": "\(deviceID)", "care.version": "\(stored.version)"])
        return try json(.ok, stored)
    }

    func erase(_ principal: Principal, deviceID: String) async throws -> Response {
        try await CareAccess.mayAct(principal, on: deviceID, store: store, now: now)
        // The person's key first: should deleting the rows fail, what is left no longer opens and
        // asking again deletes it; and again after, for a batch sealed in between under a new key.
        try await store.personKeys.destroy(owner: deviceID)
        guard let result = try await store.erase(deviceID: deviceID, nowMilliseconds: now) else {
            throw APIError.notFound("no device \(deviceID)")
        }
        try await store.personKeys.destroy(owner: deviceID)
        services.notifier.notify()
        services.metrics.erasures.increment()
        // The log names the device id (the operator's own record that an erasure was done),
        // nothing of the person.
        services.logger.notice(
            "person's data erased",
            metadata: ["device.id": "\(deviceID)", "server.by": "\(principal.actor)", "server.rows": "\(result.rowsDeleted)"]
        )
        return try json(.ok, ErasureAnswer(deviceID: deviceID, erased: true, rowsDeleted: result.rowsDeleted, wipeOrders: result.wipeOrders))
    }

    /// Records a read or change in the person's access log (the device's when no wearer account
    /// is linked), unless the person did it.
    private func log(_ principal: Principal, _ access: CareAccess.Access, deviceID: String, what: String) async throws {
        guard access.reason != AccessPolicy.Reason.ownData.rawValue else { return }
        let subject = access.personID.map { "person:\($0)" } ?? "device:\(deviceID)"
        try await AccessLog(store: store, wallClock: services.configuration.wallClock).record(
            principal,
            subject: subject,
            reason: access.reason,
            what: what
        )
    }
}

/// What the care room reads and writes: the device, its care settings and erasure, who may act
/// on it (`CareAccessStore`), and the person's access log.
protocol CareRoomStore: CareStore, CareAccessStore, AccessLogStore {
    var personKeys: PersonKeys { get }
    func device(id: String) async throws -> DeviceRow?
    func deviceContact(id: String) async throws -> (heartbeatJSON: String?, lastSeenMilliseconds: Int64?)
}

/// What deciding who may act on a device reads: its wearer, their carers, its alerts.
protocol CareAccessStore: Sendable {
    func wearerAccount(deviceID: String) async throws -> String?
    func carerLinks(personID: String) async throws -> [CarerLink]
    func alertIDs(deviceIDs: [String]) async throws -> [String]
    func alertRow(id: String) async throws -> AlertDeskRow?
}

/// Who may read and change a person's care settings and erase their data.
enum CareAccess {
    static let readers: Set<Role> = [.admin, .dispatcher, .wearer, .carer]
    static let changers: Set<Role> = [.admin, .wearer, .carer]
    /// A carer does not erase: erasure is the person's decision (or an admin's on their request).
    static let erasers: Set<Role> = [.admin, .wearer]

    /// Whose device it is, and why the principal may act on it.
    struct Access: Sendable {
        /// The wearer account linked to the device, if any.
        var personID: String?
        /// `own_data`, `carer`, or the role's name for admins and dispatchers (checked by `authenticate`).
        var reason: String
    }

    /// A wearer acts only on the device linked to their own account, a carer only on the devices
    /// of a person who linked them (`AccessPolicy`: reason `own_data` or `carer`; 403 otherwise,
    /// the same answer whether or not the device exists); the other roles were checked by
    /// `authenticate`.
    @discardableResult
    static func mayAct(_ principal: Principal, on deviceID: String, store: any CareAccessStore, now: Int64) async throws -> Access {
        let personID = try await store.wearerAccount(deviceID: deviceID)
        switch principal.role {
        case .wearer, .carer:
            guard let personID else { throw APIError.forbidden("a wearer or carer manages only the devices of their own person") }
            let carers = try await store.carerLinks(personID: personID).map(\.policyCarer)
            let subject = AccessPolicy.Subject(personID: personID, deviceIDs: [deviceID], ownerAccountIDs: [personID], carers: carers)
            switch AccessPolicy().decide(principal, subject: subject, now: 0) {
            case .allowed(.ownData): return Access(personID: personID, reason: AccessPolicy.Reason.ownData.rawValue)
            case .allowed(.carer): return Access(personID: personID, reason: AccessPolicy.Reason.carer.rawValue)
            case .allowed, .denied: throw APIError.forbidden("a wearer or carer manages only the devices of their own person")
            }
        case .admin:
            return Access(personID: personID, reason: AccessPolicy.Reason.administrator.rawValue)
        case .dispatcher:
            // Around an alert of the person's being handled (`AccessPolicy`), like every other read.
            var spans: [AccessPolicy.AlertSpan] = []
            for alertID in try await store.alertIDs(deviceIDs: [deviceID]) {
                if let row = try await store.alertRow(id: alertID) { spans.append(PersonData.span(row)) }
            }
            let subject = AccessPolicy.Subject(personID: personID ?? "device:\(deviceID)", deviceIDs: [deviceID], alerts: spans)
            switch AccessPolicy().decide(principal, subject: subject, now: now) {
            case .allowed(let reason): return Access(personID: personID, reason: reason.rawValue)
            case .denied: throw APIError.forbidden("a dispatcher reads a person's care settings only around an alert being handled")
            }
        case .device, .thirdParty, .organiser, .fleetOperator:
            return Access(personID: personID, reason: principal.role.rawValue)
        }
    }

    /// The person's profile with the care settings' thresholds and contacts.
    static func profile(_ person: PersonProfile, with settings: CareSettings) -> PersonProfile {
        var person = person
        if let value = settings.minimumHeartRate { person.minimumHeartRate = value }
        if let value = settings.maximumHeartRate { person.maximumHeartRate = value }
        if let value = settings.restingHeartRate { person.restingHeartRate = value }
        if let contacts = settings.contacts { person.contacts = contacts }
        person.tellContactsAtRaise = settings.tellContactsAtRaise
        person.automatedSOS = settings.automatedSOS
        person.discreetSOS = settings.discreetSOS
        return person
    }

    /// The care settings an enrolment's profile implies (thresholds and contacts), or nil when
    /// it sets none.
    static func settings(enrolled person: PersonProfile) -> CareSettings? {
        let thresholds = person.minimumHeartRate != nil || person.maximumHeartRate != nil || person.restingHeartRate != nil
        guard thresholds || person.contacts != nil || person.tellContactsAtRaise != nil else { return nil }
        return CareSettings(
            minimumHeartRate: person.minimumHeartRate,
            maximumHeartRate: person.maximumHeartRate,
            restingHeartRate: person.restingHeartRate,
            contacts: person.contacts,
            tellContactsAtRaise: person.tellContactsAtRaise
        )
    }
}

struct ErasureAnswer: Codable, Sendable {
    var deviceID: String
    var erased: Bool
    var rowsDeleted: Int
    var wipeOrders: Int

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case erased
        case rowsDeleted = "rows_deleted"
        case wipeOrders = "wipe_orders"
    }
}

struct CareSettingsView: Codable, Sendable {
    var deviceID: String
    var settings: CareSettings?
    var updatedMilliseconds: Int64?
    var updatedBy: String?
    /// Who set them, as pages show it (the account's display name).
    var updatedByName: String?
    /// The version the device last reported running (heartbeat), nil before it reported one.
    var deviceVersion: Int64?
    /// Fields the device's own configuration overrides.
    var deviceConflicts: [String]
    /// The device's own value of each conflicting threshold, the one in force there.
    var deviceOverrides: [String: Int]
    var deviceReportedMilliseconds: Int64?

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case settings
        case updatedMilliseconds = "updated_ms"
        case updatedBy = "updated_by"
        case updatedByName = "updated_by_name"
        case deviceVersion = "device_version"
        case deviceConflicts = "device_conflicts"
        case deviceOverrides = "device_overrides"
        case deviceReportedMilliseconds = "device_reported_ms"
    }
}

/// The versions of a device's care settings, and nothing of their values (`CareRoom.version`).
struct CareVersionView: Codable, Sendable {
    var deviceID: String
    var settingsVersion: Int64?
    var deviceVersion: Int64?
    var deviceConflicts: [String]

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case settingsVersion = "settings_version"
        case deviceVersion = "device_version"
        case deviceConflicts = "device_conflicts"
    }
}
