import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

@Suite("Emergency contacts: escalation and the confirmation link")
struct ContactEscalationTests {
    @Test("the schedule follows DispatchSettings: first contact at the notify step, the next every repeat")
    func schedule() {
        let settings = DispatchSettings()
        let opened: Int64 = 1_000_000
        #expect(ContactSchedule.due(settings: settings, openedMilliseconds: opened, nowMilliseconds: opened + 179_999, contacts: 3) == 0)
        #expect(ContactSchedule.due(settings: settings, openedMilliseconds: opened, nowMilliseconds: opened + 180_000, contacts: 3) == 1)
        #expect(ContactSchedule.due(settings: settings, openedMilliseconds: opened, nowMilliseconds: opened + 300_000, contacts: 3) == 2)
        #expect(ContactSchedule.due(settings: settings, openedMilliseconds: opened, nowMilliseconds: opened + 3_600_000, contacts: 3) == 3)
        #expect(ContactSchedule.due(settings: settings, openedMilliseconds: opened, nowMilliseconds: opened + 3_600_000, contacts: 0) == 0)
    }

    @Test("a link is signed: any change to alert, contact, expiry or MAC is refused")
    func signature() throws {
        let key = Array("0123456789abcdef0123456789abcdef".utf8)
        let link = ContactLink(alertID: "alert-1", contactIndex: 0, expiresMilliseconds: 42, nonce: "n")
        let token = link.token(key: key)
        #expect(ContactLink(token: token, key: key) == link)
        #expect(ContactLink(token: token, key: Array("another key, another server....".utf8)) == nil)
        let forged = ContactLink(alertID: "alert-2", contactIndex: 0, expiresMilliseconds: 42, nonce: "n").token(key: Array("guess".utf8))
        #expect(ContactLink(token: forged, key: key) == nil)
        let parts = token.split(separator: ".")
        let swapped = ContactLink(alertID: "alert-1", contactIndex: 0, expiresMilliseconds: 99_999, nonce: "n").token(key: key).split(separator: ".")[
            0
        ]
        #expect(ContactLink(token: "\(swapped).\(parts[1])", key: key) == nil, "a longer expiry with the old MAC")
        #expect(ContactLink(token: "garbage", key: key) == nil)
        #expect(ContactLink(token: ".", key: key) == nil)
    }

    @Test("an unacknowledged alert reaches its contacts in order; a link confirms once and acknowledges", arguments: Backend.enabled)
    func escalation(backend: Backend) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-contacts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("told.txt").path
        let notifier = directory.appendingPathComponent("notify.sh").path
        try "#!/bin/sh\necho \"$TRACKME_CONTACT_NAME|$TRACKME_PERSON|$TRACKME_ALERT_KIND|$TRACKME_LINK\" >> \(log)\n".write(
            toFile: notifier,
            atomically: true,
            encoding: .utf8
        )
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: notifier)

        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }

        try await TestServer.with(backend, console: console) { s in
            let enrol = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: [
                    "device_id": "pi-0001",
                    "person": [
                        "name": "<b>Ada</b>", "age": 81,
                        "contacts": [["name": "Ben", "phone": "+39 1"], ["name": "Cleo", "email": "c@example.org"]],
                    ],
                ]
            )
            let device = try #require(enrol.object["token"] as? String)
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "alert-1"), token: device).status == 200)

            #expect(try await s.server.escalateToContacts() == 0, "nobody before the notify step")
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 1)
            #expect(try await s.server.escalateToContacts() == 0, "each contact is told once")
            s.wall.advance(milliseconds: 120_000)
            #expect(try await s.server.escalateToContacts() == 1)
            let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: "|").map(String.init) }
            #expect(lines.map { $0[0] } == ["Ben", "Cleo"])
            #expect(lines.allSatisfy { $0[1] == "<b>Ada</b>" && $0[2] == "no_pulse" })
            let link = try #require(URL(string: lines[0][3]))
            #expect(link.path.hasPrefix("/contact/"))

            let page = try await s.client.send("GET", link.path)
            #expect(page.status == 200)
            #expect(!page.text.contains("Ada"), "the page is a file; its script reads the alert as JSON and shows it as text")
            let live = try await s.client.send("GET", link.path + "/live")
            #expect(live.object["person"] as? String == "<b>Ada</b>")
            let tampered = String(link.path.dropLast()) + (link.path.hasSuffix("0") ? "1" : "0")
            #expect(try await s.client.send("POST", tampered).status == 403)

            let feed = try SSETestClient(port: s.port, token: dispatcher)
            defer { feed.close() }
            let confirmed = try await s.client.send("POST", link.path)
            #expect(confirmed.status == 200)
            #expect(confirmed.object["confirmed"] as? Bool == true)
            #expect(try await s.client.send("POST", link.path).status == 410, "single use")
            // The contact goes on following the alert after confirming.
            #expect(try await s.client.send("GET", link.path).status == 200)
            #expect(try await s.client.send("GET", link.path + "/live").object["confirmed"] as? Bool == true)
            let events = try await feed.nextEvents(2)
            #expect(events.map(\.event) == ["alert", "alert_acknowledged"])
            let detail = try await s.client.send("GET", "/v1/alerts/alert-1", token: dispatcher)
            #expect((detail.object["alert"] as? [String: Any])?["acknowledged_by"] as? String == "contact:Ben")
            // Acknowledged: nobody more is told, and Cleo's link, once expired, is refused.
            s.wall.advance(milliseconds: 3_600_000)
            #expect(try await s.server.escalateToContacts() == 0)
            let second = try #require(URL(string: lines[1][3]))
            #expect(try await s.client.send("POST", second.path).status == 410)
        }
    }
}
