import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The wearer's protection state on the carer's page: `GET /v1/people/{id}/protection`, read
/// through the access policy like the carer's other reads.
@Suite("Carers: the wearer's protection state")
struct CarerProtectionTests {
    @Test(
        "the person and their carer read the paused heartbeat with how long and AutomatedSOS off; the read is logged; a stranger, an organisation and a former carer get 403",
        arguments: Backend.enabled
    )
    func carerReadsProtection(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-ada")
            _ = try await s.wearer("bob", device: "pi-bob")
            let caraID = try await s.createAccount("cara", role: "carer", displayName: "Cara Carer")
            let session = try await s.signIn("ada")
            let bob = try await s.signIn("bob")
            let organisation = try await s.organisation("org-a", name: "Org A")
            #expect(try await s.page("POST", "/v1/people/me/carers", session, json: ["carer": "cara"]).status == 201)
            let cara = try await s.signIn("cara")
            #expect(try await s.page("PUT", "/v1/people/me/automated-sos", session, json: ["active": false]).status == 200)

            var batch = Sample.batch("pi-ada", seq: 1, readings: [Sample.heartRate(seq: 1)])
            batch.heartbeat?.monitoringPaused = true
            batch.heartbeat?.conditionSeconds = ["monitoring_paused": 600]
            #expect(try await s.send(batch, token: device).status == 200)

            for who in [session, cara] {
                let read = try await s.page("GET", "/v1/people/\(ada)/protection", who)
                #expect(read.status == 200, "\(read.text)")
                let devices = try #require(read.object["devices"] as? [[String: Any]])
                let first = try #require(devices.first)
                #expect(first["device_id"] as? String == "pi-ada")
                #expect((first["last_seen_ms"] as? NSNumber)?.int64Value == s.wall.now)
                #expect(first["silent"] as? Bool == false)
                let heartbeat = try #require(first["heartbeat"] as? [String: Any])
                #expect(heartbeat["monitoring_paused"] as? Bool == true)
                #expect((heartbeat["conditions_for_s"] as? [String: Any])?["monitoring_paused"] as? Int == 600)
                let person = try #require(first["person"] as? [String: Any])
                #expect((person["automated_sos"] as? [String: Any])?["active"] as? Bool == false)
            }
            let log = try await CarerTests.entries(s, session)
            #expect(
                log.contains {
                    $0["what"] as? String == "protection state" && $0["reader_id"] as? String == "account:\(caraID)"
                        && $0["reason"] as? String == "carer"
                }
            )

            #expect(try await s.page("GET", "/v1/people/\(ada)/protection", bob).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/protection", organisation).status == 403)
            #expect(try await s.page("DELETE", "/v1/people/me/carers/\(caraID)", session).status == 200)
            #expect(try await s.page("GET", "/v1/people/\(ada)/protection", cara).status == 403)
        }
    }
}
