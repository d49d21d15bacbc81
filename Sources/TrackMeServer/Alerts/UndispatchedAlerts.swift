import Foundation
import TrackMeCore

/// A rule's alert of a person not enrolled in AutomatedSOS: no dispatcher sees it and no
/// contact is told, but the wearer and their carers do, on the person's own alert list
/// (`PersonData.alerts`, marked not sent to a dispatcher). One row per alert, holding its
/// latest update (raised, then cancelled or resolved), the body sealed under the person's key.
struct UndispatchedAlert: Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var kind: AlertKind
    var reason: String?
    var state: AlertState
    var updateSequence: Int64
    /// When the server received the alert's first update (server wall time: the device's may
    /// be untrusted).
    var raisedMilliseconds: Int64
    /// When the server received the update kept.
    var updatedMilliseconds: Int64
    /// The latest update as received (`AlertUpdate`, WireCodec JSON), opened.
    var body: String

    /// A row as stored; its kind and state are ours, so one this build does not know is an
    /// inconsistency, not something to hide.
    static func stored(
        alertID: String,
        deviceID: String,
        kind: String,
        reason: String?,
        state: String,
        updateSequence: Int64,
        body: String,
        raisedMilliseconds: Int64,
        updatedMilliseconds: Int64
    ) throws -> UndispatchedAlert {
        guard let alertKind = AlertKind(rawValue: kind), let alertState = AlertState(rawValue: state) else {
            throw StoreError(code: .inconsistent, message: "undispatched alert \(alertID) has kind \(kind) and state \(state)")
        }
        return UndispatchedAlert(
            alertID: alertID,
            deviceID: deviceID,
            kind: alertKind,
            reason: reason,
            state: alertState,
            updateSequence: updateSequence,
            raisedMilliseconds: raisedMilliseconds,
            updatedMilliseconds: updatedMilliseconds,
            body: body
        )
    }

    /// The update's record, for the position; nil if the body no longer decodes.
    var record: AlertRecord? { (try? WireCodec.decode(AlertUpdate.self, from: Data(body.utf8)))?.alert }
}

enum UndispatchedAlertOutcome: Hashable, Sendable {
    /// Kept, or the row already held this update or a later one.
    case kept
    /// The alert is on the dispatcher's desk already (it was raised while the person was
    /// enrolled): its updates go there, so that the desk sees it end.
    case dispatched
    /// The alert id belongs to another device.
    case foreignAlert
}

/// The undispatched alerts, on both backends (`undispatched_alerts`, migration `alerts-2`).
protocol UndispatchedAlertStore: Sendable {
    /// Keeps `update` (its `body` as received) unless the row holds this update or a later one.
    func keepUndispatchedAlert(_ update: AlertUpdate, body: String, receivedMilliseconds: Int64) async throws -> UndispatchedAlertOutcome
    /// Whether the alert is kept here (its later updates stay here too).
    func isUndispatchedAlert(id: String) async throws -> Bool
    /// The device's alert is the desk's now (the wearer pressed SOS during it): its kept row goes.
    func handUndispatchedAlertToDesk(id: String, deviceID: String) async throws
    /// The alerts of these devices, newest first (the alert id breaking ties, descending), after
    /// the one `before` names, at most `limit` (nil: every one); bodies opened (a body that does
    /// not open is given empty: the alert is still listed, without its position).
    func undispatchedAlerts(
        deviceIDs: [String],
        before: (raisedMilliseconds: Int64, alertID: String)?,
        limit: Int?
    ) async throws -> [UndispatchedAlert]
}

extension PersonalTables {
    /// Kept like an alert: a closed one for the closed alerts' period from its last update; an
    /// open one (the device never sent its end) as long as the person's device is in service.
    static let undispatchedAlerts = PersonalTable(
        name: "undispatched_alerts",
        keys: [.device("device_id")],
        retention: [
            .init(kind: .closedAlerts, sql: "state IN ('resolved', 'cancelled') AND updated_ms < ?"),
            retiredRule(),
        ]
    )
}

extension PersonKeys {
    /// The rows with their bodies opened; one that does not open (its person's key destroyed or
    /// damaged) is given empty and left as it is in the database.
    func readable(_ rows: [UndispatchedAlert]) async throws -> [UndispatchedAlert] {
        var opened = rows
        for index in opened.indices {
            do {
                opened[index].body = try await openAlertBody(opened[index].body, owner: opened[index].deviceID, alertID: opened[index].alertID)
            } catch is PersonKeyError {
                opened[index].body = ""
            }
        }
        return opened
    }
}
