import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TrackMeServer
import UnixSignals

/// `trackme-server [--host 127.0.0.1] [--port 8080] [--db sqlite:PATH | --db postgres://...]
/// [--admin-token-file F]`: serves the TrackMe API until SIGTERM or SIGINT.
@main
struct TrackMeServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trackme-server",
        abstract: "Serve the TrackMe API: batch ingest, alerts, and the dispatcher feed.",
        discussion: """
            With no --db the data is kept in $XDG_DATA_HOME/trackme/server.sqlite (or \
            ~/.local/share/trackme/server.sqlite). The admin token comes from --admin-token-file or \
            the TRACKME_ADMIN_TOKEN environment variable; without one the admin endpoints answer 401.
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8080

    @Option(help: "sqlite:PATH, or postgres://user:password@host:port/database (needs a build with --traits PostgreSQL).")
    var db: String?

    @Option(help: "File holding the admin bearer token (first line).")
    var adminTokenFile: String?

    @Option(help: "Seconds without a batch or heartbeat before a device is reported silent.")
    var silenceSeconds = 90

    @Option(help: "Days readings are kept.")
    var retentionDays = 60

    @Option(help: "Largest request body in bytes (compressed and inflated).")
    var maxBodyBytes = 1 << 20

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "trackme-server")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info

        var adminToken = ProcessInfo.processInfo.environment["TRACKME_ADMIN_TOKEN"]
        if let adminTokenFile {
            let text = try String(contentsOfFile: adminTokenFile, encoding: .utf8)
            adminToken = text.split(whereSeparator: \.isNewline).first.map(String.init)
        }
        if let token = adminToken, token.isEmpty { adminToken = nil }
        if adminToken == nil { logger.warning("no admin token: the admin endpoints are disabled") }

        let configuration = ServerConfiguration(
            host: host, port: port, storage: db.map(StorageLocation.init(argument:)) ?? .defaultSQLite(), adminToken: adminToken,
            maxBodyBytes: maxBodyBytes, silenceThreshold: .seconds(silenceSeconds), retention: .seconds(retentionDays * 24 * 3600))
        logger.info("trackme-server starting", metadata: ["server.store": "\(configuration.storage)"])
        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}
