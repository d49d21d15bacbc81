import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Issue 20: carers. A person (wearer account) names a carer account; the carer reads and sets
/// the person's care settings and reads their data, downloads it only when allowed, never erases
/// it; every read and change of theirs is in the person's access log; the person ends it at any
/// time. Every rule on both backends.
@Suite("Carers: linked by the person, care settings, access log (issue 20)")
struct CarerTests {
    static let t0 = TestServer.startWall

    static func entries(_ s: TestServer, _ session: BrowserSession) async throws -> [[String: Any]] {
        let log = try await s.page("GET", "/v1/people/me/access-log", session)
        try #require(log.status == 200, "\(log.text)")
        return try #require(log.object["entries"] as? [[String: Any]])
    }

    @Test(
        "a carer reads and sets care settings only of a person who linked them; another account gets 403; after revocation nothing; every read and change is logged for the person",
        arguments: Backend.enabled
    )
    func carerActsOnlyForTheirPerson(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, adaDevice) = try await s.wearer("ada", device: "pi-ada", displayName: "Ada L.")
            _ = try await s.wearer("bob", device: "pi-bob")
            let caraID = try await s.createAccount("cara", role: "carer", displayName: "Cara Carer")
            try await s.createAccount("carl", role: "carer", displayName: "Carl Other")
            let cara = try await s.signIn("cara")
            let carl = try await s.signIn("carl")
            let adaSession = try await s.signIn("ada")
            let bob = try await s.signIn("bob")
            s.at(10_000)
            #expect(
                try await s.send(
                    Sample.batch("pi-ada", seq: 1, readings: [Sample.heartRate(seq: 1, bpm: 61, wall: Self.t0 + 1_000)]),
                    token: adaDevice
                ).status == 200
            )

            // Before any link: nothing.
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", cara).status == 403)
            #expect(try await s.page("PUT", "/v1/devices/pi-ada/care-settings", cara, json: ["min_hr": 45]).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/heart-rate?from=\(Self.t0)", cara).status == 403)
            #expect((try await s.page("GET", "/v1/cared-for", cara).object["people"] as? [Any])?.isEmpty == true)

            // Ada names Cara. Without the CSRF token nothing changes; a wearer is no carer; nobody else links to Ada.
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "cara"], csrf: false).status == 403)
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "bob"]).status == 404)
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "nobody"]).status == 404)
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "<script>"]).status == 400)
            #expect(try await s.page("POST", "/v1/people/\(ada)/carers", bob, json: ["carer": "carl"]).status == 403)
            #expect(try await s.page("POST", "/v1/people/\(ada)/carers", cara, json: ["carer": "cara"]).status == 403)
            let linked = try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "cara"])
            #expect(linked.status == 201, "\(linked.text)")
            #expect(linked.object["carer_id"] as? String == caraID)
            #expect(linked.object["may_export"] as? Bool == false)
            #expect(linked.object["granted_by"] as? String == "person")
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "cara"]).status == 200)
            let carers = try #require(try await s.page("GET", "/v1/people/me/carers", adaSession).object["carers"] as? [[String: Any]])
            #expect(carers.map { $0["username"] as? String } == ["cara"])
            #expect(try await s.page("GET", "/v1/people/\(ada)/carers", bob).status == 403)

            // Cara sees Ada and her device, reads and sets Ada's care settings.
            let people = try #require(try await s.page("GET", "/v1/cared-for", cara).object["people"] as? [[String: Any]])
            #expect(people.count == 1)
            #expect(people.first?["person_id"] as? String == ada)
            #expect(people.first?["devices"] as? [String] == ["pi-ada"])
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", cara).status == 200)
            let put = try await s.page("PUT", "/v1/devices/pi-ada/care-settings", cara, json: ["min_hr": 45, "rules": ["contact_lost": false]])
            #expect(put.status == 200, "\(put.text)")
            #expect(put.object["version"] as? Int == 1)
            #expect(try await s.page("PUT", "/v1/devices/pi-ada/care-settings", cara, json: ["min_hr": 45], csrf: false).status == 403)
            // The device receives them; its report (version and a local override) shows to the carer.
            let reply = try await s.send(Sample.batch("pi-ada", seq: 2, readings: []), token: adaDevice)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: reply.body).orders?.careSettings?.minimumHeartRate == 45)
            var report = Sample.batch("pi-ada", seq: 3, readings: [])
            report.heartbeat?.careVersion = 1
            report.heartbeat?.careConflicts = ["heart_rate_low.threshold_bpm"]
            report.heartbeat?.careOverrides = ["heart_rate_low.threshold_bpm": 40]
            #expect(try await s.send(report, token: adaDevice).status == 200)
            let view = try await s.page("GET", "/v1/devices/pi-ada/care-settings", cara)
            #expect(view.object["device_version"] as? Int == 1)
            #expect(view.object["device_conflicts"] as? [String] == ["heart_rate_low.threshold_bpm"])
            // The threshold in force on the device, for the pages to draw.
            #expect(view.object["device_overrides"] as? [String: Int] == ["heart_rate_low.threshold_bpm": 40])
            // The versions alone, which the page polls: nothing of the settings' values, and not a
            // read of them, so not logged; refused to whoever may not read the settings.
            let logged = try await Self.entries(s, adaSession).count
            let versions = try await s.page("GET", "/v1/devices/pi-ada/care-version", cara)
            #expect(versions.status == 200, "\(versions.text)")
            #expect(versions.object["settings_version"] as? Int == 1 && versions.object["device_version"] as? Int == 1)
            #expect(versions.object["device_conflicts"] as? [String] == ["heart_rate_low.threshold_bpm"])
            #expect(versions.object["settings"] == nil && versions.object["device_overrides"] == nil)
            #expect(try await Self.entries(s, adaSession).count == logged)
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-version", carl).status == 403)
            #expect(view.object["updated_by_name"] as? String == "Cara Carer")
            // Ada's data, in her grants; her profile with the device.
            #expect(try await s.heartRates("/v1/people/\(ada)/heart-rate?from=\(Self.t0)", cara) == [61])
            let profile = try await s.page("GET", "/v1/people/\(ada)", cara)
            #expect((profile.object["devices"] as? [[String: Any]])?.first?["device_id"] as? String == "pi-ada")
            // Not Bob's device, not erasing, not downloading (not allowed yet).
            #expect(try await s.page("GET", "/v1/devices/pi-bob/care-settings", cara).status == 403)
            #expect(try await s.page("PUT", "/v1/devices/pi-bob/care-settings", cara, json: ["min_hr": 40]).status == 403)
            #expect(try await s.page("GET", "/v1/devices/pi-nobody/care-settings", cara).status == 403)
            #expect(try await s.page("POST", "/v1/devices/pi-ada/erase", cara).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/export?format=csv", cara).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/track.gpx", cara).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/access-log", cara).status == 403)
            // Another carer and another wearer get nothing of Ada's.
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", carl).status == 403)
            #expect(try await s.page("PUT", "/v1/devices/pi-ada/care-settings", carl, json: ["min_hr": 40]).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/heart-rate?from=\(Self.t0)", carl).status == 403)
            #expect(try await s.page("PUT", "/v1/devices/pi-ada/care-settings", bob, json: ["min_hr": 40]).status == 403)
            #expect(try await s.server.store.careSettings(deviceID: "pi-ada")?.settings.version == 1)

            // Ada's access log holds every read and change of Cara's; her own reads are not in it; Bob's log has none.
            let log = try await Self.entries(s, adaSession)
            let byCara = log.filter { $0["reader_id"] as? String == "account:\(caraID)" }
            #expect(
                byCara.allSatisfy {
                    $0["reader_role"] as? String == "carer" && $0["reader_name"] as? String == "Cara Carer" && $0["reason"] as? String == "carer"
                }
            )
            let what = byCara.compactMap { $0["what"] as? String }
            #expect(what.filter { $0 == "care settings of pi-ada" }.count == 2, "\(what)")
            #expect(what.contains("changed care settings of pi-ada to version 1"), "\(what)")
            #expect(what.contains { $0.hasPrefix("heart_rate ") }, "\(what)")
            #expect(what.contains("profile"), "\(what)")
            #expect(byCara.count == log.count, "only Cara read Ada's data: \(log)")
            #expect(try await Self.entries(s, bob).isEmpty)

            // Ada allows downloads: Cara downloads.
            #expect(
                try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "cara", "may_export": true]).object["may_export"]
                    as? Bool == true
            )
            let csv = try await s.page("GET", "/v1/people/\(ada)/export?format=csv", cara)
            #expect(csv.status == 200)
            #expect(csv.text.contains("heart_rate,"))
            #expect(
                try await Self.entries(s, adaSession).contains {
                    ($0["what"] as? String)?.hasPrefix("export csv") == true && $0["reason"] as? String == "carer"
                }
            )

            // Ada ends the link: Cara gets nothing any more.
            #expect(try await s.page("DELETE", "/v1/people/me/carers/\(caraID)", adaSession, csrf: false).status == 403)
            #expect(try await s.page("DELETE", "/v1/people/me/carers/\(caraID)", adaSession).status == 200)
            #expect(try await s.page("DELETE", "/v1/people/me/carers/\(caraID)", adaSession).status == 404)
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", cara).status == 403)
            #expect(try await s.page("PUT", "/v1/devices/pi-ada/care-settings", cara, json: ["min_hr": 50]).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/heart-rate?from=\(Self.t0)", cara).status == 403)
            #expect(try await s.page("GET", "/v1/people/\(ada)/export?format=json", cara).status == 403)
            #expect((try await s.page("GET", "/v1/cared-for", cara).object["people"] as? [Any])?.isEmpty == true)
            #expect(try await s.server.store.careSettings(deviceID: "pi-ada")?.settings.version == 1)
        }
    }

    @Test(
        "a carer steps down; an admin links a carer on the person's behalf (logged for the person); only a carer account can be one",
        arguments: Backend.enabled
    )
    func steppingDownAndAdminLink(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, _) = try await s.wearer("ada", device: "pi-ada")
            let caraID = try await s.createAccount("cara", role: "carer", displayName: "Cara Carer")
            try await s.createAccount("carl", role: "carer")
            try await s.createAccount("dana", role: "dispatcher")
            let adaSession = try await s.signIn("ada")
            let cara = try await s.signIn("cara")
            let carl = try await s.signIn("carl")
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "dana"]).status == 404)
            #expect(try await s.page("POST", "/v1/people/me/carers", adaSession, json: ["carer": "cara"]).status == 201)
            // Another carer cannot end Cara's link; Cara can.
            #expect(try await s.page("DELETE", "/v1/people/\(ada)/carers/\(caraID)", carl).status == 403)
            #expect(try await s.page("DELETE", "/v1/people/\(ada)/carers/me", cara).status == 200)
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", cara).status == 403)
            // The admin links Carl for Ada.
            let byAdmin = try await s.client.send("POST", "/v1/people/\(ada)/carers", token: TestServer.adminToken, json: ["carer": "carl"])
            #expect(byAdmin.status == 201, "\(byAdmin.text)")
            #expect(byAdmin.object["granted_by"] as? String == "admin")
            #expect(try await s.page("GET", "/v1/devices/pi-ada/care-settings", carl).status == 200)
            let log = try await Self.entries(s, adaSession)
            #expect(log.contains { $0["reader_role"] as? String == "admin" && $0["what"] as? String == "linked carer carl" })
            #expect(log.contains { $0["reader_role"] as? String == "carer" && $0["what"] as? String == "care settings of pi-ada" })
            // A dispatcher or an organisation cannot link carers.
            let dispatcher = try await s.dispatcher()
            #expect(try await s.client.send("POST", "/v1/people/\(ada)/carers", token: dispatcher, json: ["carer": "cara"]).status == 403)
            let openapi = try await s.client.send("GET", "/openapi.yaml").text
            for path in ["/v1/people/{id}/carers", "/v1/people/{id}/carers/{carer_id}", "/v1/cared-for"] { #expect(openapi.contains("  \(path):")) }
        }
    }
}
