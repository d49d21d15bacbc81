/// Who a device is and whom it watches over.
public struct DeviceIdentity: Hashable, Sendable, Codable {
    /// The identifier the server enrolled the device under, e.g. `pi-0042`.
    public var deviceID: String

    public init(deviceID: String) {
        self.deviceID = deviceID
    }

    /// Device identifiers travel in URLs and idempotency keys: 1-64 characters of
    /// `A-Z a-z 0-9 . _ -`.
    public static func isValid(_ id: String) -> Bool {
        guard (1...64).contains(id.utf8.count) else { return false }
        return id.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F
                || c == 0x2D
        }
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
    }
}

/// The person wearing the device, as far as the SOS rules need to know.
public struct PersonProfile: Hashable, Sendable, Codable {
    public var name: String
    public var age: Int
    /// Resting heart rate, if known (from the profile or learned from history).
    public var restingHeartRate: Int?
    /// Explicit thresholds; when nil the SOS rules derive them from age and resting rate.
    public var minimumHeartRate: Int?
    public var maximumHeartRate: Int?
    /// Whom to call, in order (the server escalates to them; the console shows them).
    public var contacts: [EmergencyContact]?
    /// What the carer wants a dispatcher to know (medication, door code, ...).
    public var notes: String?
    /// The care setting `tell_contacts_at_raise` (`CareSettings`); nil: the default.
    public var tellContactsAtRaise: Bool?
    /// The care setting `automated_sos` (`CareSettings`); nil: on, provided by the operator.
    public var automatedSOS: AutomatedSOSService?
    /// The care setting `discreet_sos` (`CareSettings`): the device shows nothing of any alert.
    public var discreetSOS: Bool?

    public init(
        name: String,
        age: Int,
        restingHeartRate: Int? = nil,
        minimumHeartRate: Int? = nil,
        maximumHeartRate: Int? = nil,
        contacts: [EmergencyContact]? = nil,
        notes: String? = nil,
        tellContactsAtRaise: Bool? = nil,
        automatedSOS: AutomatedSOSService? = nil
    ) {
        self.name = name
        self.age = age
        self.restingHeartRate = restingHeartRate
        self.minimumHeartRate = minimumHeartRate
        self.maximumHeartRate = maximumHeartRate
        self.contacts = contacts
        self.notes = notes
        self.tellContactsAtRaise = tellContactsAtRaise
        self.automatedSOS = automatedSOS
    }

    enum CodingKeys: String, CodingKey {
        case name, age
        case restingHeartRate = "resting_hr"
        case minimumHeartRate = "min_hr"
        case maximumHeartRate = "max_hr"
        case contacts, notes
        case tellContactsAtRaise = "tell_contacts_at_raise"
        case automatedSOS = "automated_sos"
        case discreetSOS = "discreet_sos"
    }

    /// Whether the server puts an alert of `kind` in front of a dispatcher: always for the SOS
    /// button (a wearer can always call for help); for a rule's alert while AutomatedSOS is on.
    public func dispatchesAlert(kind: AlertKind) -> Bool {
        kind == .manual || (automatedSOS?.active ?? true)
    }

    /// Whether the emergency contacts hear of an alert of `kind` as soon as it is raised, and not
    /// only once it goes unacknowledged. As set; by default for the manual SOS only: the wearer
    /// asked for help themself (SafeRoute's SOS: contacts told when it is sent), whereas a rule's
    /// alert is first checked by a dispatcher, so a false alarm does not frighten the family.
    public func tellsContactsAtRaise(kind: AlertKind) -> Bool {
        tellContactsAtRaise ?? (kind == .manual)
    }
}

/// Someone to call when the wearer needs help.
public struct EmergencyContact: Hashable, Sendable, Codable {
    public var name: String
    /// How they relate to the wearer ("daughter", "neighbour").
    public var relation: String?
    public var phone: String?
    public var email: String?

    public init(name: String, relation: String? = nil, phone: String? = nil, email: String? = nil) {
        self.name = name
        self.relation = relation
        self.phone = phone
        self.email = email
    }
}
