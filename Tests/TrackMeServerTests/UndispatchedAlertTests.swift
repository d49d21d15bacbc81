import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A rule's alert of a person not enrolled in AutomatedSOS reaches no dispatcher, but is kept
/// for the person and their carers (`undispatched_alerts`; PERSONAL-DATA.md, "Undispatched
/// alerts").
@Suite("Undispatched alerts")
struct UndispatchedAlertTests {
    static func alert(_ deviceID: String, id: String, kind: AlertKind, seq: Int = 0, type: AlertUpdate.UpdateType = .raised) -> AlertUpdate {
        var update = Sample.alert(deviceID, id: id, updateSeq: seq, type: type)
        update.alert.kind = kind
        update.alert.reason = kind == .heartRateHigh ? "fast_beats" : nil
        return update
    }

    static func alerts(_ s: TestServer, _ path: String, _ session: BrowserSession) async throws -> [[String: Any]] {
        let list = try await s.page("GET", path, session)
        try #require(list.status == 200, "\(list.text)")
        return list.object["alerts"] as? [[String: Any]] ?? []
    }

    /// Ada with AutomatedSOS off, Cara her carer, and a dispatcher.
    static func unenrolled(_ s: TestServer) async throws -> (ada: String, device: String, session: BrowserSession, carer: BrowserSession) {
        let (ada, device) = try await s.wearer("ada", device: "pi-0001")
        let session = try await s.signIn("ada")
        try await s.createAccount("cara", role: "carer", displayName: "Cara Carer")
        #expect(try await s.page("POST", "/v1/people/me/carers", session, json: ["carer": "cara"]).status == 201)
        let carer = try await s.signIn("cara")
        let off = try await s.page("PUT", "/v1/people/me/automated-sos", session, json: ["active": false])
        try #require(off.status == 200, "\(off.text)")
        return (ada, device, session, carer)
    }

    @Test(
        "off: a rule's alert is on the person's and the carer's list marked not dispatched, never on the dispatcher's list, page or feed; its cancel updates it; the SOS button still reaches the dispatcher",
        arguments: Backend.enabled
    )
    func keptForThePerson(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, device, session, carer) = try await Self.unenrolled(s)
            let dispatcher = try await s.dispatcher()

            let raised = try await s.postAlert(Self.alert("pi-0001", id: "alert-quiet", kind: .heartRateHigh), token: device)
            #expect(raised.status == 200, "\(raised.text)")
            #expect(raised.object["acknowledged"] as? Bool == false)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-sos", kind: .manual), token: device).status == 200)

            for (path, who) in [("/v1/people/me/alerts", session), ("/v1/people/\(ada)/alerts", carer)] {
                let list = try await Self.alerts(s, path, who)
                let quiet = try #require(list.first { $0["alert_id"] as? String == "alert-quiet" }, "\(path): \(list)")
                #expect(quiet["dispatched"] as? Bool == false)
                #expect(quiet["kind"] as? String == "heart_rate_high")
                #expect(quiet["reason"] as? String == "fast_beats")
                #expect(quiet["state"] as? String == "raised")
                #expect(quiet["open"] as? Bool == true)
                #expect(quiet["lat"] as? Double == 44.07)
                let sos = try #require(list.first { $0["alert_id"] as? String == "alert-sos" })
                #expect(sos["dispatched"] as? Bool == true)
            }
            // The dispatcher: the SOS alert only, on the list, the alert's page and the feed.
            #expect(try await AutomatedSOSTests.openAlerts(s, dispatcher: dispatcher) == ["alert-sos"])
            #expect(try await s.client.send("GET", "/v1/alerts/alert-quiet", token: dispatcher).status == 404)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM feed WHERE data LIKE '%alert-quiet%'") == 0)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM feed WHERE data LIKE '%alert-sos%'") > 0)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM alerts WHERE alert_id = 'alert-quiet'") == 0)

            // The device cancels it; a late copy of the raise changes nothing.
            s.wall.advance(milliseconds: 30_000)
            let cancel = Self.alert("pi-0001", id: "alert-quiet", kind: .heartRateHigh, seq: 1, type: .cancelled)
            #expect(try await s.postAlert(cancel, token: device).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-quiet", kind: .heartRateHigh), token: device).status == 200)
            let after = try await Self.alerts(s, "/v1/people/me/alerts", session)
            let cancelled = try #require(after.first { $0["alert_id"] as? String == "alert-quiet" })
            #expect(cancelled["state"] as? String == "cancelled")
            #expect(cancelled["open"] as? Bool == false)
            #expect((cancelled["resolved_ms"] as? NSNumber)?.int64Value == s.wall.now)
            #expect((cancelled["created_ms"] as? NSNumber)?.int64Value == s.wall.now - 30_000)
            #expect(after.filter { $0["alert_id"] as? String == "alert-quiet" }.count == 1)
            #expect(try await AutomatedSOSTests.openAlerts(s, dispatcher: dispatcher) == ["alert-sos"])
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM feed WHERE data LIKE '%alert-quiet%'") == 0)

            // Another device cannot write into Ada's alert.
            let (_, eve) = try await s.wearer("eve", device: "pi-0002")
            #expect(try await s.page("PUT", "/v1/people/me/automated-sos", try await s.signIn("eve"), json: ["active": false]).status == 200)
            let foreign = Self.alert("pi-0002", id: "alert-quiet", kind: .heartRateHigh, seq: 2, type: .resolved)
            #expect(try await s.postAlert(foreign, token: eve).status == 403)
            #expect(
                try await Self.alerts(s, "/v1/people/me/alerts", session).first { $0["alert_id"] as? String == "alert-quiet" }?["state"] as? String
                    == "cancelled"
            )
        }
    }

    @Test(
        "an alert the desk has (raised while enrolled) ends on the desk when the person turns AutomatedSOS off meanwhile",
        arguments: Backend.enabled
    )
    func deskAlertEndsOnTheDesk(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device) = try await s.wearer("ada", device: "pi-0001")
            let session = try await s.signIn("ada")
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-desk", kind: .noPulse), token: device).status == 200)
            #expect(try await AutomatedSOSTests.openAlerts(s, dispatcher: dispatcher) == ["alert-desk"])
            #expect(try await s.page("PUT", "/v1/people/me/automated-sos", session, json: ["active": false]).status == 200)
            let cancel = Self.alert("pi-0001", id: "alert-desk", kind: .noPulse, seq: 1, type: .cancelled)
            #expect(try await s.postAlert(cancel, token: device).status == 200)
            #expect(try await AutomatedSOSTests.openAlerts(s, dispatcher: dispatcher).isEmpty, "the desk saw it end")
            let list = try await Self.alerts(s, "/v1/people/me/alerts", session)
            #expect(list.count == 1)
            #expect(list.first?["dispatched"] as? Bool == true)
            #expect(list.first?["state"] as? String == "cancelled")
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts") == 0)
        }
    }

    @Test("the person's download says which alerts went to a dispatcher and which were kept (CSV and JSON)", arguments: Backend.enabled)
    func download(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device, session, _) = try await Self.unenrolled(s)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-kept", kind: .heartRateHigh), token: device).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-sos", kind: .manual), token: device).status == 200)
            let csv = try await s.page("GET", "/v1/people/me/export?format=csv", session)
            #expect(csv.status == 200)
            let rows = csv.text.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            let header = try #require(rows.first)
            let column = try #require(header.firstIndex(of: "dispatched"))
            let id = try #require(header.firstIndex(of: "alert_id"))
            #expect(rows.allSatisfy { $0.count == header.count }, "every row has every column")
            let dispatched = Dictionary(uniqueKeysWithValues: rows.filter { $0.first == "alert" }.map { ($0[id], $0[column]) })
            #expect(dispatched == ["alert-kept": "false", "alert-sos": "true"])
            let json = try await s.page("GET", "/v1/people/me/export?format=json", session)
            let alerts = json.object["alerts"] as? [[String: Any]] ?? []
            #expect(alerts.first { $0["alert_id"] as? String == "alert-kept" }?["dispatched"] as? Bool == false)
        }
    }

    @Test(
        "the wearer presses SOS during a kept alert: the alert, now manual, goes to the desk and leaves the kept list (nothing left behind to outlive it)",
        arguments: Backend.enabled
    )
    func sosDuringAKeptAlert(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device, session, _) = try await Self.unenrolled(s)
            let dispatcher = try await s.dispatcher()
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-1", kind: .heartRateHigh), token: device).status == 200)
            var pressed = Self.alert("pi-0001", id: "alert-1", kind: .manual, seq: 1, type: .kindChanged)
            pressed.alert.reason = nil
            let answer = try await s.postAlert(pressed, token: device)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try await AutomatedSOSTests.openAlerts(s, dispatcher: dispatcher) == ["alert-1"])
            let list = try await Self.alerts(s, "/v1/people/me/alerts", session)
            #expect(list.count == 1)
            #expect(list.first?["dispatched"] as? Bool == true)
            #expect(list.first?["kind"] as? String == "manual")
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts") == 0)
        }
    }

    @Test(
        "the per-device flood limit holds for kept alerts too: past the burst a new one gets 429 and is not kept; no flood event reaches the dispatchers' feed",
        arguments: Backend.enabled
    )
    func floodLimited(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.alertRaisesPerDevice = RateLimit(burst: 3, perSecond: 1.0 / 6)
        try await TestServer.with(backend, limits: limits) { s in
            let (_, device, session, _) = try await Self.unenrolled(s)
            var statuses: [Int] = []
            for index in 0..<6 {
                statuses.append(try await s.postAlert(Self.alert("pi-0001", id: "alert-\(index)", kind: .noPulse), token: device).status)
            }
            #expect(statuses == [200, 200, 200, 429, 429, 429])
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts") == 3)
            #expect(try await Self.alerts(s, "/v1/people/me/alerts", session).count == 3)
            // An update of a kept alert is not a new alert.
            let cancel = Self.alert("pi-0001", id: "alert-0", kind: .noPulse, seq: 1, type: .cancelled)
            #expect(try await s.postAlert(cancel, token: device).status == 200)
            let feed = try await s.server.store.feedEvents(after: 0, limit: 1000)
            #expect(!feed.contains { $0.kind == "alert_flood" || $0.kind == "alert" }, "\(feed.map(\.kind))")
            // Time refills the bucket.
            s.wall.advance(milliseconds: 6000)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-late", kind: .noPulse), token: device).status == 200)
        }
    }

    @Test("retention: a closed one goes with closed_alerts (60 days from its end), an open one stays", arguments: Backend.enabled)
    func retention(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device, _, _) = try await Self.unenrolled(s)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-closed", kind: .noPulse), token: device).status == 200)
            let cancel = Self.alert("pi-0001", id: "alert-closed", kind: .noPulse, seq: 1, type: .cancelled)
            #expect(try await s.postAlert(cancel, token: device).status == 200)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-open", kind: .noPulse), token: device).status == 200)
            await RetentionErasureTests.pass(s, days: 59)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts") == 2)
            await RetentionErasureTests.pass(s, days: 2)
            // Signed in again: the session of 61 days ago has expired.
            let ids = try await Self.alerts(s, "/v1/people/me/alerts", try await s.signIn("ada")).compactMap { $0["alert_id"] as? String }
            #expect(ids == ["alert-open"])
        }
    }

    @Test("with a master key the kept update is sealed under the person's key, and still read on their list", arguments: Backend.enabled)
    func sealed(backend: Backend) async throws {
        let directory = try PersonKeyTests.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let master = try PersonKeyTests.masterKey(in: directory)
        let keyStore = try await PersonKeyTests.keyStore(backend)
        let sealing: (inout ServerConfiguration) -> Void = { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master, keyStore: keyStore) }
        try await TestServer.with(backend, configure: sealing) { s in
            let (_, device, session, _) = try await Self.unenrolled(s)
            #expect(try await s.postAlert(Self.alert("pi-0001", id: "alert-quiet", kind: .heartRateHigh), token: device).status == 200)
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts WHERE substr(body, 1, 3) = 's1.'") == 1)
            // Each with a character base64 never holds, so a sealed body cannot spell one by
            // chance: a bare `bpm` is three base64 letters.
            for secret in ["44.07", "\"bpm\"", "alert-quiet"] {
                #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM undispatched_alerts WHERE body LIKE '%\(secret)%'") == 0)
            }
            let list = try await Self.alerts(s, "/v1/people/me/alerts", session)
            #expect(list.first?["lat"] as? Double == 44.07)
        }
    }
}
