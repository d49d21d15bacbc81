import Foundation
import TrackMeCore
import Yams

/// Reads the agent's YAML configuration file into an `AgentConfiguration`.
///
/// Works on Yams' node tree rather than `Decodable` so that every issue can name its line, and
/// so that all issues are collected in one pass: a field engineer fixes the file once, not once
/// per error. Relative paths in the file are taken relative to the file's own directory.
public enum ConfigurationLoader {
    /// Top-level sections, in the order the example file documents them.
    static let sections = [
        "person", "strap", "gpsd", "store", "server", "sos", "fallback", "feedback", "button", "power", "status", "metrics", "logging",
        "shutdown", "profile", "run",
    ]

    /// Reads and checks the file at `path`.
    public static func load(path: String) throws(ConfigurationError) -> AgentConfiguration {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ConfigurationError(
                code: .unreadable,
                path: path,
                issues: [ConfigurationIssue(line: nil, keyPath: "", message: "cannot read the file (\(error.localizedDescription))")]
            )
        }
        let directory = (path as NSString).deletingLastPathComponent
        do throws(ConfigurationError) {
            return try check(yaml: text, baseDirectory: directory.isEmpty ? "." : directory, checkFiles: true)
        } catch {
            var located = error
            located.path = path
            throw located
        }
    }

    /// Checks `yaml`; relative paths in it resolve against `baseDirectory` (or stay as they
    /// are when nil). Unlike `load(path:)` it does not look at the file system.
    public static func parse(yaml: String, baseDirectory: String? = nil) throws(ConfigurationError) -> AgentConfiguration {
        try check(yaml: yaml, baseDirectory: baseDirectory, checkFiles: false)
    }

    /// `checkFiles`: also require that input files named in the configuration (a simulated
    /// strap's trace) exist now, so a typo in a path fails `config check` rather than the run.
    static func check(yaml: String, baseDirectory: String?, checkFiles: Bool) throws(ConfigurationError) -> AgentConfiguration {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch {
            throw ConfigurationError(code: .syntax, path: nil, issues: [syntaxIssue(error)])
        }
        let issues = IssueCollector()
        let document = YAMLSection(node: root, path: "", issues: issues)
        if root == nil {
            issues.add(nil, "", "the file is empty; person and server are required")
        }
        let reader = Reader(baseDirectory: baseDirectory, checkFiles: checkFiles)
        let person = reader.person(document.section("person"))
        let strap = reader.strap(document.section("strap"))
        let gpsd = reader.gpsd(document.section("gpsd"))
        let store = reader.store(document.section("store"))
        let server = reader.server(document.section("server"))
        let sos = reader.sos(document.section("sos"))
        let fallback = reader.fallback(document.section("fallback"))
        let feedback = reader.feedback(document.section("feedback"))
        let button = reader.button(document.section("button"))
        let power = reader.power(document.section("power"))
        let status = reader.status(document.section("status"))
        let metrics = reader.metrics(document.section("metrics"))
        let logging = reader.logging(document.section("logging"))
        let shutdown = reader.shutdown(document.section("shutdown"))
        let profile = document.choice("profile", DeviceProfile.allCases.map { ($0.rawValue, $0) })
        let run = reader.run(document.section("run"))
        document.finish(known: sections)

        guard issues.issues.isEmpty, let person, let server else {
            throw ConfigurationError(code: .invalid, path: nil, issues: issues.sorted)
        }
        var configuration = AgentConfiguration(
            person: person,
            server: server,
            strap: strap,
            gpsd: gpsd,
            store: store,
            sos: sos,
            fallback: fallback,
            status: status,
            metrics: metrics,
            logging: logging,
            shutdown: shutdown
        )
        configuration.feedback = feedback
        configuration.button = button
        configuration.power = power
        configuration.profile = profile ?? .wearer
        configuration.run = run
        return configuration
    }

    private static func syntaxIssue(_ error: any Error) -> ConfigurationIssue {
        guard let yamlError = error as? YamlError else {
            return ConfigurationIssue(line: nil, keyPath: "", message: "not valid YAML (\(error))")
        }
        switch yamlError {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _),
            .composer(_, let problem, let mark, _):
            return ConfigurationIssue(line: mark.line, column: mark.column, keyPath: "", message: "not valid YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigurationIssue(
                line: context.mark.line,
                column: context.mark.column,
                keyPath: "",
                message: "duplicate key \(duplicates.joined(separator: ", ")) in one mapping"
            )
        case .reader(let problem, _, _, _):
            return ConfigurationIssue(line: nil, keyPath: "", message: "not valid YAML: \(problem)")
        default:
            return ConfigurationIssue(line: nil, keyPath: "", message: "not valid YAML (\(yamlError))")
        }
    }
}

/// Reads each section with its defaults and value checks.
private struct Reader {
    var baseDirectory: String?
    var checkFiles: Bool

    func resolve(_ path: String) -> String {
        guard let baseDirectory, !path.hasPrefix("/") else { return path }
        return (baseDirectory as NSString).appendingPathComponent(path)
    }

    func absolutePath(_ section: YAMLSection, _ key: String) -> String? {
        guard let value = section.string(key) else { return nil }
        guard !value.isEmpty else {
            section.report(section.node(key), key, "must not be empty")
            return nil
        }
        return resolve(value)
    }

    func person(_ s: YAMLSection) -> PersonProfile? {
        defer { s.finish(known: ["name", "age", "resting_hr", "min_hr", "max_hr"]) }
        let name = s.requiredString("name")
        let ageKeyPresent = s.presentKeys.contains { $0.key == "age" }
        let age = s.int("age", in: 1...120)
        if !ageKeyPresent { s.reportMissing("age") }
        let resting = s.int("resting_hr", in: 25...200)
        let minimum = s.int("min_hr", in: 20...200)
        let maximum = s.int("max_hr", in: 60...250)
        if let minimum, let maximum, minimum >= maximum {
            s.report(s.node("min_hr"), "min_hr", "must be below max_hr (\(maximum))")
        }
        guard let name, let age else { return nil }
        return PersonProfile(
            name: name,
            age: age,
            restingHeartRate: resting,
            minimumHeartRate: minimum,
            maximumHeartRate: maximum
        )
    }

    func strap(_ s: YAMLSection) -> StrapConfiguration {
        defer { s.finish(known: ["address", "address_type", "adapter", "transport", "trace", "pace", "battery_warning_percent"]) }
        var strap = StrapConfiguration()
        if let address = s.string("address") {
            if address == "nearest" {
                strap.selection = .nearest
            } else if Self.isBluetoothAddress(address) {
                strap.selection = .address(address.uppercased())
            } else {
                s.report(s.node("address"), "address", "expected \"nearest\" or an address like AA:BB:CC:DD:EE:FF, got \"\(address)\"")
            }
        }
        if let type = s.choice("address_type", StrapConfiguration.AddressType.allCases.map { ($0.rawValue, $0) }) {
            strap.addressType = type
        }
        if let adapter = s.string("adapter") {
            if Self.isAdapterName(adapter) {
                strap.adapter = adapter
            } else {
                s.report(s.node("adapter"), "adapter", "expected an HCI adapter name like hci0, got \"\(adapter)\"")
            }
        }
        if let level = s.int("battery_warning_percent", in: 0...100) { strap.batteryWarningPercent = level }
        let simulated = s.choice("transport", [("l2cap", false), ("socketpair", true), ("simulated", true)]) ?? false
        let trace = absolutePath(s, "trace")
        let pace = s.double("pace", in: 0.01...10_000)
        if simulated {
            if let trace {
                if checkFiles && !FileManager.default.isReadableFile(atPath: trace) {
                    s.report(s.node("trace"), "trace", "cannot read \(trace)")
                }
                strap.transport = .socketPair(SimulatedStrapSettings(tracePath: trace, pace: pace ?? 1))
            } else if !s.presentKeys.contains(where: { $0.key == "trace" }) {
                s.report(s.node("transport"), "trace", "required when transport is socketpair or simulated")
            }
        } else {
            if trace != nil { s.report(s.node("trace"), "trace", "only used with transport socketpair or simulated") }
            if pace != nil { s.report(s.node("pace"), "pace", "only used with transport socketpair or simulated") }
        }
        return strap
    }

    func gpsd(_ s: YAMLSection) -> GPSDConfiguration {
        defer { s.finish(known: ["host", "port"]) }
        var gpsd = GPSDConfiguration()
        if let host = s.string("host") {
            if host.isEmpty || host.contains(where: \.isWhitespace) {
                s.report(s.node("host"), "host", "expected a host name or address, got \"\(host)\"")
            } else {
                gpsd.host = host
            }
        }
        if let port = s.int("port", in: 1...65535) { gpsd.port = port }
        return gpsd
    }

    func store(_ s: YAMLSection) -> StoreConfiguration {
        defer { s.finish(known: ["path", "disk_budget", "encryption", "key_credential", "key_file"]) }
        var store = StoreConfiguration()
        if let path = absolutePath(s, "path") { store.path = path }
        if let mode = s.choice("encryption", StoreEncryptionMode.allCases.map { ($0.rawValue, $0) }) { store.encryption = mode }
        if let name = s.string("key_credential") {
            if name.isEmpty || name.contains("/") || name.hasPrefix(".") {
                s.report(s.node("key_credential"), "key_credential", "expected a credential name (no /), got \"\(name)\"")
            } else {
                store.keyCredential = name
            }
        }
        store.keyFile = absolutePath(s, "key_file")
        if let keyFile = store.keyFile, (keyFile as NSString).deletingLastPathComponent == (store.path as NSString).deletingLastPathComponent {
            s.report(s.node("key_file"), "key_file", "\(keyFile) is beside the database; keep the key on another partition or in a credential")
        }
        if let node = s.node("disk_budget") {
            if case .scalar(let scalar) = node, let bytes = ByteSize.parse(scalar.string) {
                if bytes < 64 * 1024 {
                    s.report(node, "disk_budget", "\(scalar.string) is too small (at least 64 KiB)")
                } else {
                    store.diskBudgetBytes = bytes
                }
            } else {
                s.report(node, "disk_budget", "expected a size like 10 MB, 512 KiB or a number of bytes, got \(YAMLSection.show(node))")
            }
        }
        return store
    }

    func server(_ s: YAMLSection) -> ServerConfiguration? {
        defer { s.finish(known: ["url", "urls", "device_id", "token_file", "ca_file", "pin_sha256"]) }
        let url = s.requiredString("url")
        if let url, !Self.isServerURL(url) {
            s.report(s.node("url"), "url", "expected an http:// or https:// URL with a host, got \"\(url)\"")
        }
        let deviceID = s.requiredString("device_id")
        if let deviceID, !DeviceIdentity.isValid(deviceID) {
            s.report(s.node("device_id"), "device_id", "expected 1-64 characters of A-Z a-z 0-9 . _ -, got \"\(deviceID)\"")
        }
        let tokenFile = absolutePath(s, "token_file")
        // Whom to trust for https:// (a self-hosted server's CA, pinned keys).
        let caFile = absolutePath(s, "ca_file")
        let pins = s.stringList("pin_sha256") ?? []
        for pin in pins where Data(base64Encoded: pin)?.count != 32 {
            s.report(s.node("pin_sha256"), "pin_sha256", "expected base64 SHA-256 digests (44 characters), got \"\(pin)\"")
        }
        if let url, url.hasPrefix("http://"), caFile != nil || !pins.isEmpty {
            s.report(s.node("url"), "url", "ca_file and pin_sha256 need an https:// url")
        }
        // Further instances to fail over to, in order.
        let fallbacks = s.stringList("urls") ?? []
        for fallback in fallbacks where !Self.isServerURL(fallback) {
            s.report(s.node("urls"), "urls", "expected http:// or https:// URLs with a host, got \"\(fallback)\"")
        }
        if fallbacks.contains(where: { $0.hasPrefix("http://") }), caFile != nil || !pins.isEmpty {
            s.report(s.node("urls"), "urls", "ca_file and pin_sha256 need https:// urls")
        }
        guard let url, Self.isServerURL(url), let deviceID, DeviceIdentity.isValid(deviceID) else { return nil }
        var server = ServerConfiguration(url: url, deviceID: deviceID)
        if let tokenFile { server.tokenFile = tokenFile }
        server.caFile = caFile
        server.pinSHA256 = pins
        server.fallbackURLs = fallbacks.filter(Self.isServerURL)
        return server
    }

    func sos(_ s: YAMLSection) -> SOSRuleOverrides {
        defer { s.finish(known: ["countdown_seconds", "rules"]) }
        var sos = SOSRuleOverrides()
        sos.countdownSeconds = s.double("countdown_seconds", in: 0...600)
        let rules = s.section("rules")
        let names = AlertKind.allCases.map(\.rawValue)
        for (name, _) in rules.presentKeys {
            guard let kind = AlertKind(rawValue: name) else { continue }
            sos.rules[kind] = rule(rules.section(name), kind: kind)
        }
        rules.finish(known: names)
        return sos
    }

    private func rule(_ s: YAMLSection, kind: AlertKind) -> RuleOverride {
        var known = ["enabled", "countdown_seconds"]
        var rule = RuleOverride()
        rule.enabled = s.bool("enabled")
        rule.countdownSeconds = s.double("countdown_seconds", in: 0...600)
        switch kind {
        case .heartRateLow, .heartRateHigh:
            known += ["threshold_bpm", "persistence_seconds"]
            rule.thresholdBPM = s.int("threshold_bpm", in: 20...250)
            rule.persistenceSeconds = s.double("persistence_seconds", in: 0...3600)
        case .noPulse, .contactLost, .strapSilent:
            known += ["persistence_seconds"]
            rule.persistenceSeconds = s.double("persistence_seconds", in: 0...3600)
        case .manual, .lethalRhythm:
            break
        }
        var hints: [String: String] = [:]
        if !known.contains("threshold_bpm") { hints["threshold_bpm"] = "only heart_rate_low and heart_rate_high take threshold_bpm" }
        if !known.contains("persistence_seconds") {
            hints["persistence_seconds"] = "manual and lethal_rhythm alerts have no persistence (each rhythm signal has its own)"
        }
        s.finish(known: known, hints: hints)
        return rule
    }

    func fallback(_ s: YAMLSection) -> FallbackConfiguration {
        defer { s.finish(known: ["command", "after_seconds"]) }
        var fallback = FallbackConfiguration()
        if let command = s.stringList("command") {
            if let program = command.first, !program.isEmpty {
                fallback.command = [resolve(program)] + command.dropFirst()
            } else {
                s.report(s.node("command"), "command", "expected a program and its arguments")
            }
        }
        if let after = s.double("after_seconds", in: 0...86_400) { fallback.afterSeconds = after }
        return fallback
    }

    func feedback(_ s: YAMLSection) -> FeedbackConfiguration {
        defer { s.finish(known: ["led", "patterns", "command", "command_timeout_seconds", "resolved_seconds"]) }
        var feedback = FeedbackConfiguration()
        if let led = s.string("led") {
            if led.isEmpty || (!led.hasPrefix("/") && led.contains("/")) {
                s.report(s.node("led"), "led", "expected an LED name under /sys/class/leds or an absolute path, got \"\(led)\"")
            } else {
                feedback.led = led
            }
        }
        let patterns = s.section("patterns")
        let names = FeedbackState.allCases.map(\.rawValue)
        for state in FeedbackState.allCases {
            guard let text = patterns.string(state.rawValue) else { continue }
            if let pattern = LEDPattern(text: text) {
                feedback.patterns[state] = pattern
            } else {
                patterns.report(
                    patterns.node(state.rawValue),
                    state.rawValue,
                    "expected off, on or \"blink ON_MS OFF_MS\" (1-60000 ms), got \"\(text)\""
                )
            }
        }
        patterns.finish(known: names)
        if let command = s.stringList("command") {
            if let program = command.first, !program.isEmpty {
                feedback.command = [resolve(program)] + command.dropFirst()
            } else {
                s.report(s.node("command"), "command", "expected a program and its arguments")
            }
        }
        if let timeout = s.double("command_timeout_seconds", in: 0.1...600) { feedback.commandTimeoutSeconds = timeout }
        if let shown = s.double("resolved_seconds", in: 0...86_400) { feedback.resolvedShownSeconds = shown }
        return feedback
    }

    func button(_ s: YAMLSection) -> ButtonConfiguration {
        defer { s.finish(known: ["device", "key_code", "long_press_seconds", "discreet_presses", "discreet_long_press"]) }
        var button = ButtonConfiguration()
        if let device = absolutePath(s, "device") { button.device = device }
        if let code = s.int("key_code", in: 1...0x2ff) { button.keyCode = code }
        if let long = s.double("long_press_seconds", in: 0.2...30) { button.longPressSeconds = long }
        if let presses = s.int("discreet_presses", in: 0...10) {
            // One press would make every bump against a door a call for help.
            if presses == 1 {
                s.report(s.node("discreet_presses"), "discreet_presses", "1 would raise an SOS on any bump: use 0 (off) or 2 to 10")
            } else {
                button.discreetPresses = presses
            }
        }
        if let discreet = s.bool("discreet_long_press") { button.discreetLongPress = discreet }
        return button
    }

    func power(_ s: YAMLSection) -> PowerConfiguration {
        defer { s.finish(known: ["supply_directory", "low_percent", "critical_percent", "poll_seconds"]) }
        var power = PowerConfiguration()
        if let directory = absolutePath(s, "supply_directory") { power.supplyDirectory = directory }
        if let low = s.int("low_percent", in: 1...99) { power.lowPercent = low }
        if let critical = s.int("critical_percent", in: 0...98) { power.criticalPercent = critical }
        if let seconds = s.double("poll_seconds", in: 1...3600) { power.pollSeconds = seconds }
        if power.criticalPercent >= power.lowPercent {
            s.report(s.node("critical_percent"), "critical_percent", "must be below low_percent (\(power.lowPercent))")
        }
        return power
    }

    /// `run: {code: CITY10K, show_to_spectators: true, share_health_with_organiser: false}`;
    /// nil when the section is absent.
    func run(_ s: YAMLSection) -> RunConfiguration? {
        defer { s.finish(known: ["code", "show_to_spectators", "share_health_with_organiser"]) }
        guard s.node("code") != nil || s.node("show_to_spectators") != nil else { return nil }
        guard let code = s.requiredString("code") else { return nil }
        guard RunParticipation.isValidCode(code) else {
            s.report(s.node("code"), "code", "a run code is 4-32 of A-Z 0-9 -, as the organiser gave it")
            return nil
        }
        return RunConfiguration(
            code: code,
            showToSpectators: s.bool("show_to_spectators") ?? false,
            shareHealth: s.bool("share_health_with_organiser") ?? false
        )
    }

    func status(_ s: YAMLSection) -> StatusConfiguration {
        defer { s.finish(known: ["socket"]) }
        var status = StatusConfiguration()
        if let path = absolutePath(s, "socket") {
            if path.utf8.count > 107 {
                s.report(s.node("socket"), "socket", "path longer than a Unix socket allows (107 bytes)")
            } else {
                status.socketPath = path
            }
        }
        return status
    }

    func metrics(_ s: YAMLSection) -> MetricsConfiguration {
        defer { s.finish(known: ["enabled", "port"]) }
        var metrics = MetricsConfiguration()
        if let enabled = s.bool("enabled") { metrics.enabled = enabled }
        if let port = s.int("port", in: 0...65535) { metrics.port = port }
        return metrics
    }

    func logging(_ s: YAMLSection) -> LoggingConfiguration {
        defer { s.finish(known: ["level"]) }
        var logging = LoggingConfiguration()
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        if let level = s.choice("level", levels.map { ($0, $0) }) { logging.level = level }
        return logging
    }

    func shutdown(_ s: YAMLSection) -> ShutdownConfiguration {
        defer { s.finish(known: ["grace_seconds"]) }
        var shutdown = ShutdownConfiguration()
        if let grace = s.double("grace_seconds", in: 0.1...300) { shutdown.graceSeconds = grace }
        return shutdown
    }

    static func isBluetoothAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && $0.allSatisfy(\.isHexDigit) }
    }

    static func isAdapterName(_ text: String) -> Bool {
        guard text.hasPrefix("hci") else { return false }
        let number = text.dropFirst(3)
        return !number.isEmpty && number.count <= 3 && number.allSatisfy(\.isASCIINumber)
    }

    static func isServerURL(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }
}

extension Character {
    fileprivate var isASCIINumber: Bool { isASCII && isNumber }
}

/// Sizes as people write them: `10 MB`, `512KiB`, `1.5 GB`, or plain bytes.
enum ByteSize {
    static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isNumber || $0 == "." || $0 == "_" }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let number = Double(digits.replacingOccurrences(of: "_", with: "")), number >= 0 else { return nil }
        let multipliers: [String: Double] = [
            "": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1_000_000, "mb": 1_000_000, "g": 1_000_000_000,
            "gb": 1_000_000_000, "kib": 1024, "mib": 1_048_576, "gib": 1_073_741_824,
        ]
        guard let multiplier = multipliers[unit] else { return nil }
        let bytes = number * multiplier
        guard bytes < Double(Int.max) else { return nil }
        return Int(bytes)
    }
}
