import Foundation

/// The person's care settings as the person or their carer set them on the server: heart-rate
/// thresholds, which SOS rules are on, whom to call. Versioned by the server (each change is the
/// next version); the device receives them in the reply to a batch (`SyncOrders`), applies them
/// over its configuration file's values, and reports the version it runs in its heartbeat.
public struct CareSettings: Hashable, Sendable, Codable {
    /// 1 for the first settings of a device, one more for each change; 0 never set.
    public var version: Int64
    public var minimumHeartRate: Int?
    public var maximumHeartRate: Int?
    public var restingHeartRate: Int?
    /// Rule switches by `AlertKind` name (`heart_rate_low`, `no_pulse`, ...); a rule not named
    /// keeps the device's own setting.
    public var rules: [String: Bool]?
    public var contacts: [EmergencyContact]?
    /// The rules' settings as a whole (`wearable` when not set): `bedside` for a person in bed.
    public var careProfile: CareProfile?
    /// Whether the emergency contacts are told as soon as an alert is raised, not only when it
    /// goes unacknowledged (SafeRoute's SOS). Nil: the default (`PersonProfile.tellsContactsAtRaise`).
    /// The server acts on it; the device does not.
    public var tellContactsAtRaise: Bool?
    /// The person's enrolment in AutomatedSOS; nil: on, provided by the operator. Switched
    /// through its own endpoint (the person, or an organisation with their consent), never by a
    /// change of the other settings.
    public var automatedSOS: AutomatedSOSService?
    /// Discreet SOS for every alert (SafeRoute §2.6, a wearer under threat): the device shows and
    /// sounds nothing of any alert, a press or a rule's, from its countdown to its end (no LED
    /// change, no feedback hook). Nil or false: only a discreet press (`discreet_presses`,
    /// `trackme-agent sos --discreet`) is silent. The alert itself goes out as usual.
    public var discreetSOS: Bool?

    public init(
        version: Int64 = 0,
        minimumHeartRate: Int? = nil,
        maximumHeartRate: Int? = nil,
        restingHeartRate: Int? = nil,
        rules: [String: Bool]? = nil,
        contacts: [EmergencyContact]? = nil,
        careProfile: CareProfile? = nil,
        tellContactsAtRaise: Bool? = nil,
        automatedSOS: AutomatedSOSService? = nil
    ) {
        self.version = version
        self.minimumHeartRate = minimumHeartRate
        self.maximumHeartRate = maximumHeartRate
        self.restingHeartRate = restingHeartRate
        self.rules = rules
        self.contacts = contacts
        self.careProfile = careProfile
        self.tellContactsAtRaise = tellContactsAtRaise
        self.automatedSOS = automatedSOS
    }

    enum CodingKeys: String, CodingKey {
        case version
        case minimumHeartRate = "min_hr"
        case maximumHeartRate = "max_hr"
        case restingHeartRate = "resting_hr"
        case rules, contacts
        case careProfile = "care_profile"
        case tellContactsAtRaise = "tell_contacts_at_raise"
        case automatedSOS = "automated_sos"
        case discreetSOS = "discreet_sos"
    }

    /// `version` may be left out (a person or carer sending new settings does not number them).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decodeIfPresent(Int64.self, forKey: .version) ?? 0
        minimumHeartRate = try c.decodeIfPresent(Int.self, forKey: .minimumHeartRate)
        maximumHeartRate = try c.decodeIfPresent(Int.self, forKey: .maximumHeartRate)
        restingHeartRate = try c.decodeIfPresent(Int.self, forKey: .restingHeartRate)
        rules = try c.decodeIfPresent([String: Bool].self, forKey: .rules)
        contacts = try c.decodeIfPresent([EmergencyContact].self, forKey: .contacts)
        careProfile = try c.decodeIfPresent(CareProfile.self, forKey: .careProfile)
        tellContactsAtRaise = try c.decodeIfPresent(Bool.self, forKey: .tellContactsAtRaise)
        automatedSOS = try c.decodeIfPresent(AutomatedSOSService.self, forKey: .automatedSOS)
        discreetSOS = try c.decodeIfPresent(Bool.self, forKey: .discreetSOS)
    }

    /// The rule switch for `kind`, if the settings name it.
    public func ruleEnabled(_ kind: AlertKind) -> Bool? { rules?[kind.rawValue] }

    /// Why these settings cannot be used, or nil: thresholds within 20-250 bpm with the minimum
    /// below the maximum, only known rule names, and the manual SOS never switched off (a
    /// wearer must always be able to call for help).
    public func problem() -> (field: String, message: String)? {
        for (field, value) in [("min_hr", minimumHeartRate), ("max_hr", maximumHeartRate), ("resting_hr", restingHeartRate)] {
            if let value, !(20...250).contains(value) { return (field, "must be 20-250 bpm") }
        }
        if let low = minimumHeartRate, let high = maximumHeartRate, low >= high { return ("min_hr", "must be below max_hr") }
        for (name, enabled) in rules ?? [:] {
            guard let kind = AlertKind(rawValue: name) else {
                return ("rules", "unknown rule \(name); known: \(AlertKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            if kind == .manual, !enabled { return ("rules", "the manual SOS cannot be switched off") }
        }
        return nil
    }
}

/// An order to erase everything on the device: its person asked for their data to be erased
/// (or an admin did on their behalf), and the server no longer knows the device.
public struct WipeOrder: Hashable, Sendable, Codable {
    /// Server wall time of the erasure.
    public var orderedMilliseconds: Int64

    public init(orderedMilliseconds: Int64) {
        self.orderedMilliseconds = orderedMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case orderedMilliseconds = "ordered_ms"
    }
}

/// What the server tells the device to do, carried in the reply to a batch (`orders`, WIRE.md
/// "Orders in the sync reply"): new care settings to apply, or a wipe.
public struct SyncOrders: Hashable, Sendable, Codable {
    public var careSettings: CareSettings?
    public var wipe: WipeOrder?
    /// A taxi's ride: offered to it, accepted or under way (`RideNotice`).
    public var ride: RideNotice?
    /// Batch again within this long, empty if need be, until a reply says otherwise: the server
    /// asks it of a taxi a ride may be offered to (queued in a zone, or with a ride open), since
    /// an offer reaches the taxi only in a reply. Without it the profile's heartbeat holds.
    public var pollMilliseconds: Int64?

    public init(careSettings: CareSettings? = nil, wipe: WipeOrder? = nil, ride: RideNotice? = nil, pollMilliseconds: Int64? = nil) {
        self.careSettings = careSettings
        self.wipe = wipe
        self.ride = ride
        self.pollMilliseconds = pollMilliseconds
    }

    public var isEmpty: Bool { careSettings == nil && wipe == nil && ride == nil && pollMilliseconds == nil }

    enum CodingKeys: String, CodingKey {
        case careSettings = "care_settings"
        case wipe, ride
        case pollMilliseconds = "poll_ms"
    }

    /// The `orders` of a reply body (an acknowledgement, or the 410 answer to an erased
    /// device), or nil when it has none or is not JSON.
    public static func inReply(_ body: [UInt8]) -> SyncOrders? {
        struct Reply: Decodable {
            var orders: SyncOrders?
        }
        guard body.first == UInt8(ascii: "{") else { return nil }
        guard let orders = (try? WireCodec.decode(Reply.self, from: Data(body)))?.orders, !orders.isEmpty else { return nil }
        return orders
    }
}

/// AutomatedSOS as a service the person is enrolled in (000 G7, 002 R33-R34): whether the rules'
/// alerts go to a dispatcher, and who provides that. Off, the device still records (readings, the
/// rules, its own journal and feedback) and the SOS button still reaches a dispatcher; the server
/// puts the rules' alerts in front of no dispatcher and tells no contact of them. Not set: on,
/// provided by the operator. Switched by the person, or by an organisation with their consent.
public struct AutomatedSOSService: Hashable, Sendable, Codable {
    public static let operatorProvider = "the operator's dispatch centre"

    public var active: Bool
    /// Who provides it, as people read it: the organisation's name, or the operator's centre.
    public var provider: String
    /// The providing organisation's account, nil for the operator.
    public var providerID: String?
    /// `person`, `organisation` or `admin`; nil when never switched.
    public var changedBy: String?
    public var changedMilliseconds: Int64?

    public init(
        active: Bool = true,
        provider: String = AutomatedSOSService.operatorProvider,
        providerID: String? = nil,
        changedBy: String? = nil,
        changedMilliseconds: Int64? = nil
    ) {
        self.active = active
        self.provider = provider
        self.providerID = providerID
        self.changedBy = changedBy
        self.changedMilliseconds = changedMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case active, provider
        case providerID = "provider_id"
        case changedBy = "changed_by"
        case changedMilliseconds = "changed_ms"
    }
}
