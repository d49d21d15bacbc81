public import CoreMetrics
public import Logging
public import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells systemd how the agent is doing: READY=1 when it starts, WATCHDOG=1 at half the
/// watchdog interval while it runs, STOPPING=1 when graceful shutdown begins.
///
/// Put it LAST in the service list: the group starts services in order (so the sockets and
/// pipeline are up before READY=1) and shuts them down in reverse (so systemd hears
/// STOPPING=1 first). Without `NOTIFY_SOCKET` it just waits for shutdown. Its pings stop if
/// the process hangs the cooperative pool, which is exactly when systemd should restart it.
public struct SystemdNotifierService: Service {
    private let notifier: SystemdNotifier?
    private let watchdogInterval: Duration?
    private let clock: any Clock<Duration>
    private let logger: Logger
    private let readyStatus: String
    private let metricsFactory: any MetricsFactory
    private let readiness: (@Sendable () async throws -> Void)?

    /// - Parameter readiness: awaited before READY=1 (e.g. "the store is open"); when it
    ///   throws, the service throws and the group shuts down without ever being ready.
    public init(
        notifier: SystemdNotifier?,
        watchdogInterval: Duration?,
        clock: any Clock<Duration> = ContinuousClock(),
        readyStatus: String = "running",
        logger: Logger,
        metricsFactory: (any MetricsFactory)? = nil,
        readiness: (@Sendable () async throws -> Void)? = nil
    ) {
        self.readiness = readiness
        self.notifier = notifier
        self.watchdogInterval = watchdogInterval
        self.clock = clock
        self.readyStatus = readyStatus
        self.logger = logger
        self.metricsFactory = metricsFactory ?? MetricsSystem.factory
    }

    /// From the process environment systemd set up.
    public init(environment: [String: String], logger: Logger) throws {
        try self.init(
            notifier: SystemdNotifier(environment: environment),
            watchdogInterval: SystemdNotifier.watchdogInterval(environment: environment),
            logger: logger
        )
    }

    public func run() async throws {
        if let readiness { try await readiness() }
        guard let notifier else {
            logger.debug("no NOTIFY_SOCKET, not notifying systemd")
            try? await gracefulShutdown()
            return
        }
        notify(notifier, ["READY=1", "STATUS=\(readyStatus)", "MAINPID=\(getpid())"])
        logger.info("told systemd we are ready", metadata: ["systemd.notify_socket": "\(notifier.socketName)"])
        if let watchdogInterval {
            let pings = Counter(label: AgentMetricNames.watchdogPings, dimensions: [], factory: metricsFactory)
            let period = watchdogInterval / 2
            // Ends on graceful shutdown (the sleep is cancelled) or task cancellation.
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    do {
                        try await clock.sleep(for: period, tolerance: nil)
                    } catch {
                        return
                    }
                    notify(notifier, ["WATCHDOG=1"])
                    pings.increment()
                }
            }
        } else {
            try? await gracefulShutdown()
        }
        notify(notifier, ["STOPPING=1", "STATUS=stopping"])
    }

    private func notify(_ notifier: SystemdNotifier, _ assignments: [String]) {
        do {
            try notifier.send(assignments)
        } catch {
            logger.info("systemd notification failed", metadata: ["error": "\(error)"])
        }
    }
}
