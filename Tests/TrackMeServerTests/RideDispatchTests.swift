import Testing
import TrackMeCore

@testable import TrackMeServer

/// The ride rules on their own, on given times: offers, lapses, answers, reservations.
@Suite("RideDispatch")
struct RideDispatchTests {
    static let t0: Int64 = 1_795_000_000_000
    let policy = RideDispatch(settings: RideDispatch.Settings(answerWindowMilliseconds: 12_000))

    static func taxi(_ id: String, queued: Int64) -> FleetTaxi {
        FleetTaxi(deviceID: id, name: id, state: "available", zoneID: "z1", queuedMilliseconds: queued, lastReportMilliseconds: t0)
    }

    let queue = [taxi("a", queued: t0 - 3000), taxi("b", queued: t0 - 2000), taxi("c", queued: t0 - 1000)]

    func booked(reserved: Int64? = nil) -> Ride {
        Ride(id: "r1", zoneID: "z1", pickup: "Via Roma 1", reservedMilliseconds: reserved, createdMilliseconds: Self.t0)
    }

    @Test("a ride goes to the first taxi of the queue with no other offer or ride")
    func firstFree() {
        var ride = booked()
        #expect(policy.advance(&ride, queue: queue, busy: ["a"], now: Self.t0).isEmpty)
        #expect(ride.state == .offered && ride.offers.map(\.deviceID) == ["b"])
        #expect(ride.offers[0].offerID == "r1.1" && ride.offers[0].expiresMilliseconds == Self.t0 + 12_000)
        #expect(ride.version == 1)
    }

    @Test("silence for the window is a refusal: the taxi goes to the back and the next one is asked")
    func silence() {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        // Within the window nothing moves.
        let before = ride
        #expect(policy.advance(&ride, queue: queue, busy: [], now: Self.t0 + 11_999).isEmpty)
        #expect(ride == before)
        let actions = policy.advance(&ride, queue: queue, busy: [], now: Self.t0 + 12_000)
        #expect(actions == [.requeue(deviceID: "a")])
        #expect(ride.offers.map(\.outcome) == [.silent, nil])
        #expect(ride.offers.map(\.deviceID) == ["a", "b"])
        #expect(ride.state == .offered)
    }

    @Test("a refused ride goes to the next taxi and never back to the one that refused")
    func refusal() throws {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        #expect(try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .refuse, now: Self.t0 + 2000) == [.requeue(deviceID: "a")])
        #expect(ride.state == .waiting)
        // "a" is now last in the queue; it is still not asked again.
        let requeued = [queue[1], queue[2], Self.taxi("a", queued: Self.t0 + 2000)]
        _ = policy.advance(&ride, queue: requeued, busy: [], now: Self.t0 + 2000)
        #expect(ride.offers.last?.deviceID == "b")
        _ = try policy.answer(&ride, offerID: "r1.2", deviceID: "b", event: .refuse, now: Self.t0 + 3000)
        _ = policy.advance(&ride, queue: [queue[2]], busy: [], now: Self.t0 + 3000)
        _ = try policy.answer(&ride, offerID: "r1.3", deviceID: "c", event: .refuse, now: Self.t0 + 4000)
        _ = policy.advance(&ride, queue: requeued, busy: [], now: Self.t0 + 4000)
        #expect(ride.state == .waiting, "every taxi refused: the ride waits for another")
    }

    @Test("accepting puts the taxi on the ride; then pickup and complete, or missing client")
    func acceptance() throws {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        #expect(try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .accept, now: Self.t0 + 5000) == [.onRide(deviceID: "a")])
        #expect(ride.state == .accepted && ride.deviceID == "a" && ride.acceptedMilliseconds == Self.t0 + 5000)
        // An accepted ride never lapses.
        #expect(policy.advance(&ride, queue: queue, busy: [], now: Self.t0 + 60_000).isEmpty)
        var missing = ride
        _ = try policy.answer(&missing, offerID: "r1.1", deviceID: "a", event: .missingClient, now: Self.t0 + 600_000)
        #expect(missing.state == .missingClient && missing.endedMilliseconds == Self.t0 + 600_000)
        _ = try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .pickup, now: Self.t0 + 300_000)
        #expect(ride.state == .onRide)
        _ = try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .complete, now: Self.t0 + 900_000)
        #expect(ride.state == .completed && ride.endedMilliseconds == Self.t0 + 900_000)
    }

    @Test(
        "an answer that does not fit is refused with its reason and changes nothing",
        arguments: [
            ("r1.9", "a", RideAnswer.Event.accept, Int64(1000), RideDispatch.Refusal.Code.noOffer),
            ("r1.1", "b", .accept, 1000, .notYourOffer),
            ("r1.1", "a", .accept, 12_000, .offerExpired),
            ("r1.1", "a", .refuse, 20_000, .offerExpired),
            ("r1.1", "a", .pickup, 1000, .rideState),
            ("r1.1", "a", .complete, 1000, .rideState),
            ("r1.1", "a", .missingClient, 1000, .rideState),
        ]
    )
    func refusedAnswers(offerID: String, deviceID: String, event: RideAnswer.Event, after: Int64, code: RideDispatch.Refusal.Code) {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        let before = ride
        #expect(throws: RideDispatch.Refusal.self) {
            _ = try policy.answer(&ride, offerID: offerID, deviceID: deviceID, event: event, now: Self.t0 + after)
        }
        do {
            _ = try policy.answer(&ride, offerID: offerID, deviceID: deviceID, event: event, now: Self.t0 + after)
        } catch {
            #expect(error.code == code)
        }
        #expect(ride == before)
    }

    @Test("an offer answered once cannot be answered again; a superseded offer is closed")
    func closedOffers() throws {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        _ = try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .refuse, now: Self.t0 + 1000)
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0 + 1000)
        let before = ride
        for event in [RideAnswer.Event.accept, .refuse] {
            #expect(throws: RideDispatch.Refusal(code: .offerClosed, message: "offer r1.1 was answered already (refused)")) {
                _ = try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: event, now: Self.t0 + 2000)
            }
        }
        _ = try policy.answer(&ride, offerID: "r1.2", deviceID: "b", event: .accept, now: Self.t0 + 3000)
        #expect(throws: RideDispatch.Refusal.self) {
            _ = try policy.answer(&ride, offerID: "r1.2", deviceID: "b", event: .accept, now: Self.t0 + 4000)
        }
        #expect(before.state == .offered && ride.state == .accepted)
    }

    @Test("a reserved ride is offered, and so announced, 10 minutes before its time")
    func reservation() {
        let reserved = Self.t0 + 3_600_000
        var ride = booked(reserved: reserved)
        #expect(policy.advance(&ride, queue: queue, busy: [], now: reserved - 600_001).isEmpty)
        #expect(ride.state == .waiting && ride.offers.isEmpty)
        _ = policy.advance(&ride, queue: queue, busy: [], now: reserved - 600_000)
        #expect(ride.state == .offered)
        let notice = policy.notice(ride, deviceID: "a", zoneName: "Centre", now: reserved - 599_000)
        #expect(notice?.reservedMilliseconds == reserved && notice?.answerWithinMilliseconds == 11_000 && notice?.stage == .offered)
    }

    @Test("a taxi hears of its live offer and of the ride it accepted, of nothing else")
    func notices() throws {
        var ride = booked()
        _ = policy.advance(&ride, queue: queue, busy: [], now: Self.t0)
        #expect(policy.notice(ride, deviceID: "a", zoneName: "Centre", now: Self.t0)?.offerID == "r1.1")
        #expect(policy.notice(ride, deviceID: "b", zoneName: "Centre", now: Self.t0) == nil)
        #expect(policy.notice(ride, deviceID: "a", zoneName: "Centre", now: Self.t0 + 12_000) == nil, "a lapsed offer is not shown")
        _ = try policy.answer(&ride, offerID: "r1.1", deviceID: "a", event: .accept, now: Self.t0 + 1000)
        let accepted = policy.notice(ride, deviceID: "a", zoneName: "Centre", now: Self.t0 + 60_000)
        #expect(accepted?.stage == .accepted && accepted?.answerWithinMilliseconds == nil)
        #expect(RideDispatch.busy([ride]) == ["a"])
    }
}
