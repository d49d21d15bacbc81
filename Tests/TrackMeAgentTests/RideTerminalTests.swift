import EdgeStore
import EdgeSync
import Foundation
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeServer

@testable import TrackMeAgent

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The taxi terminal's side of a ride offer: what it shows, for how long, and what the driver's
/// answers do, on its own and against the real server on loopback.
@Suite("taxi terminal: ride offers")
struct RideTerminalTests {
    static func notice(_ offer: String = "r1.1", stage: RideNotice.Stage = .offered, within: Int64? = 12_000) -> RideNotice {
        RideNotice(
            offerID: offer,
            rideID: "r1",
            stage: stage,
            zone: "Centre",
            pickup: "Via Po 1",
            answerWithinMilliseconds: within,
            offeredMilliseconds: 1
        )
    }

    @Test("an offer is shown once, counted down on the terminal's clock; a repeated notice never restarts the window")
    func countdown() {
        var terminal = RideTerminal()
        let step1 = terminal.receive(Self.notice(), now: .seconds(100))
        #expect(step1)
        let step2 = terminal.receive(Self.notice(within: 11_000), now: .seconds(101))
        #expect(!step2, "shown already")
        // A later reply saying more time is left does not extend the window.
        let step3 = terminal.receive(Self.notice(within: 12_000), now: .seconds(105))
        #expect(!step3)
        #expect(terminal.view(now: .seconds(106))?.answerWithinMilliseconds == 6_000)
        let step4 = terminal.tick(now: .milliseconds(111_999))
        #expect(!step4)
        let step5 = terminal.tick(now: .seconds(112))
        #expect(step5)
        #expect(terminal.current == nil && !terminal.offerWaiting)
        // The lapsed offer in a reply made before the server saw the lapse is not shown again.
        let step6 = terminal.receive(Self.notice(within: 500), now: .seconds(112))
        #expect(!step6)
        #expect(terminal.current == nil)
        let step7 = terminal.receive(Self.notice("r2.1"), now: .seconds(113))
        #expect(step7)
    }

    @Test("answers move the terminal on; a stale reply does not undo them")
    func answers() {
        var terminal = RideTerminal()
        _ = terminal.receive(Self.notice(), now: .zero)
        terminal.answered(.accept)
        #expect(terminal.current?.stage == .accepted && terminal.current?.answerWithinMilliseconds == nil)
        let step8 = terminal.receive(Self.notice(), now: .seconds(1))
        #expect(!step8, "a reply made before the accept")
        #expect(terminal.current?.stage == .accepted)
        terminal.answered(.pickup)
        #expect(terminal.current?.stage == .onRide)
        terminal.answered(.complete)
        #expect(terminal.current == nil)
        let step9 = terminal.receive(Self.notice(stage: .onRide, within: nil), now: .seconds(2))
        #expect(!step9, "a reply made before the end")
        #expect(terminal.current == nil)
    }

    @Test("the feedback outputs show a waiting offer; an alert wins over it, it over a low battery")
    func feedback() {
        var machine = FeedbackMachine()
        let step10 = machine.receive(.batteryLow(true), now: .zero) == .batteryLow
        #expect(step10)
        let step11 = machine.receive(.rideOffer(true), now: .zero) == .rideOffer
        #expect(step11)
        let record = FeedbackTests.record(.pending)
        let step12 = machine.receive(.engine(.startCountdown(record, deadline: record.firstCritical)), now: .zero) == .countdown
        #expect(step12)
        let step13 = machine.receive(.engine(.cancelled(record)), now: .zero) == .rideOffer
        #expect(step13)
        let step14 = machine.receive(.rideOffer(false), now: .zero) == .batteryLow
        #expect(step14)
        #expect(LEDPattern.defaults[.rideOffer] != nil)
    }

    @Test(
        "against the real server: the offer in a batch reply is shown, accepted over HTTP, the ride run to its end; a stray answer is refused with the server's reason"
    )
    func againstServer() async throws {
        let directory = try TemporaryDirectory()
        // The server keeps real time here: ride offers lapse on its clock, as on a real fleet.
        try await InProcessServer.with(
            configure: {
                $0.adminToken = "ride-admin"
                $0.clock = ContinuousClock()
            },
            { running in
                let server = running.server
                let port = running.port
                func call(_ method: String, _ path: String, token: String = "ride-admin", json: Data? = nil) async throws -> (Int, Data) {
                    var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)\(path)")))
                    request.httpMethod = method
                    request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                    request.httpBody = json
                    let (data, response) = try await URLSession.shared.data(for: request)
                    return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
                }
                let zone = try await call(
                    "POST",
                    "/v1/fleet/zones",
                    json: Data(#"{"name":"Centre","polygon":[[45,7],[45,7.01],[45.01,7.01],[45.01,7]]}"#.utf8)
                )
                #expect(zone.0 == 201)
                let zoneID = try #require((try JSONSerialization.jsonObject(with: zone.1) as? [String: Any])?["id"] as? String)
                let credentials = try await server.enrolDevice(deviceID: "cab-1", person: PersonProfile(name: "Driver One", age: 40))
                try credentials.token.write(toFile: directory.file("token"), atomically: true, encoding: .utf8)
                let parts = try AgentAssembly.make(
                    configuration: try ConfigurationLoader.parse(
                        yaml: """
                            person: {name: Driver One, age: 40}
                            server: {url: "http://127.0.0.1:\(port)", device_id: cab-1, token_file: token}
                            profile: taxi
                            store: {path: data/agent.sqlite}
                            status: {socket: agent.sock}
                            """,
                        baseDirectory: directory.path
                    ),
                    logger: quietLogger
                )
                let control = parts.control
                #expect(try await control.taxi(.available).taxi == .available)
                // The taxi's report, as the readings lane sends it: its heartbeat and a fix in the zone.
                var sequence: Int64 = 0
                func report() async throws -> RideNotice? {
                    sequence += 1
                    let reading = WireReading(
                        sequence: sequence,
                        timestamp: ReadingTimestamp(
                            monotonicNanoseconds: UInt64(sequence) * 1_000_000_000,
                            bootID: "boot",
                            wallClockMilliseconds: nil,
                            wallClockTrusted: false
                        ),
                        payload: .position(PositionFix(mode: .threeDimensional, latitude: 45.005, longitude: 7.005))
                    )
                    let batch = SyncBatch(deviceID: "cab-1", batchSequence: sequence, heartbeat: parts.state.heartbeat(), readings: [reading])
                    let (status, body) = try await call("POST", "/v1/batches", token: credentials.token, json: try WireCodec.encode(batch))
                    try #require(status == 200, "\(String(decoding: body, as: UTF8.self))")
                    guard let ride = SyncOrders.inReply(Array(body))?.ride else { return nil }
                    await control.rideNotice(ride)
                    return ride
                }
                #expect(try await report() == nil)
                #expect(try await control.ride(.offer) == nil)
                let booked = try await call("POST", "/v1/fleet/rides", json: Data(#"{"zone_id":"\#(zoneID)","pickup":"Via Po 1"}"#.utf8))
                #expect(booked.0 == 201)
                let offer = try #require(try await report())
                #expect(offer.stage == .offered && offer.pickup == "Via Po 1")
                #expect(await control.status().feedback == .rideOffer)
                let shown = try #require(try await control.ride(.offer))
                #expect(shown.offerID == offer.offerID && (1...12_000).contains(shown.answerWithinMilliseconds ?? 0))

                #expect(try await control.ride(.accept)?.stage == .accepted)
                #expect(await control.status().feedback == .idle)
                #expect(parts.state.heartbeat().taxiState == .onRide)
                // A stray refusal of the accepted offer: the server's reason, and the ride stays.
                let stray = await #expect(throws: AgentControlError.self) { try await control.ride(.refuse) }
                #expect(stray?.code == .refused && stray?.message.hasPrefix("offer_closed") == true, "\(String(describing: stray))")
                #expect(try await control.ride(.offer)?.stage == .accepted)
                #expect(try await report()?.stage == .accepted)
                #expect(try await control.ride(.pickup)?.stage == .onRide)
                #expect(try await control.ride(.complete) == nil)
                #expect(parts.state.heartbeat().taxiState == .available)
                let rides = try await call("GET", "/v1/fleet/rides")
                let list = try #require((try JSONSerialization.jsonObject(with: rides.1) as? [String: Any])?["rides"] as? [[String: Any]])
                #expect(list.first?["state"] as? String == "completed" && list.first?["device_id"] as? String == "cab-1")
                // Nothing left to answer: refused here, before the network.
                await #expect(throws: AgentControlError.self) { try await control.ride(.accept) }
                parts.control.pipeline.store.close()
            }
        )
    }
}
