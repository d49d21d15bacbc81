import CInputShim
import Foundation
public import Logging
import SystemPackage
import TrackMeCore
import TrackMeSystem

/// Reads one key of a Linux input device (`/dev/input/eventN`, what `gpio-keys` and a Pi's
/// `dtoverlay=gpio-key` give) on a thread of its own, through `CInputShim`, and delivers its
/// presses and releases as an `AsyncStream`. A device that is missing or goes away is opened
/// again every `reopenInterval`; cancelling the stream stops the thread within `pollInterval`.
public struct ButtonReader: Sendable {
    public enum Event: Hashable, Sendable {
        case down
        case up
        /// The device could not be opened or read (logged once per run of failures).
        case unavailable(String)
    }

    public let path: String
    public let keyCode: UInt16
    public var pollInterval: Duration = .milliseconds(200)
    public var reopenInterval: Duration = .seconds(2)
    let logger: Logger

    public init(path: String, keyCode: Int, logger: Logger) {
        self.path = path
        self.keyCode = UInt16(clamping: keyCode)
        self.logger = logger
    }

    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.raise() }
        let reader = self
        BlockingThreads.shared.start {
            reader.loop(stop: stop) { continuation.yield($0) }
            continuation.finish()
        }
        return stream
    }

    /// The blocking loop: open, read until the device fails or `stop`; again after a pause.
    private func loop(stop: StopFlag, deliver: (Event) -> Void) {
        let pollMilliseconds = Int32(clamping: pollInterval.milliseconds)
        var failing = false
        while !stop.isRaised {
            let opened = tm_input_open(path)
            guard opened >= 0 else {
                if !failing {
                    logger.warning(
                        "button device cannot be opened",
                        metadata: ["button.device": "\(path)", "button.error": "\(Self.describe(opened))"]
                    )
                    deliver(.unavailable("cannot open \(path): \(Self.describe(opened))"))
                }
                failing = true
                pause(stop: stop)
                continue
            }
            let device = FileDescriptor(rawValue: opened)
            if tm_input_has_key(device.rawValue, keyCode) == 0 {
                logger.warning(
                    "button device does not report the configured key",
                    metadata: ["button.device": "\(path)", "button.key_code": "\(keyCode)"]
                )
            }
            if failing { logger.info("button device open", metadata: ["button.device": "\(path)"]) }
            failing = false
            var events = [tm_input_event](repeating: tm_input_event(), count: 16)
            var ended: Int32 = 0
            while !stop.isRaised {
                let count = events.withUnsafeMutableBufferPointer {
                    tm_input_read(device.rawValue, pollMilliseconds, $0.baseAddress, Int32($0.count), &ended)
                }
                if count < 0 {
                    logger.warning("button device read failed", metadata: ["button.device": "\(path)", "button.error": "\(Self.describe(count))"])
                    deliver(.unavailable("read \(path): \(Self.describe(count))"))
                    failing = true
                    break
                }
                if ended != 0 { break }
                for event in events.prefix(Int(count)) where event.type == UInt16(TM_INPUT_EV_KEY) && event.code == keyCode {
                    // 2 is the kernel's autorepeat while held: the hold is already known.
                    if event.value == 1 { deliver(.down) } else if event.value == 0 { deliver(.up) }
                }
            }
            try? device.close()
            if !stop.isRaised { pause(stop: stop) }
        }
    }

    private func pause(stop: StopFlag) {
        var left = reopenInterval
        while left > .zero, !stop.isRaised {
            let step = min(left, pollInterval)
            Thread.sleep(forTimeInterval: Double(step.components.seconds) + Double(step.components.attoseconds) / 1e18)
            left -= step
        }
    }

    /// The shim's `-errno` as text.
    private static func describe(_ negativeErrno: Int32) -> String {
        Errno(rawValue: -negativeErrno).description
    }
}
