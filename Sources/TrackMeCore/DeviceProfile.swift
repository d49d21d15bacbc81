/// What kind of device the agent is: a wearer's monitor (the default), a runner's
/// tracker in a race (Track4Run), or a taxi's fleet terminal. The profile decides the position
/// sampling, which SOS rules run, and what `status` and the heartbeat show. Pure values.
public enum DeviceProfile: String, Hashable, Sendable, Codable, CaseIterable {
    case wearer
    case runner
    case taxi

    /// The sampling for this profile.
    ///
    /// - wearer: today's policy (1 Hz while moving or in an alert, every 30 s at rest).
    /// - runner: 1 Hz for the whole run, moving or not (spectators follow every second, and a
    ///   runner standing at a drinks station is still in the race).
    /// - taxi: every 30 s whether moving or not (003: a fleet terminal reports every 30 s), 1 Hz
    ///   while an alert is open, and at once on an availability change (`forceNext`).
    public var sampling: PositionSamplingPolicy.Configuration {
        var configuration = PositionSamplingPolicy.Configuration()
        switch self {
        case .wearer:
            break
        case .runner:
            configuration.movingInterval = .seconds(1)
            configuration.stationaryInterval = .seconds(1)
        case .taxi:
            configuration.movingInterval = .seconds(30)
            configuration.stationaryInterval = .seconds(30)
        }
        return configuration
    }

    /// How long a partly filled batch waits (`SyncConfiguration.sendInterval`): a wearer's 5 s
    /// (a batch every few seconds, not every second); a runner's and a taxi's fix goes at once
    /// (1 s): spectators follow a runner live, and a taxi's 30 s report must not wait 5 s more.
    public var sendInterval: Duration {
        switch self {
        case .wearer: .seconds(5)
        case .runner, .taxi: .seconds(1)
        }
    }

    /// How often a batch goes even when no reading waits (`SyncConfiguration.heartbeatInterval`):
    /// 30 s, a taxi's report period too. A taxi hears of a ride offer only in a batch reply
    /// (WIRE.md, "Ride offers"); the server asks a taxi it may offer a ride to (queued in a zone,
    /// or with a ride open) to batch every second (`SyncOrders.pollMilliseconds`), which brings
    /// the offer within 3 s (003), and leaves every other taxi at its 30 s reports: no second
    /// connection or long poll the agent would have to hold open, and no batch a second from a
    /// taxi on a ride, off duty or outside every zone.
    public var heartbeatInterval: Duration {
        switch self {
        case .wearer, .runner, .taxi: .seconds(30)
        }
    }

    /// The SOS settings and limits for this profile, from the wearer's ones.
    ///
    /// - runner: the heart-rate rules stay on with exercise-aware limits: the high limit is the
    ///   age-predicted maximum plus `runnerHighMargin` (a runner at their maximum is racing, not
    ///   ill) and must hold 60 s; the low limit is unchanged (a runner's heart does not fall to
    ///   40 bpm while running). An explicit profile limit is kept as it is.
    /// - taxi: manual SOS only, for the driver; the strap rules are off (a fleet terminal has no
    ///   strap).
    public func applied(to settings: SOSSettings, profile: PersonProfile) -> (settings: SOSSettings, profile: PersonProfile) {
        var settings = settings
        var profile = profile
        switch self {
        case .wearer:
            break
        case .runner:
            if profile.maximumHeartRate == nil {
                profile.maximumHeartRate = HeartRateLimits(profile: profile).maximum + Self.runnerHighMargin
            }
            settings.heartRateHigh.persistence = max(settings.heartRateHigh.persistence, .seconds(60))
        case .taxi:
            settings.disableStrapRules()
            settings.manual.enabled = true
        }
        return (settings, profile)
    }

    /// bpm above the age-predicted maximum before a runner's high-rate rule counts.
    public static let runnerHighMargin = 15
}

/// A taxi's availability (003 AS3-AS5), sent with every report.
public enum TaxiAvailability: String, Hashable, Sendable, Codable, CaseIterable {
    case available
    case unavailable
    case onRide = "on_ride"
}

/// The driver's availability, pure: commands (`trackme-agent taxi ...`, the button) in, the new
/// state and whether it changed out. Accepting a ride makes the taxi unavailable at once, from
/// any state; ending a ride makes it available again.
public struct TaxiStateMachine: Hashable, Sendable {
    public enum Event: String, Hashable, Sendable, Codable, CaseIterable {
        case available
        case unavailable
        case rideStart = "ride-start"
        case rideEnd = "ride-end"
        /// The button's short press: available <-> unavailable (nothing during a ride).
        case toggle
    }

    /// Why an event was refused.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public private(set) var state: TaxiAvailability

    public init(state: TaxiAvailability = .unavailable) {
        self.state = state
    }

    /// Applies `event`; returns whether the state changed (a change is reported at once).
    public mutating func receive(_ event: Event) throws(Refusal) -> Bool {
        let next: TaxiAvailability
        switch (event, state) {
        case (.rideStart, _):
            next = .onRide
        case (.rideEnd, .onRide):
            next = .available
        case (.rideEnd, .available), (.rideEnd, .unavailable):
            throw Refusal(message: "no ride to end: the taxi is \(state.rawValue)")
        case (.available, .onRide), (.unavailable, .onRide):
            throw Refusal(message: "a ride is on: end it first (taxi ride-end)")
        case (.available, _):
            next = .available
        case (.unavailable, _):
            next = .unavailable
        case (.toggle, .available):
            next = .unavailable
        case (.toggle, .unavailable):
            next = .available
        case (.toggle, .onRide):
            return false
        }
        defer { state = next }
        return next != state
    }
}

/// A runner's part in a run, sent with every report: the run's code, whether they agreed to be
/// shown to spectators, whether their organiser may follow their health data (heart rate)
/// during the run, and when they checked in at the start (wall ms; nil: not yet).
public struct RunParticipation: Hashable, Sendable, Codable {
    public var code: String
    public var showToSpectators: Bool
    /// Consent given at enrolment for the organiser to read the runner's heart rate during the
    /// run; without it (and from devices that never send it) the organiser sees none.
    public var shareHealth: Bool
    public var checkedInMilliseconds: Int64?

    public init(code: String, showToSpectators: Bool, shareHealth: Bool = false, checkedInMilliseconds: Int64? = nil) {
        self.code = code
        self.showToSpectators = showToSpectators
        self.shareHealth = shareHealth
        self.checkedInMilliseconds = checkedInMilliseconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        code = try c.decode(String.self, forKey: .code)
        showToSpectators = try c.decode(Bool.self, forKey: .showToSpectators)
        shareHealth = try c.decodeIfPresent(Bool.self, forKey: .shareHealth) ?? false
        checkedInMilliseconds = try c.decodeIfPresent(Int64.self, forKey: .checkedInMilliseconds)
    }

    /// 4-32 of `A-Z 0-9 -`, as organisers hand them out.
    public static func isValidCode(_ text: String) -> Bool {
        (4...32).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): true
                default: false
                }
            }
    }

    enum CodingKeys: String, CodingKey {
        case code
        case showToSpectators = "show"
        case shareHealth = "health"
        case checkedInMilliseconds = "checked_in_ms"
    }
}
