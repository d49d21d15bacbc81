import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Contacts told when the alert is raised (a care setting), and the link's page that follows
/// the alert: its own alert only, the position while it is open, nothing once it closed.
@Suite("Emergency contacts: told at the raise, following the alert through their link")
struct ContactFollowTests {
    typealias Scratch = ContactNotifierTests.Scratch

    /// A notifier that writes `name|purpose|link` a line.
    static func notifier(_ scratch: Scratch) throws -> String {
        try scratch.script("echo \"$TRACKME_CONTACT_NAME|$TRACKME_PURPOSE|$TRACKME_LINK\" >> \"$DIR/told.txt\"")
    }

    static func told(_ scratch: Scratch) -> [[String]] {
        scratch.lines("told.txt").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }

    static func alert(
        _ deviceID: String,
        id: String,
        kind: AlertKind,
        seq: Int = 0,
        type: AlertUpdate.UpdateType = .raised,
        latitude: Double = 44.07
    )
        -> AlertUpdate
    {
        var update = Sample.alert(deviceID, id: id, updateSeq: seq, type: type)
        update.alert.kind = kind
        update.alert.position = AlertPosition(fix: PositionFix(mode: .threeDimensional, latitude: latitude, longitude: -121.31), ageMilliseconds: 500)
        return update
    }

    static func setCare(_ s: TestServer, _ deviceID: String, _ settings: [String: Any]) async throws {
        let response = try await s.client.send("PUT", "/v1/devices/\(deviceID)/care-settings", token: TestServer.adminToken, json: settings)
        try #require(response.status == 200, "care settings: \(response.text)")
    }

    /// The path of the link the notifier was given for `name`.
    static func linkPath(_ scratch: Scratch, _ name: String) throws -> String {
        let line = try #require(told(scratch).first { $0[0] == name && !$0[2].isEmpty })
        return try #require(URL(string: line[2])).path
    }

    @Test("a manual SOS reaches every contact at once, through the attempts job; a rule's alert waits for the escalation", arguments: Backend.enabled)
    func manualAtRaise(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try Self.notifier(scratch)
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let sos = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben", "Cleo"])
            let rule = try await ContactNotifierTests.enrol(s, "pi-0002", contacts: ["Dan"])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-sos", kind: .manual), token: sos).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0002", id: "alert-rule", kind: .noPulse), token: rule).status == 200)
            #expect(try await s.server.escalateToContacts() == 2, "both contacts of the SOS at once; none of the rule's alert")
            #expect(Self.told(scratch).map { "\($0[0]) \($0[1])" } == ["Ben raised", "Cleo raised"])
            #expect(Self.told(scratch).allSatisfy { $0[2].contains("/contact/") }, "each with their link")
            #expect(try await s.server.escalateToContacts() == 0, "once")
            s.wall.advance(milliseconds: 300_000)
            #expect(
                try await s.server.escalateToContacts() == 1,
                "the rule's alert reaches Dan on the schedule; the SOS's contacts are not told twice"
            )
            #expect(Self.told(scratch).map { "\($0[0]) \($0[1])" } == ["Ben raised", "Cleo raised", "Dan escalation"])
            #expect(
                ContactNotifierTests.contactEntries(try await ContactNotifierTests.timeline(s, "alert-sos", dispatcher: dispatcher)) == [
                    "contact_notified: Ben (alert raised), attempt 1 of 5", "contact_notified: Cleo (alert raised), attempt 1 of 5",
                ]
            )
        }
    }

    @Test("the care setting tell_contacts_at_raise turns it on for any alert, or off for the SOS too", arguments: Backend.enabled)
    func careSetting(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try Self.notifier(scratch)
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let on = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben"])
            let off = try await ContactNotifierTests.enrol(s, "pi-0002", contacts: ["Dan"])
            try await Self.setCare(s, "pi-0001", ["contacts": [["name": "Ben"]], "tell_contacts_at_raise": true])
            try await Self.setCare(s, "pi-0002", ["contacts": [["name": "Dan"]], "tell_contacts_at_raise": false])
            let view = try await s.client.send("GET", "/v1/devices/pi-0001/care-settings", token: TestServer.adminToken)
            #expect((view.object["settings"] as? [String: Any])?["tell_contacts_at_raise"] as? Bool == true)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-1", kind: .noPulse), token: on).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0002", id: "alert-2", kind: .manual), token: off).status == 200)
            #expect(try await s.server.escalateToContacts() == 1)
            #expect(Self.told(scratch).map { "\($0[0]) \($0[1])" } == ["Ben raised"])
            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 1)
            #expect(Self.told(scratch).map { "\($0[0]) \($0[1])" } == ["Ben raised", "Dan escalation"])
        }
    }

    @Test(
        "the link follows the position while the alert is open, says acknowledged and closed, stops positions at the close; each read is in the access log",
        arguments: Backend.enabled
    )
    func follows(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try Self.notifier(scratch)
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let (ada, device) = try await s.wearer("ada", device: "pi-0001")
            try await Self.setCare(s, "pi-0001", ["contacts": [["name": "Ben", "phone": "+39 1"]]])
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-1", kind: .manual), token: device).status == 200)
            #expect(try await s.server.escalateToContacts() == 1)
            let path = try Self.linkPath(scratch, "Ben")

            let page = try await s.client.send("GET", path)
            #expect(page.status == 200)
            #expect(page.headers["Referrer-Policy"] == "no-referrer" || page.headers["referrer-policy"] == "no-referrer")
            #expect(!page.text.contains("Ada"), "the page holds nothing of the alert; its script reads it")

            var live = try await s.client.send("GET", path + "/live")
            #expect(live.status == 200, "\(live.text)")
            #expect(live.object["state"] as? String == "open")
            #expect(live.object["person"] as? String == "Ada")
            #expect(live.object["kind"] as? String == "manual")
            #expect((live.object["position"] as? [String: Any])?["lat"] as? Double == 44.07)
            #expect(!live.text.contains("pi-0001") && !live.text.contains("+39"), "no device id, no phone numbers")
            #expect(
                Set(live.object.keys).isSubset(of: [
                    "state", "person", "contact", "kind", "opened_ms", "acknowledged_ms", "acknowledged_by", "closed_ms", "outcome", "confirmed",
                    "position", "track", "now_ms",
                ])
            )

            // The device sends a new fix.
            s.wall.advance(milliseconds: 1_000)
            #expect(
                try await s.postAlert(Self.alert("pi-0001", id: "alert-1", kind: .manual, seq: 1, type: .position, latitude: 44.08), token: device)
                    .status == 200
            )
            live = try await s.client.send("GET", path + "/live")
            #expect((live.object["position"] as? [String: Any])?["lat"] as? Double == 44.08)
            #expect((live.object["track"] as? [[String: Any]])?.compactMap { $0["lat"] as? Double } == [44.07, 44.08])

            #expect(try await s.client.send("POST", "/v1/alerts/alert-1/ack", token: dispatcher).status == 200)
            live = try await s.client.send("GET", path + "/live")
            #expect(live.object["state"] as? String == "acknowledged")
            #expect(live.object["acknowledged_by"] as? String == "dispatcher", "who it was is not said")

            let resolved = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "help_arrived"])
            #expect(resolved.status == 200)
            s.wall.advance(milliseconds: 1_000)
            // A fix the device sends after the close (it learns of it at its next sync).
            _ = try await s.postAlert(Self.alert("pi-0001", id: "alert-1", kind: .manual, seq: 2, type: .position, latitude: 44.09), token: device)
            live = try await s.client.send("GET", path + "/live")
            #expect(live.status == 200)
            #expect(live.object["state"] as? String == "closed")
            #expect(live.object["outcome"] as? String == "help_arrived")
            #expect(live.object["position"] == nil || live.object["position"] is NSNull, "no position once closed")
            #expect((live.object["track"] as? [Any])?.isEmpty == true)
            #expect(!live.text.contains("44.0"), "no coordinates at all")

            // Within the grace the link says how it ended; after it, 410 and nothing.
            s.wall.advance(milliseconds: ContactFollow.grace + 1)
            live = try await s.client.send("GET", path + "/live")
            #expect(live.status == 410)
            #expect(live.errorCode == "alert_over")
            #expect(try await s.client.send("GET", path).status == 410)

            let session = try await s.signIn("ada")
            let log = try #require(try await s.page("GET", "/v1/people/me/access-log", session).object["entries"] as? [[String: Any]])
            let reads = log.filter { $0["reader_role"] as? String == "emergency_contact" }
            #expect(reads.count == 3, "the three reads that returned a position: \(reads)")
            #expect(reads.allSatisfy { $0["reader_name"] as? String == "Ben" && $0["reason"] as? String == "alert_link" })
            #expect(reads.allSatisfy { $0["subject"] == nil || $0["subject"] as? String == "person:\(ada)" })
        }
    }

    @Test("a link reads its own alert only; a tampered, expired or revoked link gets 403 or 410 and no data", arguments: Backend.enabled)
    func scoped(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try Self.notifier(scratch)
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let first = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben"])
            let second = try await ContactNotifierTests.enrol(s, "pi-0002", contacts: ["Dan"])
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-a", kind: .manual, latitude: 10), token: first).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0002", id: "alert-b", kind: .manual, latitude: 20), token: second).status == 200)
            #expect(try await s.server.escalateToContacts() == 2)
            let pathA = try Self.linkPath(scratch, "Ben")
            let pathB = try Self.linkPath(scratch, "Dan")
            let a = try await s.client.send("GET", pathA + "/live")
            #expect((a.object["position"] as? [String: Any])?["lat"] as? Double == 10)
            #expect(!a.text.contains("alert-b") && !a.text.contains("Dan"))

            // A's link with B's alert id: the MAC no longer matches.
            let tokenA = String(pathA.dropFirst("/contact/".count))
            let key = s.server.configuration.console.contactLinkKey
            let linkA = try #require(ContactLink(token: tokenA, key: key))
            var toB = linkA
            toB.alertID = "alert-b"
            let unsigned = String(toB.token(key: Array("not the server's key".utf8)).split(separator: ".")[0]) + "." + tokenA.split(separator: ".")[1]
            // Even signed with the server's key (a leaked key), A's nonce does not open B.
            for forged in [unsigned, toB.token(key: key), String(tokenA.dropLast()) + (tokenA.hasSuffix("0") ? "1" : "0")] {
                let answer = try await s.client.send("GET", "/contact/\(forged)/live")
                #expect(answer.status == 403, "\(answer.text)")
                #expect(answer.errorCode == "link_not_valid")
                #expect(!answer.text.contains("20.0") && !answer.text.contains("Ada"))
                #expect(try await s.client.send("GET", "/contact/\(forged)").status == 403)
            }

            // Revoked: the person's data erased, the link with it.
            let erased = try await s.client.send("POST", "/v1/devices/pi-0001/erase", token: TestServer.adminToken)
            #expect(erased.status == 200)
            let revoked = try await s.client.send("GET", pathA + "/live")
            #expect([403, 410].contains(revoked.status))
            #expect(!revoked.text.contains("10.0") && !revoked.text.contains("Ada"))

            // Expired: past the link's lifetime, whatever the alert.
            s.wall.advance(milliseconds: s.server.configuration.console.contactLinkLifetime.milliseconds + 1)
            let expired = try await s.client.send("GET", pathB + "/live")
            #expect(expired.status == 410)
            #expect(expired.errorCode == "link_expired")
            #expect(!expired.text.contains("20.0"))
            #expect(try await s.client.send("POST", pathB).status == 410)
        }
    }
}
