import Foundation
import GRDB
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO
#endif

/// Issue 20 (care): one retention policy for every kind of personal data, erasure that leaves
/// no row of the person in any table (checked by scanning the database), the wipe order, and
/// care settings that reach the device in the sync reply. Every rule on both backends.
@Suite("Retention, erasure and care settings")
struct RetentionErasureTests {
    static let day: Int64 = 86_400_000

    /// Moves the wall clock and the jobs' clock together by `days` and lets the jobs run.
    static func pass(_ s: TestServer, days: Int64) async {
        s.wall.advance(milliseconds: days * day)
        await s.runJobs(advancingBy: .seconds(days * 86_400))
    }

    static func closeAlert(_ s: TestServer, _ deviceID: String, id: String, token: String) async throws {
        #expect(try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert(deviceID, id: id))).status == 200)
        let cancelled = Sample.alert(deviceID, id: id, updateSeq: 1, type: .cancelled)
        #expect(try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(cancelled)).status == 200)
    }

    static func rows(_ s: TestServer, _ sql: String) async throws -> Int {
        try await DatabaseScan.count(s.server.store, sql)
    }

    @Test("the policy: 60 days for every kind, periods per kind, closed alerts never shorter than their updates, KIND=DAYS parsing")
    func policy() throws {
        let policy = try RetentionPolicy(periods: [.closedAlerts: .seconds(365 * 86_400)])
        let cutoffs = Dictionary(uniqueKeysWithValues: policy.cutoffs(nowMilliseconds: 1000 * Self.day).map { ($0.kind, $0.beforeMilliseconds) })
        #expect(cutoffs.count == PersonalDataKind.allCases.count)
        #expect(cutoffs[.readings] == 940 * Self.day)
        #expect(cutoffs[.feedEvents] == 940 * Self.day)
        #expect(cutoffs[.closedAlerts] == 635 * Self.day)
        #expect(throws: RetentionPolicyError.self) { try RetentionPolicy(periods: [.closedAlerts: .seconds(30 * 86_400)]) }
        #expect(throws: RetentionPolicyError.self) { try RetentionPolicy(periods: [.readings: .seconds(3600)]) }
        #expect(try RetentionPolicy.parsePeriod("closed_alerts=365") == (.closedAlerts, .seconds(365 * 86_400)))
        #expect(throws: RetentionPolicyError.self) { try RetentionPolicy.parsePeriod("alerts=365") }
        #expect(throws: RetentionPolicyError.self) { try RetentionPolicy.parsePeriod("readings=0") }
    }

    @Test(
        "retention at 60 days: old readings, closed alerts with their updates, feed events and a retired person go; open alerts and recent data stay",
        arguments: Backend.enabled
    )
    func retentionPerKind(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let retired = try await s.enrol("pi-0002")
            #expect(try await s.send(Sample.batch("pi-0001", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token).status == 200)
            #expect(try await s.send(Sample.batch("pi-0002", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: retired).status == 200)
            try await Self.closeAlert(s, "pi-0001", id: "closed-old", token: token)
            #expect(
                try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "open-old")))
                    .status == 200
            )
            // The device is retired: its token revoked.
            let tokenID = try #require(retired.split(separator: ".").first.map(String.init))
            #expect(try await s.client.send("POST", "/v1/tokens/\(tokenID)/revoke", token: TestServer.adminToken, body: Data()).status == 200)
            let feedBefore = try await Self.rows(s, "SELECT count(*) FROM feed")
            #expect(feedBefore >= 3)
            // A first pass marks the feed; nothing is old enough yet.
            await Self.pass(s, days: 1)
            #expect(try await Self.rows(s, "SELECT count(*) FROM readings") == 2)
            // 30 days on: new data that must survive the next pass.
            await Self.pass(s, days: 30)
            #expect(
                try await s.send(Sample.batch("pi-0001", seq: 2, readings: [Sample.heartRate(seq: 2, wall: s.wall.now)]), token: token).status == 200
            )
            try await Self.closeAlert(s, "pi-0001", id: "closed-new", token: token)
            await Self.pass(s, days: 31)
            #expect(try await s.readings("pi-0001").map { $0["seq"] as? Int } == [2])
            #expect(try await Self.rows(s, "SELECT count(*) FROM alerts WHERE alert_id = 'closed-old'") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alert_updates WHERE alert_id = 'closed-old'") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alerts WHERE alert_id = 'closed-new'") == 1)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alert_updates WHERE alert_id = 'closed-new'") == 2)
            // An open alert is never aged, however old.
            #expect(try await Self.rows(s, "SELECT count(*) FROM alerts WHERE alert_id = 'open-old'") == 1)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alert_updates WHERE alert_id = 'open-old'") == 1)
            // The feed events of before the first pass are gone; the newer ones stay.
            #expect(try await Self.rows(s, "SELECT count(*) FROM feed WHERE instr(data, '\"closed-old\"') > 0") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM feed WHERE instr(data, '\"open-old\"') > 0") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM feed WHERE instr(data, '\"closed-new\"') > 0") == 2)
            // The retired person is gone; the active one stays.
            #expect(try await Self.rows(s, "SELECT count(*) FROM devices WHERE device_id = 'pi-0002'") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM batches WHERE device_id = 'pi-0002'") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM devices WHERE device_id = 'pi-0001'") == 1)
            let metrics = try await s.client.send("GET", "/metrics").text
            // The closed alert's two updates went as alert_updates (aged first), then its row.
            #expect(metrics.contains("trackme_server_retention_deleted_total{kind=\"alert_updates\"} 2\n"), "\(metrics)")
            #expect(metrics.contains("trackme_server_retention_deleted_total{kind=\"closed_alerts\"} 1\n"))
            #expect(metrics.contains("trackme_server_retention_deleted_total{kind=\"retired_people\"} "))
            let openapi = try await s.client.send("GET", "/openapi.yaml").text
            for path in ["/v1/devices/{id}/care-settings", "/v1/devices/{id}/erase"] { #expect(openapi.contains("  \(path):")) }
        }
    }

    @Test("closed alerts kept a year when configured: their updates go at 60 days, the alert itself after 365", arguments: Backend.enabled)
    func closedAlertsKeptLonger(backend: Backend) async throws {
        let server = try await TestServer.start(backend, configure: { $0.retentionPeriods[.closedAlerts] = .seconds(365 * 86_400) })
        do {
            let s = server
            let token = try await s.enrol("pi-0001")
            try await Self.closeAlert(s, "pi-0001", id: "kept", token: token)
            await Self.pass(s, days: 61)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alerts WHERE alert_id = 'kept'") == 1)
            #expect(try await Self.rows(s, "SELECT count(*) FROM alert_updates WHERE alert_id = 'kept'") == 0)
            // The person stays while an alert of theirs is kept.
            #expect(try await Self.rows(s, "SELECT count(*) FROM devices WHERE device_id = 'pi-0001'") == 1)
            for _ in 0..<5 { await Self.pass(s, days: 61) }
            #expect(try await Self.rows(s, "SELECT count(*) FROM alerts WHERE alert_id = 'kept'") == 0)
            await server.stop()
        } catch {
            await server.stop()
            throw error
        }
    }

    @Test(
        "erasure: no table holds the person's identifiers afterwards; another person is untouched; the erased device is told to wipe",
        arguments: Backend.enabled
    )
    func erasureLeavesNoRow(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let person: [String: Any] = [
                "name": "Zelda Quixote", "age": 81, "min_hr": 45, "notes": "door code 4711",
                "contacts": [["name": "Yorick Quixote", "relation": "son", "phone": "+44 7700 900123"]],
            ]
            let enrolled = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-erase-me", "person": person]
            )
            try #require(enrolled.status == 201, "\(enrolled.text)")
            let token = try #require(enrolled.object["token"] as? String)
            let other = try await s.enrol("pi-keep-1")
            var first = Sample.batch("pi-erase-me", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.fix(seq: 2)])
            first.storeEpoch = "epoch-of-zelda"
            #expect(try await s.send(first, token: token).status == 200)
            #expect(try await s.send(Sample.batch("pi-keep-1", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: other).status == 200)
            try await Self.closeAlert(s, "pi-erase-me", id: "alert-of-zelda", token: token)
            #expect(
                try await s.client.send(
                    "POST",
                    "/v1/alerts",
                    token: token,
                    body: try WireCodec.encode(Sample.alert("pi-erase-me", id: "open-of-zelda"))
                ).status == 200
            )
            let dispatcher = try await s.dispatcher()
            #expect(try await s.client.send("POST", "/v1/alerts/open-of-zelda/ack", token: dispatcher, body: Data()).status == 200)
            #expect(
                try await s.client.send("POST", "/v1/alerts/open-of-zelda/notes", token: dispatcher, json: ["text": "called Yorick Quixote"]).status
                    == 201
            )
            #expect(
                try await s.client.send("PUT", "/v1/devices/pi-erase-me/care-settings", token: TestServer.adminToken, json: ["max_hr": 150]).status
                    == 200
            )
            // The person's own wearer account (signed in once), and an organisation's request to it.
            let wearerID = try await s.createAccount("zelda-wears", role: "wearer", displayName: "Zelda Q. Wearer")
            #expect(
                try await s.client.send("POST", "/v1/people/\(wearerID)/devices", token: TestServer.adminToken, json: ["device_id": "pi-erase-me"])
                    .status == 201
            )
            let zelda = try await s.signIn("zelda-wears")
            // A reset link sent to her (the row names her account).
            try await s.server.store.insertAccountLink(
                StoredAccountLink(
                    id: "link-of-zelda",
                    accountID: wearerID,
                    purpose: .passwordReset,
                    nonceHash: ServerDigest.sha256Hex("nonce"),
                    createdMilliseconds: s.wall.now,
                    expiresMilliseconds: s.wall.now + 3_600_000
                )
            )
            // A carer Zelda named, who read and changed her care settings and downloaded her data
            // (the link and the access log's rows name her; the carer's own account stays).
            let carerID = try await s.createAccount("carer-of-z", role: "carer", displayName: "A Carer")
            #expect(try await s.page("POST", "/v1/people/me/carers", zelda, json: ["carer": "carer-of-z", "may_export": true]).status == 201)
            let carer = try await s.signIn("carer-of-z")
            #expect(try await s.page("GET", "/v1/devices/pi-erase-me/care-settings", carer).status == 200)
            #expect(try await s.page("PUT", "/v1/devices/pi-erase-me/care-settings", carer, json: ["max_hr": 149]).status == 200)
            #expect(try await s.page("GET", "/v1/people/\(wearerID)/export?format=json", carer).status == 200)
            // With AutomatedSOS off, a rule's alert kept for her own list (`undispatched_alerts`).
            #expect(try await s.page("PUT", "/v1/people/me/automated-sos", zelda, json: ["active": false]).status == 200)
            #expect(try await s.postAlert(Sample.alert("pi-erase-me", id: "quiet-of-zelda"), token: token).status == 200)
            #expect(try await Self.rows(s, "SELECT count(*) FROM undispatched_alerts WHERE alert_id = 'quiet-of-zelda'") == 1)
            let organisation = try await s.organisation("org-asks-zelda", name: "Org Asking")
            let ask: [String: Any] = ["person": "zelda-wears", "kinds": ["heart_rate"], "days": 2, "purpose": "study of Zelda"]
            #expect(try await s.page("POST", "/v1/access-requests", organisation, json: ask).status == 201)
            // A fleet terminal row under the person's name (issue 21's tables are scanned too).
            try await s.server.store.saveFleetTaxi(
                FleetTaxi(deviceID: "pi-erase-me", name: "Zelda Quixote", state: "available", lastReportMilliseconds: TestServer.startWall)
            )
            // A ride she drove.
            var ride = Ride(
                id: "ride-z",
                zoneID: "zone-z",
                pickup: "Via Roma 1",
                reservedMilliseconds: nil,
                createdMilliseconds: TestServer.startWall
            )
            ride.state = .completed
            ride.deviceID = "pi-erase-me"
            ride.offers = [
                RideOffer(
                    offerID: "ride-z.1",
                    deviceID: "pi-erase-me",
                    offeredMilliseconds: TestServer.startWall,
                    expiresMilliseconds: TestServer.startWall + 12_000,
                    outcome: .accepted
                )
            ]
            try await TrackMeServer.fleetStore(s.server.store).insertRide(ride)
            // A race she ran (her entry and last public position) and the contact told of her alert.
            let run = Run(
                id: "run-z",
                code: "RUN-Z",
                name: "Park run",
                organiserAccountID: "org",
                startMilliseconds: TestServer.startWall,
                endMilliseconds: TestServer.startWall + 3_600_000,
                enrolmentOpen: false,
                path: try RunPath(points: [[44.07, -121.31], [44.08, -121.31]]),
                createdMilliseconds: TestServer.startWall
            )
            #expect(try await s.server.runStore.insertRun(run))
            try await s.server.runStore.saveRunEntry(
                RunEntry(
                    runID: "run-z",
                    deviceID: "pi-erase-me",
                    name: "Zelda Quixote",
                    showToSpectators: true,
                    enrolledMilliseconds: TestServer.startWall,
                    checkedInMilliseconds: TestServer.startWall,
                    latitude: 44.075,
                    longitude: -121.31,
                    fixMilliseconds: TestServer.startWall,
                    distanceMetres: 500,
                    receivedMilliseconds: TestServer.startWall
                )
            )
            #expect(
                try await s.server.store.insertContactNotification(
                    ContactNotification(
                        alertID: "open-of-zelda",
                        contactIndex: 0,
                        nonce: "nonce-z",
                        expiresMilliseconds: TestServer.startWall + Self.day
                    ),
                    createdMilliseconds: TestServer.startWall
                )
            )
            #expect(
                try await s.server.store.claimContactAttempt(
                    ContactAttempt(
                        alertID: "open-of-zelda",
                        contactIndex: 0,
                        purpose: .escalation,
                        attempt: 1,
                        startedMilliseconds: TestServer.startWall
                    )
                )
            )
            await Self.pass(s, days: 1)
            // The group figures' roll-up summarises her day (keyed by her wearer account), and an
            // organisation's group query is answered over it.
            try await GroupFigureDesk(store: s.server.store, wallClock: { s.wall.now }).rollUp()
            #expect(try await Self.rows(s, "SELECT count(*) FROM person_days WHERE person_key = 'person:\(wearerID)'") == 1)
            let cell = GroupFigures.Cell(ageBandFrom: 0, ageBandTo: 10, south: 0, west: 0, north: 10, east: 10, dayFrom: 0, dayTo: 1)
            try await s.server.store.recordAnsweredGroup(AnsweredGroup(organisationID: "org", cell: cell, people: 1001, atMilliseconds: s.wall.now))
            // A day of her statistics kept as a summary.
            try await s.server.store.saveHeartRateDays(
                deviceID: "pi-erase-me",
                [HeartRateDays.day(TestServer.startWall): try HeartRateDays.encode(DailyStatistics.Accumulator.Day())],
                limits: HeartRateLimits(profile: PersonProfile(name: "Zelda Quixote", age: 70)),
                computedMilliseconds: s.wall.now
            )
            // Every table that can hold a person holds a row before the erasure.
            for table in PersonalTables.all where !table.keys.isEmpty {
                #expect(
                    try await Self.rows(s, "SELECT count(*) FROM \(table.name)") > 0,
                    "\(table.name) is empty before the erasure: the scan cannot see it"
                )
            }

            let tokenID = try #require(token.split(separator: ".").first.map(String.init))
            let secretHash = try #require(BearerToken(authorization: "Bearer \(token)")?.secretHash)
            let identifiers = [
                "pi-erase-me", "Zelda Quixote", "Yorick Quixote", "7700 900123", "door code 4711", tokenID, secretHash, "alert-of-zelda",
                "open-of-zelda", "quiet-of-zelda", "zelda-wears", "Zelda Q. Wearer", wearerID, "study of Zelda",
            ]
            // Before: the scan finds them (so it can fail).
            #expect(try await DatabaseScan.occurrences(of: identifiers, in: s.server.store).count >= identifiers.count)

            let erased = try await s.client.send("POST", "/v1/devices/pi-erase-me/erase", token: TestServer.adminToken, body: Data())
            #expect(erased.status == 200, "\(erased.text)")
            #expect(erased.object["wipe_orders"] as? Int == 1)
            let found = try await DatabaseScan.occurrences(of: identifiers, in: s.server.store)
            #expect(found.isEmpty, "still in the database: \(found)")
            #expect(try await Self.rows(s, "SELECT count(*) FROM person_days WHERE person_key <> 'device:pi-keep-1'") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM run_entries") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM contact_notifications") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM contact_attempts") == 0)
            #expect(try await Self.rows(s, "SELECT count(*) FROM carer_links") == 0)
            #expect(try await s.server.store.account(id: carerID) != nil)
            let carerAgain = try await s.signIn("carer-of-z")
            let caredFor = try await s.page("GET", "/v1/cared-for", carerAgain)
            #expect(caredFor.status == 200 && (caredFor.object["people"] as? [Any])?.isEmpty == true, "\(caredFor.text)")
            // Another person's data is untouched.
            #expect(try await s.readings("pi-keep-1").count == 1)
            // Erasing again: no such device.
            #expect(try await s.client.send("POST", "/v1/devices/pi-erase-me/erase", token: TestServer.adminToken, body: Data()).status == 404)
            // The erased device's next batch is answered with the wipe order, and stores nothing.
            let reply = try await s.send(Sample.batch("pi-erase-me", seq: 2, readings: [Sample.heartRate(seq: 3)]), token: token)
            #expect(reply.status == 410)
            #expect(reply.errorCode == "device_erased")
            #expect(SyncOrders.inReply(Array(reply.body))?.wipe != nil)
            #expect(try await DatabaseScan.occurrences(of: identifiers, in: s.server.store).isEmpty)
            // A wrong secret for the same token id gets no order (401).
            let forged = try await s.send(Sample.batch("pi-erase-me", seq: 2, readings: []), token: "\(tokenID).not-the-secret")
            #expect(forged.status == 401)
            // Only an admin erases.
            #expect(try await s.client.send("POST", "/v1/devices/pi-keep-1/erase", token: dispatcher, body: Data()).status == 403)
        }
    }

    @Test(
        "care settings: set on the server, versioned, sent in the batch reply until the device runs them; its version and conflicts show on the server",
        arguments: Backend.enabled
    )
    func careSettingsReachTheDevice(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            // Nothing set: no orders.
            let first = try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: first.body).orders == nil)
            let put = try await s.client.send(
                "PUT",
                "/v1/devices/pi-0001/care-settings",
                token: TestServer.adminToken,
                json: ["min_hr": 50, "max_hr": 140, "rules": ["contact_lost": false], "contacts": [["name": "Ines", "phone": "+1 555 0100"]]]
            )
            #expect(put.status == 200, "\(put.text)")
            #expect(put.object["version"] as? Int == 1)
            let second = try await s.send(Sample.batch("pi-0001", seq: 2, readings: []), token: token)
            let orders = try #require(try WireCodec.decode(BatchAcknowledgement.self, from: second.body).orders?.careSettings)
            #expect(orders.version == 1 && orders.minimumHeartRate == 50 && orders.ruleEnabled(.contactLost) == false)
            // The person's profile (console, contact escalation) has them at once.
            let device = try #require(try await s.server.store.device(id: "pi-0001"))
            #expect(device.person.minimumHeartRate == 50 && device.person.contacts?.first?.name == "Ines")
            // The device reports running version 1, with a local override: no more orders; the
            // server shows the version and the conflict.
            var batch = Sample.batch("pi-0001", seq: 3, readings: [])
            batch.heartbeat?.careVersion = 1
            batch.heartbeat?.careConflicts = ["heart_rate_low.threshold_bpm"]
            let third = try await s.send(batch, token: token)
            #expect(try WireCodec.decode(BatchAcknowledgement.self, from: third.body).orders == nil)
            let view = try await s.client.send("GET", "/v1/devices/pi-0001/care-settings", token: TestServer.adminToken)
            #expect(view.object["device_version"] as? Int == 1)
            #expect(view.object["device_conflicts"] as? [String] == ["heart_rate_low.threshold_bpm"])
            // A change is version 2 and goes out again.
            #expect(
                try await s.client.send("PUT", "/v1/devices/pi-0001/care-settings", token: TestServer.adminToken, json: ["min_hr": 48]).object[
                    "version"
                ] as? Int == 2
            )
            var fourth = Sample.batch("pi-0001", seq: 4, readings: [])
            fourth.heartbeat?.careVersion = 1
            #expect(
                try WireCodec.decode(BatchAcknowledgement.self, from: try await s.send(fourth, token: token).body).orders?.careSettings?.version == 2
            )
            // Bad settings are refused, naming the field, and change nothing.
            let bad = try await s.client.send(
                "PUT",
                "/v1/devices/pi-0001/care-settings",
                token: TestServer.adminToken,
                json: ["min_hr": 150, "max_hr": 140]
            )
            #expect(bad.status == 400 && bad.object["error"].flatMap { ($0 as? [String: Any])?["field"] as? String } == "min_hr")
            let manualOff = try await s.client.send(
                "PUT",
                "/v1/devices/pi-0001/care-settings",
                token: TestServer.adminToken,
                json: ["rules": ["manual": false]]
            )
            #expect(manualOff.status == 400)
            #expect(try await s.server.store.careSettings(deviceID: "pi-0001")?.settings.version == 2)
            // Dispatchers read them only around an alert being handled, and do not change them.
            let dispatcher = try await s.dispatcher()
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/care-settings", token: dispatcher).status == 403)
            #expect(
                try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "care-alert")))
                    .status == 200
            )
            #expect(try await s.client.send("GET", "/v1/devices/pi-0001/care-settings", token: dispatcher).status == 200)
            #expect(try await s.client.send("PUT", "/v1/devices/pi-0001/care-settings", token: dispatcher, json: ["min_hr": 40]).status == 403)
        }
    }

    @Test(
        "the person themself: a wearer sets their own device's care settings and erases its data, and no other device's",
        arguments: Backend.enabled
    )
    func wearerManagesOwnDevice(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, token) = try await s.wearer("ines", device: "pi-ines")
            _ = try await s.wearer("other", device: "pi-other")
            let ines = try await s.signIn("ines")
            #expect(try await s.page("PUT", "/v1/devices/pi-ines/care-settings", ines, json: ["min_hr": 48]).status == 200)
            #expect(try await s.page("GET", "/v1/devices/pi-ines/care-settings", ines).status == 200)
            // Not another person's device, nor one that does not exist.
            #expect(try await s.page("PUT", "/v1/devices/pi-other/care-settings", ines, json: ["min_hr": 30]).status == 403)
            #expect(try await s.page("GET", "/v1/devices/pi-other/care-settings", ines).status == 403)
            #expect(try await s.page("POST", "/v1/devices/pi-other/erase", ines).status == 403)
            #expect(try await s.page("POST", "/v1/devices/pi-nobody/erase", ines).status == 403)
            // Without the CSRF token a session changes nothing.
            #expect(try await s.page("POST", "/v1/devices/pi-ines/erase", ines, csrf: false).status == 403)
            #expect(try await s.page("POST", "/v1/devices/pi-ines/erase", ines).status == 200)
            let reply = try await s.send(Sample.batch("pi-ines", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token)
            #expect(reply.status == 410)
            #expect(try await s.client.send("GET", "/v1/devices/pi-other/care-settings", token: TestServer.adminToken).status == 200)
        }
    }

    @Test("thresholds and contacts set at enrolment are the first care settings and reach the device", arguments: Backend.enabled)
    func enrolmentThresholdsReachTheDevice(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let enrolled = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "pi-0001", "person": ["name": "Ada", "age": 70, "min_hr": 38, "max_hr": 150]]
            )
            let token = try #require(enrolled.object["token"] as? String)
            let reply = try await s.send(Sample.batch("pi-0001", seq: 1, readings: []), token: token)
            let settings = try #require(try WireCodec.decode(BatchAcknowledgement.self, from: reply.body).orders?.careSettings)
            #expect(settings.version == 1 && settings.minimumHeartRate == 38 && settings.maximumHeartRate == 150)
        }
    }
}

/// Reads the test server's database directly, on either backend.
enum DatabaseScan {
    static func count(_ store: any ServerStore, _ sql: String) async throws -> Int {
        if let sqlite = store as? SQLiteServerStore {
            return try await sqlite.pool.read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
        }
        #if PostgreSQL
        if let postgres = store as? PostgresServerStore {
            let rows = try await postgres.client.query(
                PostgresQuery(unsafeSQL: sql.replacingOccurrences(of: "instr(", with: "strpos(")),
                logger: postgres.logger
            )
            for try await value in rows.decode(Int64.self) { return Int(value) }
            return 0
        }
        #endif
        Issue.record("unknown store")
        return 0
    }

    /// The database's tables (PostgreSQL partitions as their parent), without the migrations' own.
    static func tables(in store: any ServerStore) async throws -> [String] {
        var names: [String] = []
        if let sqlite = store as? SQLiteServerStore {
            names = try await sqlite.pool.read { db in
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            }
        }
        #if PostgreSQL
        if let postgres = store as? PostgresServerStore {
            let rows = try await postgres.client.query(
                """
                SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
                """,
                logger: postgres.logger
            )
            for try await name in rows.decode(String.self) { names.append(name) }
        }
        #endif
        return names.filter { $0 != "grdb_migrations" && $0 != "schema_migrations" }
    }

    /// `table.column: identifier` for every text value of every column of every table that
    /// contains one of `identifiers`.
    static func occurrences(of identifiers: [String], in store: any ServerStore) async throws -> [String] {
        var columns: [(String, String)] = []
        if let sqlite = store as? SQLiteServerStore {
            columns = try await sqlite.pool.read { db in
                var found: [(String, String)] = []
                for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'") {
                    for column in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]) {
                        found.append((table, column))
                    }
                }
                return found
            }
        }
        #if PostgreSQL
        if let postgres = store as? PostgresServerStore {
            let rows = try await postgres.client.query(
                "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = 'public'",
                logger: postgres.logger
            )
            for try await (table, column) in rows.decode((String, String).self) { columns.append((table, column)) }
        }
        #endif
        #expect(columns.count > 40, "the scan sees \(columns.count) columns")
        var hits: [String] = []
        for (table, column) in columns {
            for identifier in identifiers {
                let quoted = identifier.replacingOccurrences(of: "'", with: "''")
                let sql: String
                if store is SQLiteServerStore {
                    sql = "SELECT count(*) FROM \"\(table)\" WHERE instr(CAST(\"\(column)\" AS TEXT), '\(quoted)') > 0"
                } else {
                    sql = "SELECT count(*) FROM \"\(table)\" WHERE strpos(\"\(column)\"::text, '\(quoted)') > 0"
                }
                if try await count(store, sql) > 0 { hits.append("\(table).\(column): \(identifier)") }
            }
        }
        return hits
    }
}
