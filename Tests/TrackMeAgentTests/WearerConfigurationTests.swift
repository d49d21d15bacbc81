import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// The configuration keys of issue 19: feedback outputs, the button, the battery warning level.
@Suite("Configuration: the wearer's device")
struct WearerConfigurationTests {
    static let head = "person: {name: Ada, age: 67}\nserver: {url: https://x.org, device_id: pi-1}\n"

    @Test("defaults: no LED, no hook, no button, battery warning at 15 %, fallback after 30 s")
    func defaults() throws {
        let configuration = try ConfigurationLoader.parse(yaml: Self.head)
        #expect(configuration.feedback == FeedbackConfiguration())
        #expect(configuration.button.device == nil)
        #expect(configuration.button.longPressSeconds == 2)
        #expect(configuration.strap.batteryWarningPercent == 15)
        #expect(configuration.fallback.afterSeconds == 30)
    }

    @Test("every key, written, becomes the values; the summary shows them")
    func written() throws {
        let yaml =
            Self.head + """
                strap: {battery_warning_percent: 20}
                feedback:
                  led: trackme-status
                  patterns: {countdown: blink 50 50, acknowledged: "on", idle: "off"}
                  command: [hooks/buzz, --loud]
                  command_timeout_seconds: 2.5
                  resolved_seconds: 10
                button: {device: /dev/input/event3, key_code: 28, long_press_seconds: 3}
                """
        let configuration = try ConfigurationLoader.parse(yaml: yaml, baseDirectory: "/etc/trackme")
        #expect(configuration.strap.batteryWarningPercent == 20)
        #expect(configuration.feedback.led == "trackme-status")
        #expect(configuration.feedback.patterns == [.countdown: .blink(onMilliseconds: 50, offMilliseconds: 50), .acknowledged: .on, .idle: .off])
        #expect(configuration.feedback.command == ["/etc/trackme/hooks/buzz", "--loud"])
        #expect(configuration.feedback.commandTimeoutSeconds == 2.5)
        #expect(configuration.feedback.resolvedShownSeconds == 10)
        #expect(configuration.button == ButtonConfiguration(device: "/dev/input/event3", keyCode: 28, longPressSeconds: 3))
        let summary = configuration.summaryLines.joined(separator: "\n")
        #expect(summary.contains("LED /sys/class/leds/trackme-status"))
        #expect(summary.contains("button      key 28 on /dev/input/event3, long press 3 s = SOS"))
        #expect(summary.contains("battery     warn below 20%"))
    }

    static let bad: [(String, String)] = [
        (
            "feedback: {patterns: {countdown: flash}}",
            "line 3: feedback.patterns.countdown: expected off, on or \"blink ON_MS OFF_MS\" (1-60000 ms), got \"flash\""
        ),
        ("feedback: {patterns: {panic: \"on\"}}", "feedback.patterns.panic"),
        ("feedback: {led: leds/x}", "line 3: feedback.led: expected an LED name under /sys/class/leds or an absolute path, got \"leds/x\""),
        ("feedback: {command: []}", "line 3: feedback.command: expected a program and its arguments"),
        ("button: {long_press_seconds: 0.1}", "button.long_press_seconds"),
        ("button: {key_code: 0}", "button.key_code"),
        ("strap: {battery_warning_percent: 101}", "strap.battery_warning_percent"),
    ]

    @Test("bad values name their key", arguments: bad)
    func badValues(extra: String, expected: String) throws {
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: Self.head + extra) }
        let descriptions = error.issues.map(\.description)
        #expect(descriptions.contains { $0 == expected || $0.contains(expected + ":") }, "got: \(descriptions)")
    }

    @Test("the shipped example documents the new sections")
    func example() throws {
        let configuration = try ConfigurationLoader.load(path: Repository.path("hardware/trackme-agent.example.yaml"))
        #expect(configuration.strap.batteryWarningPercent == 15)
        #expect(configuration.feedback.patterns[.acknowledged] == .on)
        #expect(configuration.button.keyCode == 116)
        #expect(configuration.fallback.afterSeconds == 30)
    }
}
