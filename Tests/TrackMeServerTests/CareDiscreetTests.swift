import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The care setting `discreet_sos`: set on the server, it reaches the device in the batch reply
/// and the person's profile (the console's badge) at once.
@Suite("Care settings: discreet SOS")
struct CareDiscreetTests {
    @Test("discreet_sos set on the server reaches the device's orders and the person's profile", arguments: Backend.enabled)
    func reachesTheDevice(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let put = try await s.client.send(
                "PUT",
                "/v1/devices/pi-0001/care-settings",
                token: TestServer.adminToken,
                json: ["discreet_sos": true]
            )
            #expect(put.status == 200, "\(put.text)")
            let reply = try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token)
            let orders = try #require(try WireCodec.decode(BatchAcknowledgement.self, from: reply.body).orders?.careSettings)
            #expect(orders.discreetSOS == true)
            let device = try #require(try await s.server.store.device(id: "pi-0001"))
            #expect(device.person.discreetSOS == true)
            #expect(
                try await s.client.send("PUT", "/v1/devices/pi-0001/care-settings", token: TestServer.adminToken, json: ["discreet_sos": "yes"])
                    .status
                    == 400,
                "not a boolean"
            )
        }
    }
}
