public import Logging
public import ServiceLifecycle
import Synchronization
import TrackMeCore

/// The pipeline's side of the feedback: `receive` runs the pure `FeedbackMachine` under a lock
/// and hands a changed state to the outputs' queues. It never waits for an output: it is called
/// on the decision path (the SOS actions, the dispatch lane's events).
public final class FeedbackDriver: Sendable {
    private let machine: Mutex<FeedbackMachine>
    private let stopwatch: Stopwatch
    let ledStates: AsyncStream<FeedbackState>
    let hookStates: AsyncStream<FeedbackState>
    private let ledSink: AsyncStream<FeedbackState>.Continuation
    private let hookSink: AsyncStream<FeedbackState>.Continuation

    public init(machine: FeedbackMachine = FeedbackMachine(), clock: any Clock<Duration>) {
        self.machine = Mutex(machine)
        stopwatch = Stopwatch(clock)
        // The LED shows the newest state; the hook hears each of the last few, in order.
        (ledStates, ledSink) = AsyncStream.makeStream(of: FeedbackState.self, bufferingPolicy: .bufferingNewest(1))
        (hookStates, hookSink) = AsyncStream.makeStream(of: FeedbackState.self, bufferingPolicy: .bufferingNewest(8))
    }

    public func receive(_ event: FeedbackMachine.Event) {
        let now = stopwatch.elapsed
        guard let state = machine.withLock({ $0.receive(event, now: now) }) else { return }
        ledSink.yield(state)
        hookSink.yield(state)
    }

    /// What the outputs show now.
    public var shown: FeedbackState { machine.withLock { $0.shown } }
}

/// Performs the feedback: the LED and the hook, each in its own task so that a hook that hangs
/// delays neither the LED nor anything else; a tick every second lets a resolved alert's
/// display end. Output failures are logged (once per kind in a row) and never stop the service.
public struct FeedbackService: Service {
    /// What an output did (for tests and logs): the state shown, and the error if it failed.
    public enum Report: Hashable, Sendable {
        case led(FeedbackState, error: FeedbackOutputError?)
        case hook(FeedbackState, error: FeedbackOutputError?)
    }

    let driver: FeedbackDriver
    let led: LEDClassDevice?
    let patterns: [FeedbackState: LEDPattern]
    let hook: FeedbackHook?
    let clock: any Clock<Duration>
    let logger: Logger
    let report: @Sendable (Report) -> Void

    public init(
        driver: FeedbackDriver,
        led: LEDClassDevice?,
        patterns: [FeedbackState: LEDPattern] = LEDPattern.defaults,
        hook: FeedbackHook?,
        clock: any Clock<Duration>,
        logger: Logger,
        report: @escaping @Sendable (Report) -> Void = { _ in }
    ) {
        self.driver = driver
        self.led = led
        self.patterns = patterns
        self.hook = hook
        self.clock = clock
        self.logger = logger
        self.report = report
    }

    public func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                if let led {
                    group.addTask { await drive(led) }
                }
                if let hook {
                    group.addTask { await drive(hook) }
                }
                group.addTask {
                    while !Task.isCancelled {
                        do { try await clock.sleep(for: .seconds(1), tolerance: .milliseconds(100)) } catch { return }
                        driver.receive(.tick)
                    }
                }
            }
        }
    }

    private func drive(_ led: LEDClassDevice) async {
        var failing = false
        // A pattern left by an earlier run is replaced by what is true now.
        show(driver.shown, on: led, failing: &failing)
        for await state in driver.ledStates {
            show(state, on: led, failing: &failing)
        }
    }

    private func show(_ state: FeedbackState, on led: LEDClassDevice, failing: inout Bool) {
        do {
            try led.show(patterns[state] ?? LEDPattern.defaults[state] ?? .off)
            failing = false
            report(.led(state, error: nil))
        } catch {
            if !failing { logger.warning("feedback LED cannot be driven", metadata: ["feedback.error": "\(error)"]) }
            failing = true
            report(.led(state, error: error))
        }
    }

    private func drive(_ hook: FeedbackHook) async {
        for await state in driver.hookStates {
            do {
                try await hook.run(state)
                report(.hook(state, error: nil))
            } catch {
                logger.warning("feedback hook failed", metadata: ["feedback.state": "\(state.rawValue)", "feedback.error": "\(error)"])
                report(.hook(state, error: error))
            }
        }
    }
}
