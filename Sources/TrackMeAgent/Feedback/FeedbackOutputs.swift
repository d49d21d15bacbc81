import EdgeDispatch
import Foundation

/// How an LED shows one `FeedbackState`.
public enum LEDPattern: Hashable, Sendable {
    case off
    case on
    /// The kernel's `timer` trigger: on for `onMilliseconds`, off for `offMilliseconds`, repeating.
    case blink(onMilliseconds: Int, offMilliseconds: Int)

    /// The embedded defaults: fast blink while the wearer can still cancel, a quicker slow blink
    /// while the alert is on its way, a slow one once the server has it, steady when a person
    /// acknowledged, a long-on blink when resolved, a short blip every 3 s for a low strap battery,
    /// a long-on, short-off blink while a ride offer waits for the taxi driver's answer, and a
    /// short blink every 2 s for a rule's alert that calls nobody (AutomatedSOS off).
    public static let defaults: [FeedbackState: LEDPattern] = [
        .idle: .off,
        .countdown: .blink(onMilliseconds: 100, offMilliseconds: 100),
        .raised: .blink(onMilliseconds: 250, offMilliseconds: 250),
        .sent: .blink(onMilliseconds: 1000, offMilliseconds: 1000),
        .notDispatched: .blink(onMilliseconds: 250, offMilliseconds: 1750),
        .acknowledged: .on,
        .resolved: .blink(onMilliseconds: 1500, offMilliseconds: 500),
        .batteryLow: .blink(onMilliseconds: 50, offMilliseconds: 2950),
        .rideOffer: .blink(onMilliseconds: 500, offMilliseconds: 100),
    ]

    /// `off`, `on` or `blink ON_MS OFF_MS` (the configuration's spelling); nil if it is none of those.
    public init?(text: String) {
        let words = text.split(separator: " ", omittingEmptySubsequences: true)
        switch words.first {
        case "off" where words.count == 1: self = .off
        case "on" where words.count == 1: self = .on
        case "blink" where words.count == 3:
            guard let on = Int(words[1]), let off = Int(words[2]), (1...60_000).contains(on), (1...60_000).contains(off) else { return nil }
            self = .blink(onMilliseconds: on, offMilliseconds: off)
        default: return nil
        }
    }

    public var text: String {
        switch self {
        case .off: "off"
        case .on: "on"
        case .blink(let on, let off): "blink \(on) \(off)"
        }
    }
}

/// A feedback output that could not be driven, with the file or program and why.
public struct FeedbackOutputError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// A file of the LED's directory could not be opened or written.
        case ledWrite = "led_write"
        case hookLaunch = "hook_launch"
        case hookExit = "hook_exit"
        /// The hook ran longer than its time limit and was killed.
        case hookTimedOut = "hook_timed_out"
    }

    public var code: Code
    public var path: String
    public var message: String

    public var description: String { "\(code.rawValue) \(path): \(message)" }
}

/// A Linux LED-class device: `/sys/class/leds/NAME` (what `dtoverlay=gpio-led` gives on a Pi).
/// Patterns are written to its `trigger`, `brightness`, `delay_on` and `delay_off` files, which
/// must exist (the kernel makes them; a file that does not exist is an error, never created).
public struct LEDClassDevice: Sendable {
    public let directory: String

    /// `name` under `/sys/class/leds`, or an absolute path to the LED's directory.
    public init(_ nameOrPath: String) {
        directory = nameOrPath.hasPrefix("/") ? nameOrPath : "/sys/class/leds/" + nameOrPath
    }

    /// `max_brightness`, or 1 if it cannot be read.
    var maximumBrightness: Int {
        let text = (try? String(contentsOfFile: directory + "/max_brightness", encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)).flatMap { $0 > 0 ? $0 : nil } ?? 1
    }
}

/// A program the operator names (a buzzer script, a text-to-speech line), run with the state
/// as its last argument and as `TRACKME_FEEDBACK` in its environment. One that runs longer than `timeLimit` is killed (SIGKILL). The agent runs
/// it off the decision path: it never delays an alert, however it fails.
public struct FeedbackHook: Sendable {
    public var command: [String]
    public var timeLimit: Duration
    public var clock: any Clock<Duration>

    public init(command: [String], timeLimit: Duration = .seconds(5), clock: any Clock<Duration> = ContinuousClock()) {
        self.command = command
        self.timeLimit = timeLimit
        self.clock = clock
    }
}
