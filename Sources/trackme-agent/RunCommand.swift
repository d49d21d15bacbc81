import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ServiceLifecycle
import TrackMeAgent

/// `trackme-agent run --config PATH`: the daemon.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the agent (under systemd: Type=notify, with the watchdog)."
    )

    @Option(name: .long, help: "The YAML configuration file.")
    var config: String = "/etc/trackme/agent.yaml"

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A file of seconds added to the wall clock the readings see, read again every second: rehearses a clock that jumps.",
            visibility: .hidden
        )
    )
    var wallClockOffsetFile: String?

    func run() async throws {
        let configuration: AgentConfiguration
        do {
            configuration = try ConfigurationLoader.load(path: config)
        } catch {
            ControlCall.printError(error.description)
            throw ExitCode(1)
        }

        // Only the executable bootstraps logging and metrics.
        let level = Logger.Level(rawValue: configuration.logging.level) ?? .info
        let style = JournaldLogHandler.detectedStyle()
        LoggingSystem.bootstrap { label in JournaldLogHandler(label: label, level: level, style: style) }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        Gauge(label: AgentMetricNames.startTime).record(Date().timeIntervalSince1970)

        let logger = Logger(label: "trackme.agent")
        logger.info(
            "starting",
            metadata: ["config": "\(config)", "device.id": "\(configuration.server.deviceID)"]
        )
        let pipeline: Pipeline.Parts
        do {
            pipeline = try Pipeline.make(
                configuration: configuration,
                timestamps: AgentTimestamps(wallClockOffsetFile: wallClockOffsetFile),
                logger: logger
            )
        } catch {
            logger.error("cannot start", metadata: ["error": "\(error)"])
            ControlCall.printError("\(error)")
            throw ExitCode(1)
        }
        do {
            try await AgentDaemon.run(
                configuration: configuration,
                // Last: 30 s after start, the executable's start-up pages are given back (install.md).
                services: pipeline.services + [ExecutablePagesService(logger: logger)],
                control: pipeline.control,
                logger: logger,
                metricsRegistry: registry
            )
        } catch {
            logger.error("stopped with an error", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
        if pipeline.wipe.isOrdered {
            // The server ordered it (the person's data was erased): the store is closed now.
            do {
                let report = try DeviceWipe.wipe(configuration)
                logger.notice(
                    "device wiped on the server's order; not syncing again until enrolled anew",
                    metadata: ["agent.removed": "\(report.removed.count)"]
                )
            } catch {
                logger.critical("wipe ordered by the server failed", metadata: ["error": "\(error)"])
                throw ExitCode(1)
            }
        }
        logger.info("stopped")
    }
}

/// The pipeline's services (in start order) and the control that answers the status socket,
/// built by `AgentAssembly` from the configuration (see `WIRING.md`).
enum Pipeline {
    struct Parts {
        var services: [any Service]
        var control: any AgentControl
        var wipe: WipeSignal
    }

    static func make(configuration: AgentConfiguration, timestamps: AgentTimestamps, logger: Logger) throws -> Parts {
        let parts = try AgentAssembly.make(configuration: configuration, timestamps: timestamps, logger: logger)
        return Parts(services: parts.services, control: parts.control, wipe: parts.wipe)
    }
}
