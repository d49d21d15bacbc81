import TrackMeCore
import HTTPTypes

/// Enrols devices and creates dispatchers, for the HTTP admin API and for in-process callers
/// (the simulation), which share this one code path.
struct ServerAdministration: Sendable {
    let store: any ServerStore
    let wallClock: @Sendable () -> Int64

    func enrolDevice(deviceID: String, person: PersonProfile) async throws -> DeviceCredentials {
        guard DeviceIdentity.isValid(deviceID) else {
            throw APIError.invalid("device_id", "1-64 characters of A-Z a-z 0-9 . _ -")
        }
        guard !person.name.isEmpty else { throw APIError.invalid("person.name", "must not be empty") }
        guard (0...150).contains(person.age) else { throw APIError.invalid("person.age", "must be 0-150") }
        let token = BearerToken.generate()
        let stored = StoredToken(id: token.id, secretHash: token.secretHash, role: .device, deviceID: deviceID)
        let enrolled = try await store.enrolDevice(
            DeviceRow(deviceID: deviceID, person: person, enrolledMilliseconds: wallClock()), token: stored)
        guard enrolled else {
            throw APIError(status: .conflict, code: .conflict, field: "device_id", message: "device \(deviceID) is already enrolled")
        }
        return DeviceCredentials(deviceID: deviceID, token: token.text)
    }

    func createDispatcher(name: String?) async throws -> DispatcherCredentials {
        let token = BearerToken.generate()
        try await store.insertToken(
            StoredToken(id: token.id, secretHash: token.secretHash, role: .dispatcher, deviceID: nil), createdMilliseconds: wallClock())
        return DispatcherCredentials(dispatcherID: token.id, token: token.text)
    }
}
