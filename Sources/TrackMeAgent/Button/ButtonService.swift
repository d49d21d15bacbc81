import Logging
public import ServiceLifecycle
import TrackMeCore

/// The SOS button: the reader's presses and a tick every 100 ms (so a hold raises the SOS the
/// moment it reaches the long-press time) go through `ButtonMachine`; its SOS events go to the
/// pipeline through `PipelineControl`, as `trackme-agent sos` and `safe` do.
public struct ButtonService: Service {
    let reader: ButtonReader
    let handler: ButtonHandler
    let clock: any Clock<Duration>

    init(reader: ButtonReader, machine: ButtonMachine, control: PipelineControl, clock: any Clock<Duration>, logger: Logger) {
        self.reader = reader
        self.handler = ButtonHandler(machine: machine, control: control, clock: clock, logger: logger)
        self.clock = clock
    }

    public func run() async {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        do { try await clock.sleep(for: .milliseconds(100), tolerance: .milliseconds(20)) } catch { return }
                        await handler.receive(.tick)
                    }
                }
                for await event in reader.events() {
                    switch event {
                    case .down: await handler.receive(.down)
                    case .up: await handler.receive(.up)
                    case .unavailable: break  // logged by the reader
                    }
                }
                group.cancelAll()
            }
        }
    }
}

/// Owns the press machine; performs what it decides.
actor ButtonHandler {
    private var machine: ButtonMachine
    private let control: PipelineControl
    private let stopwatch: Stopwatch
    private let logger: Logger

    init(machine: ButtonMachine, control: PipelineControl, clock: any Clock<Duration>, logger: Logger) {
        self.machine = machine
        self.control = control
        self.stopwatch = Stopwatch(clock)
        self.logger = logger
    }

    /// When the current press began, for a taxi's short press.
    private var pressedAt: Duration?

    func receive(_ event: ButtonMachine.Event) async {
        if event == .tick && !machine.isPressed { return }
        let alert = control.pipeline.current.openAlert?.state
        let now = stopwatch.elapsed
        if event == .down, pressedAt == nil { pressedAt = now }
        let shortPress = event == .up && pressedAt.map { now - $0 < machine.longPress } == true
        if event == .up { pressedAt = nil }
        guard let sos = machine.receive(event, now: now, alert: alert) else {
            // A short press with no alert on a taxi terminal: available <-> unavailable.
            if shortPress, alert == nil, let state = try? await control.taxi(.toggle) {
                logger.notice("button pressed: taxi availability", metadata: ["taxi.state": "\(state.taxi?.rawValue ?? "")"])
            }
            return
        }
        switch sos {
        case .manualSOS:
            logger.notice("button held: manual SOS")
            _ = try? await control.triggerSOS()
        case .discreetSOS:
            // Logged like any SOS: the journal is read afterwards, not shown on the device.
            logger.notice("button pressed: discreet SOS")
            _ = try? await control.triggerSOS(discreet: true)
        case .cancel(let reason):
            logger.notice("button pressed: countdown cancelled", metadata: ["sos.cancel_reason": "\(reason.rawValue)"])
            _ = try? await control.markSafe(reason: reason)
        }
    }
}
