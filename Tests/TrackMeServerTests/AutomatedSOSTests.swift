import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// AutomatedSOS as a service a person is enrolled in: who may switch it, what it shows, and what
/// changes when it is off.
@Suite("AutomatedSOS: the person's enrolment, who switches it, what off means")
struct AutomatedSOSTests {
    static func alert(_ deviceID: String, id: String, kind: AlertKind) -> AlertUpdate {
        var update = Sample.alert(deviceID, id: id)
        update.alert.kind = kind
        return update
    }

    static func openAlerts(_ s: TestServer, dispatcher: String) async throws -> [String] {
        let list = try await s.client.send("GET", "/v1/alerts", token: dispatcher)
        try #require(list.status == 200, "\(list.text)")
        return (list.object["alerts"] as? [[String: Any]] ?? []).compactMap {
            ($0["alert"] as? [String: Any])?["alert_id"] as? String ?? $0["alert_id"] as? String
        }
    }

    @Test("the person turns it off and on; off, a rule's alert reaches no dispatcher, the SOS button still does", arguments: Backend.enabled)
    func personSwitches(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001")
            let session = try await s.signIn("ada")
            let dispatcher = try await s.dispatcher()

            let initial = try await s.page("GET", "/v1/people/me/automated-sos", session)
            #expect(initial.status == 200, "\(initial.text)")
            let service = try #require(initial.object["service"] as? [String: Any])
            #expect(service["active"] as? Bool == true, "on by default")
            #expect(service["provider"] as? String == AutomatedSOSService.operatorProvider)

            let off = try await s.page("PUT", "/v1/people/\(ada)/automated-sos", session, json: ["active": false])
            #expect(off.status == 200, "\(off.text)")
            #expect((off.object["service"] as? [String: Any])?["active"] as? Bool == false)
            #expect((off.object["service"] as? [String: Any])?["changed_by"] as? String == "person")

            // It reaches the device with its care settings.
            let ack = try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: device)
            let orders = try #require((ack.object["orders"] as? [String: Any])?["care_settings"] as? [String: Any])
            #expect((orders["automated_sos"] as? [String: Any])?["active"] as? Bool == false)

            // Off: the rule's alert is answered (the device keeps it) and shown to no dispatcher;
            // the SOS button's alert is.
            let rule = try await s.postAlert(Self.alert("pi-0001", id: "alert-rule", kind: .noPulse), token: device)
            #expect(rule.status == 200)
            #expect(rule.object["acknowledged"] as? Bool == false)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-sos", kind: .manual), token: device).status == 200)
            #expect(try await Self.openAlerts(s, dispatcher: dispatcher) == ["alert-sos"])
            #expect(try await s.client.send("GET", "/v1/alerts/alert-rule", token: dispatcher).status == 404)

            // A change of the other care settings leaves the enrolment as it is.
            let care = try await s.page("PUT", "/v1/devices/pi-0001/care-settings", session, json: ["min_hr": 45])
            #expect(care.status == 200, "\(care.text)")
            #expect((care.object["automated_sos"] as? [String: Any])?["active"] as? Bool == false)

            let on = try await s.page("PUT", "/v1/people/me/automated-sos", session, json: ["active": true])
            #expect(on.status == 200, "\(on.text)")
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-rule-2", kind: .noPulse), token: device).status == 200)
            #expect(Set(try await Self.openAlerts(s, dispatcher: dispatcher)) == ["alert-sos", "alert-rule-2"])
        }
    }

    @Test(
        "an organisation switches it only with the person's consent to their alerts, and then provides it; a stranger gets 403",
        arguments: Backend.enabled
    )
    func whoMaySwitch(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, _) = try await s.wearer("ada", device: "pi-0001")
            _ = try await s.wearer("eve", device: "pi-0002")
            let person = try await s.signIn("ada")
            let stranger = try await s.signIn("eve")
            let care = try await s.organisation("care-org", name: "Care & Co")
            let nosy = try await s.organisation("nosy-org", name: "Nosy Ltd")
            let path = "/v1/people/\(ada)/automated-sos"

            #expect(try await s.page("PUT", path, stranger, json: ["active": false]).status == 403, "another wearer")
            #expect(try await s.page("GET", path, stranger).status == 403)
            #expect(try await s.page("PUT", path, care, json: ["active": false]).status == 403, "no consent yet")

            // The person approves the organisation's request for their alerts.
            let asked = try await s.page(
                "POST",
                "/v1/access-requests",
                care,
                json: ["person": "ada", "kinds": ["alerts"], "days": 30, "purpose": "AutomatedSOS"]
            )
            #expect(asked.status == 201, "\(asked.text)")
            let requestID = try #require(asked.object["id"] as? String)
            let approved = try await s.page("POST", "/v1/access-requests/\(requestID)/approve", person)
            #expect(approved.status == 200, "\(approved.text)")
            // Consent to heart rate only is not consent to the alerts.
            let partial = try await s.page(
                "POST",
                "/v1/access-requests",
                nosy,
                json: ["person": "ada", "kinds": ["heart_rate"], "days": 30, "purpose": "study"]
            )
            let partialID = try #require(partial.object["id"] as? String)
            #expect(try await s.page("POST", "/v1/access-requests/\(partialID)/approve", person).status == 200)
            #expect(try await s.page("PUT", path, nosy, json: ["active": true]).status == 403)

            let switched = try await s.page("PUT", path, care, json: ["active": true])
            #expect(switched.status == 200, "\(switched.text)")
            let service = try #require(switched.object["service"] as? [String: Any])
            #expect(service["provider"] as? String == "Care & Co")
            #expect(service["changed_by"] as? String == "organisation")
            let seen = try await s.page("GET", "/v1/people/me/automated-sos", person)
            #expect((seen.object["service"] as? [String: Any])?["provider"] as? String == "Care & Co", "the person sees who provides it")
            let log = try #require(try await s.page("GET", "/v1/people/me/access-log", person).object["entries"] as? [[String: Any]])
            #expect(log.contains { $0["what"] as? String == "turned AutomatedSOS on" && $0["reader_name"] as? String == "Care & Co" })
        }
    }
}
