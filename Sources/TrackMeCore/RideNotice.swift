/// A ride as the taxi terminal hears of it (003 G13-G16): in every batch reply while the ride is
/// offered to this taxi, accepted by it or under way, so that a lost reply costs nothing and
/// the terminal learns of an offer with its next batch (WIRE.md, "Ride offers").
public struct RideNotice: Hashable, Sendable, Codable {
    public enum Stage: String, Hashable, Sendable, Codable, CaseIterable {
        /// Waiting for the driver's answer.
        case offered
        /// The driver accepted and drives to the pickup.
        case accepted
        /// The client is aboard.
        case onRide = "on_ride"
    }

    /// Names this offer (one ride is offered to one taxi after another); every answer quotes it.
    public var offerID: String
    public var rideID: String
    public var stage: Stage
    public var zone: String
    /// Where the client waits, as the booking gave it.
    public var pickup: String?
    /// The reserved pickup time (server wall ms); nil for a ride now.
    public var reservedMilliseconds: Int64?
    /// Time left to answer when the reply was made; the terminal counts it down on its own
    /// monotonic clock (its wall clock may be wrong). Nil once accepted.
    public var answerWithinMilliseconds: Int64?
    /// When the server made the offer (server wall ms).
    public var offeredMilliseconds: Int64

    public init(
        offerID: String,
        rideID: String,
        stage: Stage,
        zone: String,
        pickup: String? = nil,
        reservedMilliseconds: Int64? = nil,
        answerWithinMilliseconds: Int64? = nil,
        offeredMilliseconds: Int64
    ) {
        self.offerID = offerID
        self.rideID = rideID
        self.stage = stage
        self.zone = zone
        self.pickup = pickup
        self.reservedMilliseconds = reservedMilliseconds
        self.answerWithinMilliseconds = answerWithinMilliseconds
        self.offeredMilliseconds = offeredMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case stage, zone, pickup
        case offerID = "offer_id"
        case rideID = "ride_id"
        case reservedMilliseconds = "reserved_ms"
        case answerWithinMilliseconds = "answer_within_ms"
        case offeredMilliseconds = "offered_ms"
    }
}

/// What a driver says about an offer or the ride it became, `POST /v1/fleet/ride-answers`.
public struct RideAnswer: Hashable, Sendable, Codable {
    public enum Event: String, Hashable, Sendable, Codable, CaseIterable {
        case accept
        case refuse
        /// The client is aboard.
        case pickup
        /// The client was taken where they asked.
        case complete
        /// The driver is at the pickup and the client is not.
        case missingClient = "missing_client"
    }

    public var offerID: String
    public var event: Event

    public init(offerID: String, event: Event) {
        self.offerID = offerID
        self.event = event
    }

    enum CodingKeys: String, CodingKey {
        case event
        case offerID = "offer_id"
    }
}
