public import TrackMeCore

/// Everything the agent is told by its one configuration file, as plain values.
///
/// Made by `ConfigurationLoader` (which checks every key and value before anything starts) or
/// directly in tests and the simulation. Every field has an embedded default except the
/// person's name and age, the server URL and the device id.
public struct AgentConfiguration: Hashable, Sendable {
    public var person: PersonProfile
    public var strap: StrapConfiguration
    public var gpsd: GPSDConfiguration
    public var store: StoreConfiguration
    public var server: ServerConfiguration
    public var sos: SOSRuleOverrides
    public var fallback: FallbackConfiguration
    public var status: StatusConfiguration
    public var metrics: MetricsConfiguration
    public var logging: LoggingConfiguration
    public var shutdown: ShutdownConfiguration
    /// What the wearer sees and hears: an LED, a command hook.
    public var feedback: FeedbackConfiguration = .init()
    /// The SOS button.
    public var button: ButtonConfiguration = .init()
    /// The device's own battery or UPS (`power_supply`).
    public var power: PowerConfiguration = .init()
    /// `wearer` (the default), `runner` or `taxi`: sampling, rules, status.
    public var profile: DeviceProfile = .wearer
    /// A runner's run, joined from the file (`run.code`) rather than `trackme-agent run-join`.
    public var run: RunConfiguration?

    public init(
        person: PersonProfile,
        server: ServerConfiguration,
        strap: StrapConfiguration = .init(),
        gpsd: GPSDConfiguration = .init(),
        store: StoreConfiguration = .init(),
        sos: SOSRuleOverrides = .init(),
        fallback: FallbackConfiguration = .init(),
        status: StatusConfiguration = .init(),
        metrics: MetricsConfiguration = .init(),
        logging: LoggingConfiguration = .init(),
        shutdown: ShutdownConfiguration = .init()
    ) {
        self.person = person
        self.strap = strap
        self.gpsd = gpsd
        self.store = store
        self.server = server
        self.sos = sos
        self.fallback = fallback
        self.status = status
        self.metrics = metrics
        self.logging = logging
        self.shutdown = shutdown
    }
}

/// Which heart-rate strap to use and how to reach it.
public struct StrapConfiguration: Hashable, Sendable {
    /// A specific strap, or the nearest one advertising the Heart Rate service (0x180D).
    public enum Selection: Hashable, Sendable {
        case nearest
        /// `AA:BB:CC:DD:EE:FF`, upper case.
        case address(String)
    }

    /// LE address type of the strap (most straps use a public address; some a random static one).
    public enum AddressType: String, Hashable, Sendable, CaseIterable {
        case `public`
        case random
    }

    /// How the agent's ATT client reaches the strap.
    public enum Transport: Hashable, Sendable {
        /// The real thing: an L2CAP LE socket (ATT CID 4) through BlueZ on `adapter`.
        case l2cap
        /// A simulated peripheral speaking real ATT PDUs over a `SOCK_SEQPACKET` socket pair,
        /// replaying a heart-rate trace (tests and the simulation). Config spelling:
        /// `socketpair` or `simulated`.
        case socketPair(SimulatedStrapSettings)
    }

    public var selection: Selection
    public var addressType: AddressType
    /// The HCI adapter, e.g. `hci0`.
    public var adapter: String
    public var transport: Transport
    /// Below this battery level (percent) the wearer and the server are warned.
    public var batteryWarningPercent: Int

    public static let defaultBatteryWarningPercent = 15

    public init(
        selection: Selection = .nearest,
        addressType: AddressType = .public,
        adapter: String = "hci0",
        transport: Transport = .l2cap,
        batteryWarningPercent: Int = Self.defaultBatteryWarningPercent
    ) {
        self.selection = selection
        self.addressType = addressType
        self.adapter = adapter
        self.transport = transport
        self.batteryWarningPercent = batteryWarningPercent
    }
}

/// The trace a simulated strap replays, and how fast.
public struct SimulatedStrapSettings: Hashable, Sendable {
    /// Absolute path of a heart-rate trace (`HeartRateTrace` CSV).
    public var tracePath: String
    /// Replay speed: 1 is real time, 10 is ten times faster.
    public var pace: Double

    public init(tracePath: String, pace: Double = 1) {
        self.tracePath = tracePath
        self.pace = pace
    }
}

public struct GPSDConfiguration: Hashable, Sendable {
    public var host: String
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int = 2947) {
        self.host = host
        self.port = port
    }
}

public struct StoreConfiguration: Hashable, Sendable {
    /// The SQLite database file; its directory must be writable (systemd `ReadWritePaths`).
    public var path: String
    /// Disk the store may use before it evicts old synced readings (alerts are never evicted).
    public var diskBudgetBytes: Int

    /// Whether reading bodies, the alert journal and the device token are sealed at rest.
    public var encryption: StoreEncryptionMode
    /// The systemd credential holding the store key: `$CREDENTIALS_DIRECTORY/<name>`, which
    /// `LoadCredentialEncrypted=` in the unit provides (TPM-sealed where the board has one).
    public var keyCredential: String
    /// The fallback for boards without credentials: a key file (64 hex digits or 32 bytes, mode
    /// 0400, root), on another partition or provisioned at install, never beside the database.
    public var keyFile: String?

    public static let defaultDiskBudgetBytes = 10_000_000
    public static let defaultKeyCredential = "trackme-store-key"

    public init(
        path: String = "/var/lib/trackme/agent.sqlite",
        diskBudgetBytes: Int = Self.defaultDiskBudgetBytes,
        encryption: StoreEncryptionMode = .auto,
        keyCredential: String = Self.defaultKeyCredential,
        keyFile: String? = nil
    ) {
        self.path = path
        self.diskBudgetBytes = diskBudgetBytes
        self.encryption = encryption
        self.keyCredential = keyCredential
        self.keyFile = keyFile
    }
}

/// `store.encryption`.
public enum StoreEncryptionMode: String, Hashable, Sendable, CaseIterable {
    /// Encrypted whenever a key is found (the credential, else `key_file`); in clear otherwise.
    /// The default, so that a demo or a bench machine without a key runs with no set-up.
    case auto
    /// A key must be found, or the agent does not start. The setting for devices in the field.
    case required
    /// Never uses a key: a store that is already encrypted then runs from memory (key missing).
    case off
}

public struct ServerConfiguration: Hashable, Sendable {
    /// Base URL of the TrackMe server, `http://` or `https://`.
    public var url: String
    /// The identifier the server enrolled this device under (`DeviceIdentity.isValid`).
    public var deviceID: String
    /// A file holding the device's bearer token (kept out of the config file; mode 0640, root:trackme).
    public var tokenFile: String
    /// A PEM file of the CA(s) to trust for an https:// server instead of the system store.
    public var caFile: String?
    /// Base64 SHA-256 pins of the server's public key; any one must match (with the CA check).
    public var pinSHA256: [String] = []
    /// Further instances of the same service (`server.urls`), tried in order after
    /// `url` on a connection failure or a 5xx; the agent goes back to `url` after a while.
    public var fallbackURLs: [String] = []

    /// `url` then `fallbackURLs`, each once.
    public var allURLs: [String] {
        var seen = Set<String>()
        return ([url] + fallbackURLs).filter { seen.insert($0).inserted }
    }

    public init(url: String, deviceID: String, tokenFile: String = "/etc/trackme/device-token") {
        self.url = url
        self.deviceID = deviceID
        self.tokenFile = tokenFile
    }
}

/// Per-deployment changes to the SOS rules, handed as they are to the SOS engine.
///
/// Every field is optional: nil means "the engine's own default" (which derives heart-rate
/// thresholds from the person's age and resting rate).
public struct SOSRuleOverrides: Hashable, Sendable {
    /// Countdown before any alert is raised, during which the wearer can cancel it.
    public var countdownSeconds: Double?
    /// Overrides per rule, keyed by the rule's `AlertKind`.
    public var rules: [AlertKind: RuleOverride]

    public init(countdownSeconds: Double? = nil, rules: [AlertKind: RuleOverride] = [:]) {
        self.countdownSeconds = countdownSeconds
        self.rules = rules
    }

    /// The override for one rule, or an empty one.
    public subscript(kind: AlertKind) -> RuleOverride {
        rules[kind] ?? RuleOverride()
    }
}

/// Changes to one SOS rule. nil fields keep the engine's default.
public struct RuleOverride: Hashable, Sendable {
    public var enabled: Bool?
    /// The bpm limit: below it for `heart_rate_low`, above it for `heart_rate_high`.
    /// Only those two rules accept it.
    public var thresholdBPM: Int?
    /// How long the condition must hold before the rule fires.
    public var persistenceSeconds: Double?
    /// This rule's countdown, instead of the global one.
    public var countdownSeconds: Double?

    public init(enabled: Bool? = nil, thresholdBPM: Int? = nil, persistenceSeconds: Double? = nil, countdownSeconds: Double? = nil) {
        self.enabled = enabled
        self.thresholdBPM = thresholdBPM
        self.persistenceSeconds = persistenceSeconds
        self.countdownSeconds = countdownSeconds
    }
}

/// What to run on the device when an alert cannot reach the server (a GSM modem script, a
/// buzzer, a local siren).
public struct FallbackConfiguration: Hashable, Sendable {
    /// Program and arguments (no shell), or nil for none.
    public var command: [String]?
    /// Run it when a raised alert is still undelivered this long after it was raised.
    public var afterSeconds: Double

    public init(command: [String]? = nil, afterSeconds: Double = 30) {
        self.command = command
        self.afterSeconds = afterSeconds
    }
}

public struct StatusConfiguration: Hashable, Sendable {
    /// The local control socket (Unix domain; never a network port).
    public var socketPath: String

    public static let defaultSocketPath = "/run/trackme/agent.sock"

    public init(socketPath: String = Self.defaultSocketPath) {
        self.socketPath = socketPath
    }
}

public struct MetricsConfiguration: Hashable, Sendable {
    public var enabled: Bool
    /// Port of the Prometheus endpoint on 127.0.0.1 (loopback only); 0 picks a free port.
    public var port: Int

    public init(enabled: Bool = true, port: Int = 9464) {
        self.enabled = enabled
        self.port = port
    }
}

public struct LoggingConfiguration: Hashable, Sendable {
    /// swift-log level name: trace, debug, info, notice, warning, error, critical.
    public var level: String

    public init(level: String = "info") {
        self.level = level
    }
}

public struct ShutdownConfiguration: Hashable, Sendable {
    /// How long services get to finish (commit in-flight readings) after SIGTERM before they
    /// are cancelled. Keep it below systemd's `TimeoutStopSec`.
    public var graceSeconds: Double

    public init(graceSeconds: Double = 10) {
        self.graceSeconds = graceSeconds
    }
}

/// The wearer's feedback outputs: each `FeedbackState` drives an LED pattern and/or a hook.
public struct FeedbackConfiguration: Hashable, Sendable {
    /// An LED-class device: a name under `/sys/class/leds` or an absolute path to its directory.
    public var led: String?
    /// Patterns that differ from `LEDPattern.defaults`.
    public var patterns: [FeedbackState: LEDPattern]
    /// A program and arguments (no shell) run with the state appended, or nil.
    public var command: [String]?
    /// A hook still running after this long is killed.
    public var commandTimeoutSeconds: Double
    /// How long `resolved` shows before the device goes back to idle.
    public var resolvedShownSeconds: Double

    public init(
        led: String? = nil,
        patterns: [FeedbackState: LEDPattern] = [:],
        command: [String]? = nil,
        commandTimeoutSeconds: Double = 5,
        resolvedShownSeconds: Double = 30
    ) {
        self.led = led
        self.patterns = patterns
        self.command = command
        self.commandTimeoutSeconds = commandTimeoutSeconds
        self.resolvedShownSeconds = resolvedShownSeconds
    }
}

/// A push button read through the kernel's input layer (`gpio-keys`: `/dev/input/eventN`).
public struct ButtonConfiguration: Hashable, Sendable {
    /// The event device, or nil for no button.
    public var device: String?
    /// The key code it reports (`linux/input-event-codes.h`); gpio-key's default is KEY_POWER (116).
    public var keyCode: Int
    /// Held this long: a manual SOS.
    public var longPressSeconds: Double
    /// This many short presses within 3 s: a discreet SOS (no countdown, no light, no sound); 0: off.
    public var discreetPresses: Int
    /// The long hold raises a discreet SOS too (a wearer at risk of being seen calling for help).
    public var discreetLongPress: Bool

    public init(device: String? = nil, keyCode: Int = 116, longPressSeconds: Double = 2, discreetPresses: Int = 3, discreetLongPress: Bool = false) {
        self.device = device
        self.keyCode = keyCode
        self.longPressSeconds = longPressSeconds
        self.discreetPresses = discreetPresses
        self.discreetLongPress = discreetLongPress
    }
}

/// `power:` the wearable's own battery or UPS, read from Linux's `power_supply` class.
public struct PowerConfiguration: Hashable, Sendable {
    /// Where the supplies are; a missing directory means the board reports none.
    public var supplyDirectory: String
    /// On battery at or below this charge: the wearer is warned and the server told.
    public var lowPercent: Int
    /// On battery at or below this charge: monitoring will stop soon; a last heartbeat goes out.
    public var criticalPercent: Int
    public var pollSeconds: Double

    public init(supplyDirectory: String = "/sys/class/power_supply", lowPercent: Int = 20, criticalPercent: Int = 5, pollSeconds: Double = 30) {
        self.supplyDirectory = supplyDirectory
        self.lowPercent = lowPercent
        self.criticalPercent = criticalPercent
        self.pollSeconds = pollSeconds
    }
}

/// `run:` a runner's run, by the code the organiser handed out.
public struct RunConfiguration: Hashable, Sendable {
    public var code: String
    /// Whether the runner agrees to be shown on the public spectator page.
    public var showToSpectators: Bool
    /// Whether the runner lets the organiser follow their heart rate during the run (given
    /// when the runner enrols; turning it off later withdraws it).
    public var shareHealth: Bool

    public init(code: String, showToSpectators: Bool = false, shareHealth: Bool = false) {
        self.code = code
        self.showToSpectators = showToSpectators
        self.shareHealth = shareHealth
    }
}
