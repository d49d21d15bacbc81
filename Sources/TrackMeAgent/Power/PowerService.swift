package import Logging
public import ServiceLifecycle
package import TrackMeCore

/// Reads the device's own power every `interval` and performs what `PowerWatch` decides: the
/// heartbeat carries the level, the wearer sees the battery warning, and on reaching critical a
/// heartbeat goes to the server at once, so a dispatcher who then sees the device fall silent
/// knows why.
public struct PowerService: Service {
    let directory: PowerSupplyDirectory
    let interval: Duration
    let monitor: PowerMonitor
    let clock: any Clock<Duration>

    package init(directory: PowerSupplyDirectory, interval: Duration, monitor: PowerMonitor, clock: any Clock<Duration>) {
        self.directory = directory
        self.interval = interval
        self.monitor = monitor
        self.clock = clock
    }

    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await poll()
                do { try await clock.sleep(for: interval, tolerance: interval / 10) } catch { return }
            }
        }
    }

    /// One reading of the supplies, and what the watch decides of it (the simulation calls
    /// this at its own virtual times).
    package func poll() async {
        await monitor.receive(directory.read())
    }
}

/// Owns the power watch; performs what it decides.
package actor PowerMonitor {
    private var watch: PowerWatch
    private var last: DevicePower?
    private let state: AgentStateCell
    private let feedback: FeedbackDriver?
    private let sendHeartbeat: @Sendable () async -> Void
    private let logger: Logger

    package init(
        settings: PowerWatch.Settings,
        state: AgentStateCell,
        feedback: FeedbackDriver?,
        sendHeartbeat: @escaping @Sendable () async -> Void,
        logger: Logger
    ) {
        self.watch = PowerWatch(settings: settings)
        self.state = state
        self.feedback = feedback
        self.sendHeartbeat = sendHeartbeat
        self.logger = logger
    }

    package var level: PowerWatch.Level { watch.level }

    package func receive(_ supplies: [DevicePower.Supply]) async {
        let power = DevicePower(supplies: supplies)
        if power?.source != last?.source {
            logger.info(
                "device power",
                metadata: ["power.source": "\(power?.source.rawValue ?? "unknown")", "power.percent": "\(power?.percent.map(String.init) ?? "-")"]
            )
        }
        last = power
        let events = watch.receive(power)
        let level = watch.level
        state.update { state, now in state.record(power: power, level: level, at: now) }
        for event in events {
            switch event {
            case .level(let level):
                logger.notice(
                    "device battery \(level.rawValue)",
                    metadata: ["power.percent": "\(power?.percent.map(String.init) ?? "-")"]
                )
                feedback?.receive(.deviceBatteryLow(level != .normal))
            case .sendLastHeartbeat:
                logger.warning("device battery critical: monitoring will stop when it runs out; telling the server")
                await sendHeartbeat()
            }
        }
    }
}
