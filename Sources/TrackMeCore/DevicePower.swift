/// The wearable's own power (not the strap's): what Linux's `power_supply` class says of its
/// battery or UPS, read as the agent reads it (`/sys/class/power_supply/<name>/{type,capacity,status,online}`).
public struct DevicePower: Hashable, Sendable {
    public enum Source: String, Hashable, Sendable, Codable {
        /// Running on the battery.
        case battery
        /// On external power, the battery charging.
        case charging
        /// On external power, the battery full.
        case full
        /// On external power with no battery reported.
        case mains
    }

    /// The battery's charge, 0...100; nil when no battery reports one.
    public var percent: Int?
    public var source: Source

    public init(percent: Int?, source: Source) {
        self.percent = percent
        self.source = source
    }

    /// What one supply's attribute files held, as text (nil: the file is absent or unreadable).
    public struct Supply: Hashable, Sendable {
        public var name: String
        public var type: String?
        public var capacity: String?
        public var status: String?
        public var online: String?

        public init(name: String, type: String? = nil, capacity: String? = nil, status: String? = nil, online: String? = nil) {
            self.name = name
            self.type = type
            self.capacity = capacity
            self.status = status
            self.online = online
        }
    }

    /// The power state the supplies describe, or nil when none is a battery, a UPS or an online
    /// mains supply (a bench board with no supply nodes). Never traps: unknown types, absent
    /// files and garbage values are skipped. A battery or UPS that gives its capacity wins over
    /// one that does not; among equals, the first by name (the kernel's `BAT0` before `BAT1`).
    public init?(supplies: [Supply]) {
        let sorted = supplies.sorted { $0.name < $1.name }
        let batteries = sorted.filter { Self.trimmed($0.type).map { $0 == "Battery" || $0 == "UPS" } ?? false }
        let externalOnline = sorted.contains { supply in
            let type = Self.trimmed(supply.type)
            return type != "Battery" && type != "UPS" && Self.trimmed(supply.online) == "1"
        }
        let battery = batteries.first { Self.percent($0.capacity) != nil } ?? batteries.first
        guard let battery else {
            guard externalOnline else { return nil }
            self.init(percent: nil, source: .mains)
            return
        }
        let percent = Self.percent(battery.capacity)
        switch Self.trimmed(battery.status) {
        case "Charging": self.init(percent: percent, source: .charging)
        case "Full": self.init(percent: percent, source: .full)
        // A UPS or battery that is not charging while the mains is online is being kept, not drained.
        case "Not charging": self.init(percent: percent, source: externalOnline ? .full : .battery)
        default: self.init(percent: percent, source: externalOnline ? .charging : .battery)
        }
    }

    /// Whether the device is running down its own battery.
    public var onBattery: Bool { source == .battery }

    private static func trimmed(_ text: String?) -> String? {
        guard let text else { return nil }
        let value = text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()
        return value.isEmpty ? nil : String(value)
    }

    private static func percent(_ text: String?) -> Int? {
        guard let value = trimmed(text).flatMap({ Int($0) }), (0...100).contains(value) else { return nil }
        return value
    }
}

/// Decides, from successive power readings, when the wearer and the server must hear of the
/// device's battery: low (the wearer should charge it), and critical (the device will stop soon:
/// send a last heartbeat so the dispatcher sees why it went silent). A level must climb
/// `hysteresis` points above a limit before the warning ends, so a battery hovering at the
/// limit does not blink on and off. External power ends both at once.
public struct PowerWatch: Hashable, Sendable {
    public struct Settings: Hashable, Sendable {
        /// At or below this charge, on battery: low.
        public var lowPercent = 20
        /// At or below this charge, on battery: critical (Raspberry Pi UPS boards cut out at a
        /// few percent).
        public var criticalPercent = 5
        public var hysteresis = 3

        public init(lowPercent: Int = 20, criticalPercent: Int = 5, hysteresis: Int = 3) {
            self.lowPercent = lowPercent
            self.criticalPercent = criticalPercent
            self.hysteresis = hysteresis
        }
    }

    public enum Level: String, Hashable, Sendable, Codable {
        case normal
        case low
        /// Monitoring will stop when the battery runs out.
        case critical
    }

    public enum Event: Hashable, Sendable {
        /// The level changed (the wearer's warning and the heartbeat follow it).
        case level(Level)
        /// The battery reached critical: send the last heartbeat now, once per discharge.
        case sendLastHeartbeat
    }

    public let settings: Settings
    public private(set) var level: Level = .normal
    private var lastHeartbeatSent = false

    public init(settings: Settings = Settings()) {
        self.settings = settings
    }

    public mutating func receive(_ power: DevicePower?) -> [Event] {
        let next = nextLevel(power)
        var events: [Event] = []
        if next != level {
            level = next
            events.append(.level(next))
        }
        if next == .critical, !lastHeartbeatSent {
            lastHeartbeatSent = true
            events.append(.sendLastHeartbeat)
        } else if next == .normal {
            lastHeartbeatSent = false
        }
        return events
    }

    private func nextLevel(_ power: DevicePower?) -> Level {
        guard let power, power.onBattery, let percent = power.percent else { return .normal }
        if percent <= settings.criticalPercent { return .critical }
        if level == .critical, percent <= settings.criticalPercent + settings.hysteresis { return .critical }
        if percent <= settings.lowPercent { return .low }
        if level != .normal, percent <= settings.lowPercent + settings.hysteresis { return .low }
        return .normal
    }
}
