import TrackMeCore

/// A ride booked for a zone (003 G13-G16): offered to one taxi after another until one accepts,
/// then driven, and ended as completed or "missing client". Stored whole (`FleetStore`).
struct Ride: Codable, Hashable, Sendable {
    enum State: String, Codable, Hashable, Sendable, CaseIterable {
        /// Not offered yet: a reservation not yet due, or no taxi free in the zone.
        case waiting
        case offered
        case accepted
        case onRide = "on_ride"
        case completed
        case missingClient = "missing_client"

        var isOpen: Bool {
            switch self {
            case .waiting, .offered, .accepted, .onRide: true
            case .completed, .missingClient: false
            }
        }
    }

    var id: String
    var zoneID: String
    var pickup: String?
    /// The reserved pickup time; nil for a ride now.
    var reservedMilliseconds: Int64?
    var createdMilliseconds: Int64
    var state: State = .waiting
    /// Every offer made, oldest first; the last is the live one while `offered`.
    var offers: [RideOffer] = []
    /// The taxi that accepted.
    var deviceID: String?
    var acceptedMilliseconds: Int64?
    var pickedUpMilliseconds: Int64?
    var endedMilliseconds: Int64?
    /// Bumped by every change: a save names the version it replaces, so two instances cannot
    /// both move one ride.
    var version: Int64 = 0

    /// The offer of `offerID`, when it is one of this ride's.
    func offer(_ offerID: String) -> RideOffer? { offers.first { $0.offerID == offerID } }

    /// The ride's offers are `<ride id>.<n>`: the ride an offer belongs to, from its id.
    static func rideID(ofOffer offerID: String) -> String? {
        guard let dot = offerID.lastIndex(of: "."), dot != offerID.startIndex else { return nil }
        return String(offerID[..<dot])
    }

    enum CodingKeys: String, CodingKey {
        case id, pickup, state, offers, version
        case zoneID = "zone_id"
        case reservedMilliseconds = "reserved_ms"
        case createdMilliseconds = "created_ms"
        case deviceID = "device_id"
        case acceptedMilliseconds = "accepted_ms"
        case pickedUpMilliseconds = "picked_up_ms"
        case endedMilliseconds = "ended_ms"
    }
}

/// One offer of a ride to one taxi.
struct RideOffer: Codable, Hashable, Sendable {
    enum Outcome: String, Codable, Hashable, Sendable {
        case accepted, refused
        /// No answer within the window: refused.
        case silent
    }

    var offerID: String
    var deviceID: String
    var offeredMilliseconds: Int64
    var expiresMilliseconds: Int64
    var outcome: Outcome?
    var answeredMilliseconds: Int64?

    enum CodingKeys: String, CodingKey {
        case outcome
        case offerID = "offer_id"
        case deviceID = "device_id"
        case offeredMilliseconds = "offered_ms"
        case expiresMilliseconds = "expires_ms"
        case answeredMilliseconds = "answered_ms"
    }
}

/// The ride rules, pure (beside `DispatchPolicy`): which taxi gets an offer, when an offer
/// lapses, what a driver's answer does. `RideDesk` performs them on the store; `now` is the
/// server's wall clock, given by the caller.
///
/// A taxi that refuses, or lets the window pass, goes to the back of its zone's queue and is not
/// offered the same ride again. 003 asks that a refused request go to the next taxi in the queue
/// and the refusing taxi to the last place: a driver who keeps refusing must not keep the head
/// of the queue from the drivers behind them.
struct RideDispatch: Sendable {
    struct Settings: Hashable, Sendable {
        /// How long a driver has to answer; silence for this long is a refusal (003: 10-15 s).
        var answerWindowMilliseconds: Int64 = 12_000
        /// A reserved ride is offered, and so announced to its taxi, this long before its time.
        var announceAheadMilliseconds: Int64 = 10 * 60_000

        static let answerWindowRange: ClosedRange<Int64> = 10_000...15_000
    }

    /// What the store is to do beside saving the ride.
    enum Action: Hashable, Sendable {
        /// The taxi refused or was silent: to the back of its zone's queue.
        case requeue(deviceID: String)
        /// The taxi accepted: on a ride, out of every queue at once.
        case onRide(deviceID: String)
    }

    /// Why a driver's answer changes nothing.
    struct Refusal: Error, Hashable, Sendable {
        enum Code: String, Hashable, Sendable {
            /// No such offer (404).
            case noOffer = "no_offer"
            /// The offer was made to another taxi (403).
            case notYourOffer = "not_your_offer"
            /// The window passed (409).
            case offerExpired = "offer_expired"
            /// The offer was answered already, or the ride moved on (409).
            case offerClosed = "offer_closed"
            /// The event does not fit the ride's state (409): pickup before accepting, complete
            /// before pickup, missing client once aboard.
            case rideState = "ride_state"
        }
        var code: Code
        var message: String
    }

    let settings: Settings

    /// When a ride is to be offered: at once, or `announceAhead` before its reserved time.
    func due(_ ride: Ride) -> Int64 {
        guard let reserved = ride.reservedMilliseconds else { return ride.createdMilliseconds }
        return reserved - settings.announceAheadMilliseconds
    }

    /// Moves an open ride on at `now`: a lapsed offer counts as a refusal; a ride due and not
    /// offered goes to the first taxi of `queue` (the zone's queue, arrival order) that has no
    /// other ride or offer (`busy`) and has not turned this one down.
    func advance(_ ride: inout Ride, queue: [FleetTaxi], busy: Set<String>, now: Int64) -> [Action] {
        var actions: [Action] = []
        switch ride.state {
        case .offered:
            guard let last = ride.offers.indices.last, ride.offers[last].outcome == nil else { break }
            guard now >= ride.offers[last].expiresMilliseconds else { return [] }
            ride.offers[last].outcome = .silent
            ride.offers[last].answeredMilliseconds = now
            ride.state = .waiting
            actions.append(.requeue(deviceID: ride.offers[last].deviceID))
        case .waiting:
            break
        case .accepted, .onRide, .completed, .missingClient:
            return []
        }
        guard ride.state == .waiting, now >= due(ride) else {
            if !actions.isEmpty { ride.version += 1 }
            return actions
        }
        let turnedDown = Set(ride.offers.map(\.deviceID))
        // The taxi that just let the offer lapse is at the back now; it is still not asked again.
        if let taxi = queue.first(where: { !busy.contains($0.deviceID) && !turnedDown.contains($0.deviceID) }) {
            ride.offers.append(
                RideOffer(
                    offerID: "\(ride.id).\(ride.offers.count + 1)",
                    deviceID: taxi.deviceID,
                    offeredMilliseconds: now,
                    expiresMilliseconds: now + settings.answerWindowMilliseconds
                )
            )
            ride.state = .offered
        }
        if !actions.isEmpty || ride.state == .offered { ride.version += 1 }
        return actions
    }

    /// A driver's answer about `offerID`. Throws, changing nothing, when the offer is not this
    /// taxi's, is closed or lapsed, or the event does not fit the ride's state.
    func answer(_ ride: inout Ride, offerID: String, deviceID: String, event: RideAnswer.Event, now: Int64) throws(Refusal) -> [Action] {
        guard let index = ride.offers.firstIndex(where: { $0.offerID == offerID }) else {
            throw Refusal(code: .noOffer, message: "no offer \(offerID)")
        }
        let offer = ride.offers[index]
        guard offer.deviceID == deviceID else {
            throw Refusal(code: .notYourOffer, message: "offer \(offerID) was made to another taxi")
        }
        var next = ride
        var actions: [Action] = []
        switch event {
        case .accept, .refuse:
            guard offer.outcome == nil, ride.state == .offered, index == ride.offers.count - 1 else {
                throw Refusal(code: .offerClosed, message: "offer \(offerID) was answered already (\(offer.outcome?.rawValue ?? "closed"))")
            }
            guard now < offer.expiresMilliseconds else {
                throw Refusal(
                    code: .offerExpired,
                    message: "offer \(offerID) lapsed \(now - offer.expiresMilliseconds) ms ago: silence is a refusal"
                )
            }
            next.offers[index].answeredMilliseconds = now
            if event == .accept {
                next.offers[index].outcome = .accepted
                next.state = .accepted
                next.deviceID = deviceID
                next.acceptedMilliseconds = now
                actions.append(.onRide(deviceID: deviceID))
            } else {
                next.offers[index].outcome = .refused
                next.state = .waiting
                actions.append(.requeue(deviceID: deviceID))
            }
        case .pickup, .complete, .missingClient:
            guard offer.outcome == .accepted, ride.deviceID == deviceID else {
                throw Refusal(code: .rideState, message: "offer \(offerID) was not accepted: there is no ride to \(event.rawValue)")
            }
            switch (event, ride.state) {
            case (.pickup, .accepted):
                next.state = .onRide
                next.pickedUpMilliseconds = now
            case (.complete, .onRide):
                next.state = .completed
                next.endedMilliseconds = now
            case (.missingClient, .accepted):
                next.state = .missingClient
                next.endedMilliseconds = now
            default:
                throw Refusal(code: .rideState, message: "the ride is \(ride.state.rawValue): \(event.rawValue) does not fit")
            }
        }
        next.version += 1
        ride = next
        return actions
    }

    /// What the taxi `deviceID` is told of `ride` in its batch replies, or nil.
    func notice(_ ride: Ride, deviceID: String, zoneName: String, now: Int64) -> RideNotice? {
        let stage: RideNotice.Stage
        let offer: RideOffer
        switch ride.state {
        case .offered:
            guard let last = ride.offers.last, last.deviceID == deviceID, last.outcome == nil, now < last.expiresMilliseconds else { return nil }
            stage = .offered
            offer = last
        case .accepted, .onRide:
            guard ride.deviceID == deviceID, let accepted = ride.offers.last(where: { $0.outcome == .accepted }) else { return nil }
            stage = ride.state == .accepted ? .accepted : .onRide
            offer = accepted
        case .waiting, .completed, .missingClient:
            return nil
        }
        return RideNotice(
            offerID: offer.offerID,
            rideID: ride.id,
            stage: stage,
            zone: zoneName,
            pickup: ride.pickup,
            reservedMilliseconds: ride.reservedMilliseconds,
            answerWithinMilliseconds: stage == .offered ? offer.expiresMilliseconds - now : nil,
            offeredMilliseconds: offer.offeredMilliseconds
        )
    }

    /// Taxis with a live offer or a ride accepted or under way: offered nothing else.
    static func busy(_ rides: [Ride]) -> Set<String> {
        var busy = Set<String>()
        for ride in rides {
            switch ride.state {
            case .offered:
                if let last = ride.offers.last, last.outcome == nil { busy.insert(last.deviceID) }
            case .accepted, .onRide:
                if let deviceID = ride.deviceID { busy.insert(deviceID) }
            case .waiting, .completed, .missingClient:
                break
            }
        }
        return busy
    }
}
