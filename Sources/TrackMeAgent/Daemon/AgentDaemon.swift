import Foundation
public import Logging
public import Prometheus
public import ServiceLifecycle
public import UnixSignals

/// The running agent: one `ServiceGroup` holding the shell's services around the pipeline's.
///
/// The seam for the pipeline: pass its long-running parts as `services` (BLE link, gpsd
/// reader, SOS engine, store, sync — in start order; they are shut down in reverse) and its
/// `AgentControl` as `control`. The group is laid out as
///
///     [status server, metrics endpoint] + services + [systemd notifier]
///
/// so the control socket is the first thing up and the last thing down (`status` answers during
/// shutdown), and systemd hears READY=1 after everything started and STOPPING=1 before
/// anything stops. SIGTERM and SIGINT start a graceful shutdown bounded by
/// `configuration.shutdown.graceSeconds`; after that the remaining services are cancelled.
/// A service that returns or throws shuts the whole group down gracefully (so the store still
/// commits) and `run()` rethrows the error, for systemd's `Restart=on-failure`.
public struct AgentDaemon: Sendable {
    public let configuration: AgentConfiguration
    public let statusServer: StatusServer
    /// nil when metrics are off in the configuration.
    public let metricsEndpoint: MetricsEndpoint?
    public let serviceGroup: ServiceGroup

    /// Binds the status socket and the metrics port now (so failures surface before anything
    /// starts) and builds the service group.
    ///
    /// - Parameters:
    ///   - services: the pipeline's services, in start order.
    ///   - metricsRegistry: the registry the executable bootstrapped swift-metrics with; the
    ///     endpoint serves it.
    ///   - readiness: awaited (concurrently with the services starting) before systemd is told
    ///     READY=1; pass "the store is open and the first gpsd connection attempt was made" or
    ///     similar. nil: ready as soon as the group starts (the sockets are already bound).
    ///   - gracefulShutdownSignals: tests pass `[]` and trigger shutdown themselves.
    public init(
        configuration: AgentConfiguration,
        services: [any Service],
        control: any AgentControl,
        logger: Logger,
        metricsRegistry: PrometheusCollectorRegistry,
        environment: [String: String]? = nil,
        readiness: (@Sendable () async throws -> Void)? = nil,
        gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint]
    ) throws {
        self.configuration = configuration
        let environment = environment ?? ProcessInfo.processInfo.environment
        let metricsFactory = PrometheusMetricsFactory(registry: metricsRegistry)
        statusServer = try StatusServer.bind(
            socketPath: configuration.status.socketPath,
            control: control,
            logger: logger,
            metricsFactory: metricsFactory
        )
        do {
            metricsEndpoint =
                configuration.metrics.enabled
                ? try MetricsEndpoint.bind(port: configuration.metrics.port, registry: metricsRegistry, logger: logger) : nil
        } catch {
            // Leave no socket behind for a daemon that never ran.
            statusServer.discard()
            throw error
        }
        let notifier = SystemdNotifierService(
            notifier: try SystemdNotifier(environment: environment),
            watchdogInterval: SystemdNotifier.watchdogInterval(environment: environment),
            readyStatus: "monitoring \(configuration.server.deviceID)",
            logger: logger,
            metricsFactory: metricsFactory,
            readiness: readiness
        )

        var shell: [(any Service, String)] = [(statusServer, "status-server")]
        if let metricsEndpoint { shell.append((metricsEndpoint, "metrics-endpoint")) }
        let all = shell + services.map { ($0, String(describing: type(of: $0))) } + [(notifier, "systemd-notifier")]
        var groupConfiguration = ServiceGroupConfiguration(
            services: all.map { service, name in
                .init(
                    service: service,
                    successTerminationBehavior: .gracefullyShutdownGroup,
                    failureTerminationBehavior: .gracefullyShutdownGroup,
                    serviceName: name
                )
            },
            gracefulShutdownSignals: gracefulShutdownSignals,
            cancellationSignals: [],
            logger: logger
        )
        groupConfiguration.maximumGracefulShutdownDuration = .milliseconds(Int64(configuration.shutdown.graceSeconds * 1000))
        // A service that ignores cancellation for this long is hung: crash so systemd restarts us.
        groupConfiguration.maximumCancellationDuration = .seconds(5)
        serviceGroup = ServiceGroup(configuration: groupConfiguration)
    }

    /// Runs until graceful shutdown completes; rethrows the first service failure.
    public func run() async throws {
        try await serviceGroup.run()
    }

    /// Builds and runs the daemon in one call.
    public static func run(
        configuration: AgentConfiguration,
        services: [any Service],
        control: any AgentControl,
        logger: Logger,
        metricsRegistry: PrometheusCollectorRegistry,
        readiness: (@Sendable () async throws -> Void)? = nil
    ) async throws {
        try await AgentDaemon(
            configuration: configuration,
            services: services,
            control: control,
            logger: logger,
            metricsRegistry: metricsRegistry,
            readiness: readiness
        ).run()
    }
}
