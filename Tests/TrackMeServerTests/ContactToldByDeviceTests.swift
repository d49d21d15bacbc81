import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A contact the device told itself through its local fallback, while offline, is told once:
/// the alert's update says so (`contacts_told`), the server records it on the timeline and its
/// own notifier skips them.
@Suite("Emergency contacts: the ones the device told are not told again")
struct ContactToldByDeviceTests {
    typealias Scratch = ContactNotifierTests.Scratch

    static func told(_ index: Int, wall: Int64) -> ContactTold {
        ContactTold(contactIndex: index, at: Sample.timestamp(wall: wall, mono: 11_000_000_000), path: .localFallback)
    }

    static func names(_ scratch: Scratch) -> [String] {
        scratch.lines("told.txt")
    }

    @Test("an escalation skips the contact the device told; they still hear that it closed", arguments: Backend.enabled)
    func escalation(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script("echo \"$TRACKME_CONTACT_NAME $TRACKME_PURPOSE\" >> \"$DIR/told.txt\"")
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let device = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben", "Cleo"])
            let dispatcher = try await s.dispatcher()
            let raise = Sample.alert("pi-0001", id: "alert-1")
            #expect(try await s.postAlert(raise, token: device).status == 200)
            // The raise's first try reached the server, but the device never heard: it told Ben
            // itself, and says so in the same update sent again.
            var again = raise
            again.contactsTold = [Self.told(0, wall: TestServer.startWall - 500)]
            let repeated = try await s.postAlert(again, token: device)
            #expect(repeated.status == 200)
            #expect(repeated.object["duplicate"] as? Bool == true)

            s.wall.advance(milliseconds: 180_000)
            #expect(try await s.server.escalateToContacts() == 0, "Ben heard from the device; not again from the server")
            s.wall.advance(milliseconds: 120_000)
            #expect(try await s.server.escalateToContacts() == 1)
            #expect(Self.names(scratch) == ["Cleo escalation"])
            let timeline = try await ContactNotifierTests.timeline(s, "alert-1", dispatcher: dispatcher)
            #expect(
                ContactNotifierTests.contactEntries(timeline) == [
                    "contact_notified: Ben (told by the device through its local fallback, before the alert reached the server)",
                    "contact_notified: Cleo, attempt 1 of 5",
                ]
            )
            let ben = try #require(timeline.first { ($0["detail"] as? String)?.hasPrefix("Ben") == true })
            #expect((ben["at_ms"] as? NSNumber)?.int64Value == TestServer.startWall - 500, "at the device's trusted time")

            let resolved = try await s.client.send("POST", "/v1/alerts/alert-1/resolve", token: dispatcher, json: ["outcome": "help_arrived"])
            #expect(resolved.status == 200, "\(resolved.text)")
            #expect(try await s.server.escalateToContacts() == 2, "both were told of the alert: both hear it closed")
            #expect(Self.names(scratch) == ["Cleo escalation", "Ben closed", "Cleo closed"])
        }
    }

    @Test("an SOS press told at once reaches only the contacts the device has not told", arguments: Backend.enabled)
    func toldAtRaise(backend: Backend) async throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let notifier = try scratch.script("echo \"$TRACKME_CONTACT_NAME $TRACKME_PURPOSE\" >> \"$DIR/told.txt\"")
        let console: (inout ConsoleConfiguration) -> Void = { $0.contactNotifierCommand = notifier }
        try await TestServer.with(backend, console: console) { s in
            let device = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben", "Cleo", "Dora"])
            var raise = Sample.alert("pi-0001", id: "alert-sos")
            raise.alert.kind = .manual
            raise.contactsTold = [Self.told(2, wall: TestServer.startWall - 2_000), Self.told(0, wall: TestServer.startWall - 1_000)]
            #expect(try await s.postAlert(raise, token: device).status == 200)
            #expect(try await s.server.escalateToContacts() == 1)
            #expect(Self.names(scratch) == ["Cleo raised"])
            s.wall.advance(milliseconds: 3_600_000)
            #expect(try await s.server.escalateToContacts() == 0, "nobody twice, nobody by the schedule either")
        }
    }

    @Test(
        "contacts_told naming no contact's index, or one twice, is refused and nothing is stored",
        arguments: Backend.enabled,
        [-1, 1000, 0]
    )
    func refused(backend: Backend, index: Int) async throws {
        try await TestServer.with(backend) { s in
            let device = try await ContactNotifierTests.enrol(s, "pi-0001", contacts: ["Ben"])
            let dispatcher = try await s.dispatcher()
            var raise = Sample.alert("pi-0001", id: "alert-bad")
            // 0 is a contact's index: named twice it is the bad input.
            raise.contactsTold =
                index == 0
                ? [Self.told(0, wall: TestServer.startWall), Self.told(0, wall: TestServer.startWall)]
                : [Self.told(index, wall: TestServer.startWall)]
            let answer = try await s.postAlert(raise, token: device)
            #expect(answer.status == 400, "\(answer.text)")
            #expect(answer.errorField?.hasPrefix("contacts_told[") == true, "\(answer.text)")
            #expect(try await s.client.send("GET", "/v1/alerts/alert-bad", token: dispatcher).status == 404)
        }
    }
}
