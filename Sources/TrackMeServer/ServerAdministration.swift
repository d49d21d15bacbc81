import HTTPTypes
import TrackMeCore

/// Enrols devices and creates dispatchers, for the HTTP admin API and for in-process callers
/// (the simulation), which share this one code path.
struct ServerAdministration: Sendable {
    let store: any AccessRoomStore
    let wallClock: @Sendable () -> Int64
    /// How long a new (or rotated) dispatcher token works; nil: until revoked.
    var dispatcherTokenLifetime: Duration? = nil

    func enrolDevice(deviceID: String, person: PersonProfile) async throws -> DeviceCredentials {
        guard DeviceIdentity.isValid(deviceID) else {
            throw APIError.invalid("device_id", "1-64 characters of A-Z a-z 0-9 . _ -")
        }
        guard !person.name.isEmpty else { throw APIError.invalid("person.name", "must not be empty") }
        guard (0...150).contains(person.age) else { throw APIError.invalid("person.age", "must be 0-150") }
        // The thresholds become the person's first care settings: the same bounds as a later change.
        let settings = CareAccess.settings(enrolled: person)
        if let problem = settings?.problem() { throw APIError.invalid("person.\(problem.field)", problem.message) }
        let token = BearerToken.generate()
        let stored = StoredToken(id: token.id, secretHash: token.secretHash, role: .device, deviceID: deviceID)
        let enrolled = try await store.enrolDevice(
            DeviceRow(deviceID: deviceID, person: person, enrolledMilliseconds: wallClock()),
            token: stored
        )
        guard enrolled else {
            throw APIError(status: .conflict, code: .conflict, field: "device_id", message: "device \(deviceID) is already enrolled")
        }
        // The thresholds and contacts set at enrolment are the person's first care settings: they
        // reach the device with the reply to its first batch.
        if let settings {
            _ = try await store.putCareSettings(deviceID: deviceID, settings: settings, person: person, by: "enrolment", atMilliseconds: wallClock())
        }
        return DeviceCredentials(deviceID: deviceID, token: token.text)
    }

    /// A dispatcher's bearer token (for programs; people sign in to the console), working for
    /// `lifetime` or else the configured `dispatcherTokenLifetime`.
    func createDispatcher(name: String?, lifetime: Duration? = nil) async throws -> DispatcherCredentials {
        let token = BearerToken.generate()
        let now = wallClock()
        let expires = (lifetime ?? dispatcherTokenLifetime).map { now + $0.milliseconds }
        try await store.insertToken(
            StoredToken(id: token.id, secretHash: token.secretHash, role: .dispatcher, deviceID: nil, expiresMilliseconds: expires),
            createdMilliseconds: now
        )
        return DispatcherCredentials(dispatcherID: token.id, token: token.text, expiresMilliseconds: expires)
    }
}
