import Foundation
public import TrackMeCore

/// The contacts the device's local fallback told of the last alert raised
/// (`AlertUpdate.contactsTold`), kept beside the journal (`device_state`): a restart between
/// the fallback telling a contact and the alert reaching the server must not forget them, or
/// the server would tell them again. Only the last alert's are kept (the rules hold one open
/// alert at a time): telling a contact of a new alert replaces the list of the one before.
extension ReadingStore {
    private struct ContactsTold: Codable {
        var alertID: String
        var contacts: [ContactTold]

        enum CodingKeys: String, CodingKey {
            case alertID = "alert_id"
            case contacts
        }
    }

    /// Records that the device told these contacts of `alertID` (the whole list so far; a
    /// durable commit of its own).
    public func setContactsTold(_ contacts: [ContactTold], alertID: String) throws(StoreError) {
        let data: Data
        do {
            data = try WireCodec.encode(ContactsTold(alertID: alertID, contacts: contacts))
        } catch {
            throw StoreError(code: .badRecord, message: "contacts told not encodable: \(error)", path: configuration.path)
        }
        try setDeviceState(data, for: DeviceStateKey.contactsTold)
    }

    /// The contacts the device told of `alertID`; empty when none were, or the kept list is of
    /// another alert.
    public func contactsTold(alertID: String) throws(StoreError) -> [ContactTold] {
        guard let data = try deviceState(DeviceStateKey.contactsTold) else { return [] }
        do {
            let kept = try WireCodec.decode(ContactsTold.self, from: data)
            return kept.alertID == alertID ? kept.contacts : []
        } catch {
            throw StoreError(code: .badRecord, message: "contacts told unreadable: \(error)", path: configuration.path)
        }
    }
}
