import Foundation
import Testing
import TrackMeAgent
import TrackMeCore

@Suite("Configuration file")
struct ConfigurationTests {
    static let minimal = """
        person:
          name: Ada
          age: 67
        server:
          url: https://trackme.example.org
          device_id: pi-0042
        """

    @Test("the shipped example file parses and says what it says")
    func exampleParses() throws {
        let configuration = try ConfigurationLoader.load(path: Repository.path("hardware/trackme-agent.example.yaml"))
        #expect(configuration.person.name == "Ada Example")
        #expect(configuration.person.restingHeartRate == 62)
        #expect(configuration.server.deviceID == "pi-0042")
        #expect(configuration.strap.selection == .nearest)
        #expect(configuration.strap.transport == .l2cap)
        #expect(configuration.sos[.heartRateHigh].persistenceSeconds == 10)
        #expect(configuration.sos[.contactLost].persistenceSeconds == 30)
        #expect(configuration.status.socketPath == "/run/trackme/agent.sock")
    }

    @Test("only the required keys: everything else takes its embedded default")
    func defaults() throws {
        let configuration = try ConfigurationLoader.parse(yaml: Self.minimal)
        #expect(configuration.person == PersonProfile(name: "Ada", age: 67))
        #expect(configuration.strap == StrapConfiguration(selection: .nearest, addressType: .public, adapter: "hci0", transport: .l2cap))
        #expect(configuration.gpsd == GPSDConfiguration(host: "127.0.0.1", port: 2947))
        #expect(configuration.store.diskBudgetBytes == 10_000_000)
        #expect(configuration.store.path == "/var/lib/trackme/agent.sqlite")
        #expect(configuration.server.tokenFile == "/etc/trackme/device-token")
        #expect(configuration.sos == SOSRuleOverrides())
        #expect(configuration.fallback.command == nil)
        #expect(configuration.status.socketPath == "/run/trackme/agent.sock")
        #expect(configuration.metrics == MetricsConfiguration(enabled: true, port: 9464))
        #expect(configuration.logging.level == "info")
        #expect(configuration.shutdown.graceSeconds == 10)
    }

    @Test("every section, fully written, becomes the values")
    func fullySpecified() throws {
        let yaml = """
            person: {name: Bo, age: 30, resting_hr: 55, min_hr: 40, max_hr: 180}
            strap:
              address: a0:9e:1a:12:34:56
              address_type: random
              adapter: hci1
              transport: socketpair
              trace: traces/hr.csv
              pace: 20
            gpsd: {host: gps.local, port: 12947}
            store: {path: /data/agent.sqlite, disk_budget: 512 KiB}
            server: {url: "http://10.0.0.2:8080", device_id: van-7, token_file: token}
            sos:
              countdown_seconds: 15
              rules:
                heart_rate_low: {enabled: false, threshold_bpm: 35, persistence_seconds: 20, countdown_seconds: 5}
                strap_silent: {persistence_seconds: 45}
                manual: {countdown_seconds: 3}
            fallback: {command: [bin/siren, --loud], after_seconds: 60}
            status: {socket: /tmp/x.sock}
            metrics: {enabled: false, port: 0}
            logging: {level: debug}
            shutdown: {grace_seconds: 2.5}
            """
        let c = try ConfigurationLoader.parse(yaml: yaml, baseDirectory: "/etc/trackme")
        #expect(c.person == PersonProfile(name: "Bo", age: 30, restingHeartRate: 55, minimumHeartRate: 40, maximumHeartRate: 180))
        #expect(c.strap.selection == .address("A0:9E:1A:12:34:56"))
        #expect(c.strap.addressType == .random)
        #expect(c.strap.adapter == "hci1")
        #expect(c.strap.transport == .socketPair(SimulatedStrapSettings(tracePath: "/etc/trackme/traces/hr.csv", pace: 20)))
        #expect(c.gpsd == GPSDConfiguration(host: "gps.local", port: 12947))
        #expect(c.store == StoreConfiguration(path: "/data/agent.sqlite", diskBudgetBytes: 524_288))
        #expect(c.server == ServerConfiguration(url: "http://10.0.0.2:8080", deviceID: "van-7", tokenFile: "/etc/trackme/token"))
        #expect(c.sos.countdownSeconds == 15)
        #expect(c.sos[.heartRateLow] == RuleOverride(enabled: false, thresholdBPM: 35, persistenceSeconds: 20, countdownSeconds: 5))
        #expect(c.sos[.strapSilent] == RuleOverride(persistenceSeconds: 45))
        #expect(c.sos[.manual] == RuleOverride(countdownSeconds: 3))
        #expect(c.sos.rules[.noPulse] == nil)
        #expect(c.fallback == FallbackConfiguration(command: ["/etc/trackme/bin/siren", "--loud"], afterSeconds: 60))
        #expect(c.status.socketPath == "/tmp/x.sock")
        #expect(c.metrics == MetricsConfiguration(enabled: false, port: 0))
        #expect(c.logging.level == "debug")
        #expect(c.shutdown.graceSeconds == 2.5)
    }

    /// Each bad file and the exact issue it must produce: line, key path and message.
    static let badFiles: [(String, String)] = [
        (minimal + "\nstrap:\n  adress: AA:BB:CC:DD:EE:FF\n", "line 8: strap.adress: unknown key (did you mean address?)"),
        (minimal + "\ngpsd:\n  port: 70000\n", "line 8: gpsd.port: 70000 is out of range (1...65535)"),
        (minimal + "\ngpsd:\n  port: seventy\n", "line 8: gpsd.port: expected a whole number between 1 and 65535, got \"seventy\""),
        (
            minimal + "\nstrap:\n  transport: simulatd\n",
            "line 8: strap.transport: \"simulatd\" is not one of l2cap, socketpair, simulated (did you mean simulated?)"
        ),
        (minimal + "\nstrap:\n  transport: simulated\n", "line 8: strap.trace: required when transport is socketpair or simulated"),
        (minimal + "\nstrap:\n  trace: x.csv\n", "line 8: strap.trace: only used with transport socketpair or simulated"),
        (minimal + "\nstrap:\n  address: near\n", "line 8: strap.address: expected \"nearest\" or an address like AA:BB:CC:DD:EE:FF, got \"near\""),
        (minimal + "\nstrap:\n  adapter: wlan0\n", "line 8: strap.adapter: expected an HCI adapter name like hci0, got \"wlan0\""),
        (
            minimal + "\nstore:\n  disk_budget: lots\n",
            "line 8: store.disk_budget: expected a size like 10 MB, 512 KiB or a number of bytes, got \"lots\""
        ),
        (minimal + "\nstore:\n  disk_budget: 1 KB\n", "line 8: store.disk_budget: 1 KB is too small (at least 64 KiB)"),
        (
            minimal + "\nsos:\n  rules:\n    heart_rate_hgh: {enabled: true}\n",
            "line 9: sos.rules.heart_rate_hgh: unknown key (did you mean heart_rate_high?)"
        ),
        (
            minimal + "\nsos:\n  rules:\n    no_pulse:\n      threshold_bpm: 30\n",
            "line 10: sos.rules.no_pulse.threshold_bpm: unknown key (only heart_rate_low and heart_rate_high take threshold_bpm)"
        ),
        (
            minimal + "\nsos:\n  rules:\n    heart_rate_low:\n      enabled: maybe\n",
            "line 10: sos.rules.heart_rate_low.enabled: expected true or false, got \"maybe\""
        ),
        (
            minimal + "\nlogging:\n  level: verbose\n",
            "line 8: logging.level: \"verbose\" is not one of trace, debug, info, notice, warning, error, critical"
        ),
        (minimal + "\nmetrics:\n  address: 0.0.0.0\n", "line 8: metrics.address: unknown key"),
        (minimal + "\nshutdown: 10\n", "line 7: shutdown: expected a mapping of keys to values"),
        (minimal + "\nsever: {}\n", "line 7: sever: unknown key (did you mean server?)"),
        ("person:\n  name: Ada\nserver:\n  url: https://x.org\n  device_id: pi-1\n", "line 1: person.age: required key is missing"),
        ("person:\n  name: Ada\n  age: 0\nserver:\n  url: https://x.org\n  device_id: pi-1\n", "line 3: person.age: 0 is out of range (1...120)"),
        (
            "person: {name: Ada, age: 50, min_hr: 90, max_hr: 80}\nserver: {url: https://x.org, device_id: pi-1}\n",
            "line 1: person.min_hr: must be below max_hr (80)"
        ),
        (
            "person: {name: Ada, age: 50}\nserver: {url: ftp://x.org, device_id: pi-1}\n",
            "line 2: server.url: expected an http:// or https:// URL with a host, got \"ftp://x.org\""
        ),
        (
            "person: {name: Ada, age: 50}\nserver: {url: https://x.org, device_id: pi 1}\n",
            "line 2: server.device_id: expected 1-64 characters of A-Z a-z 0-9 . _ -, got \"pi 1\""
        ),
        ("person: {name: Ada, age: 50}\nserver: {url: https://x.org}\n", "line 2: server.device_id: required key is missing"),
        ("person: {name: Ada, age: 50}\n", "server.url: required key is missing"),
    ]

    @Test("a bad key or value names its line and key path", arguments: badFiles)
    func badFile(yaml: String, expected: String) throws {
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: yaml) }
        #expect(error.code == .invalid)
        #expect(error.issues.map(\.description).contains(expected), "got: \(error.issues.map(\.description))")
    }

    @Test("server.urls: further instances after url, each once, in order; a bad one is named (issue 22)")
    func failoverURLs() throws {
        let yaml = """
            person: {name: Ada, age: 50}
            server: {url: https://a.example.org, device_id: pi-1, urls: [https://b.example.org, https://a.example.org, https://c.example.org]}
            """
        let configuration = try ConfigurationLoader.parse(yaml: yaml)
        #expect(configuration.server.allURLs == ["https://a.example.org", "https://b.example.org", "https://c.example.org"])
        #expect(try ConfigurationLoader.parse(yaml: Self.minimal).server.allURLs.count == 1)
        let bad = "person: {name: Ada, age: 50}\nserver: {url: https://a.org, device_id: pi-1, urls: [ftp://b.org]}\n"
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: bad) }
        #expect(error.issues.map(\.keyPath) == ["server.urls"], "got: \(error.issues.map(\.description))")
    }

    @Test("all issues are collected before anything starts, in line order")
    func collectsAll() throws {
        let yaml = """
            person: {name: Ada, age: 300}
            strap:
              adress: x
            gpsd: {port: 0}
            server: {url: https://x.org, device_id: pi-1}
            """
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: yaml) }
        #expect(error.issues.map(\.line) == [1, 3, 4])
        #expect(error.issues.map(\.keyPath) == ["person.age", "strap.adress", "gpsd.port"])
    }

    @Test("YAML syntax errors name their line")
    func syntaxError() throws {
        let yaml = "person:\n  name: Ada\n  age: [1, 2\nserver: {}\n"
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: yaml) }
        #expect(error.code == .syntax)
        let line = try #require(error.issues.first?.line)
        #expect((3...4).contains(line))
    }

    @Test("a key given twice is an error, not a silent override")
    func duplicateKey() throws {
        let yaml = Self.minimal + "\ngpsd:\n  port: 1\n  port: 2\n"
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: yaml) }
        #expect(error.code == .syntax)
        #expect(error.issues.first?.message.contains("duplicate key port") == true)
    }

    @Test("an empty file says what is required")
    func emptyFile() throws {
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: "") }
        #expect(error.issues.contains { $0.keyPath == "person.name" })
        #expect(error.issues.contains { $0.keyPath == "server.url" })
    }

    @Test("load names the file in every issue; a missing file is unreadable")
    func loadNamesFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("agent.yaml")
        try (Self.minimal + "\nstrap:\n  adress: x\n").write(toFile: path, atomically: true, encoding: .utf8)
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: path) }
        #expect(error.description == "\(path): line 8: strap.adress: unknown key (did you mean address?)")
        let missing = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: directory.file("nope.yaml")) }
        #expect(missing.code == .unreadable)
    }

    @Test("load checks that a simulated strap's trace exists, naming the line")
    func traceMustExist() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("agent.yaml")
        try (Self.minimal + "\nstrap:\n  transport: simulated\n  trace: hr.csv\n").write(toFile: path, atomically: true, encoding: .utf8)
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.load(path: path) }
        #expect(error.issues.map(\.description) == ["line 9: strap.trace: cannot read \(directory.path)/hr.csv"])
        try "t_ms,bpm\n".write(toFile: directory.file("hr.csv"), atomically: true, encoding: .utf8)
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.strap.transport == .socketPair(SimulatedStrapSettings(tracePath: directory.path + "/hr.csv", pace: 1)))
    }

    @Test("relative paths resolve against the file's directory")
    func relativePaths() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("agent.yaml")
        try (Self.minimal + "\nstore: {path: data/agent.sqlite}\nstatus: {socket: run/agent.sock}\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        let configuration = try ConfigurationLoader.load(path: path)
        #expect(configuration.store.path == directory.path + "/data/agent.sqlite")
        #expect(configuration.status.socketPath == directory.path + "/run/agent.sock")
    }

    @Test("the summary shows defaults so a person sees what will happen")
    func summary() throws {
        let lines = try ConfigurationLoader.parse(yaml: Self.minimal).summaryLines
        #expect(lines.contains("device      pi-0042"))
        #expect(lines.contains("strap       nearest 0x180D strap on hci0 via l2cap"))
        #expect(lines.contains("metrics     http://127.0.0.1:9464/metrics"))
    }
}
