import EdgeSync
public import Foundation
import GRDB
public import Logging
import ServiceLifecycle
public import TrackMeCore
public import TrackMeServer

/// A real `TrackMeServer` on a free loopback port, with a directory of its own (its SQLite file
/// unless `storage` says otherwise), running in a `ServiceGroup` until `stop()`. The one
/// in-process starter: TrackMeServerTests' `TestServer`, the agent's sync tests and `bench drain`
/// use it.
public final class InProcessServer: Sendable {
    public let server: TrackMeServer
    public let port: Int
    /// Removed by `stop()`.
    public let directory: URL
    public let configuration: ServerConfiguration
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    /// Everything the server and its service group logged lately, every level.
    public let recentLog: RecentLog

    public var baseURL: URL {
        // The literal is well formed; the fallback is never taken.
        URL(string: "http://127.0.0.1:\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// The SQLite file, when the server stores there.
    public var sqlitePath: String? {
        if case .sqlite(let path) = configuration.storage { return path }
        return nil
    }

    /// Starts the server. The configuration starts as: 127.0.0.1, port 0, `storage` (default: a
    /// SQLite file in a fresh temporary directory), its periodic jobs on a `VirtualClock` that
    /// nobody advances (they run only when a test says so), no rate limits; `configure` changes
    /// the rest.
    public static func start(
        storage: StorageLocation? = nil,
        logLevel: Logger.Level = .warning,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> InProcessServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let recentLog = RecentLog()
        let logger = recentLog.logger(label: "test.server", printedLevel: logLevel)
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: 0,
            storage: storage ?? .sqlite(path: directory.appendingPathComponent("server.sqlite").path),
            clock: VirtualClock(),
            limits: .withoutRateLimits
        )
        configure(&configuration)
        do {
            let server = try await TrackMeServer(configuration: configuration, logger: logger)
            let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
            let task = Task { try await group.run() }
            let port = try await server.boundPort()
            return InProcessServer(
                server: server,
                port: port,
                directory: directory,
                configuration: configuration,
                group: group,
                task: task,
                recentLog: recentLog
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    private init(
        server: TrackMeServer,
        port: Int,
        directory: URL,
        configuration: ServerConfiguration,
        group: ServiceGroup,
        task: Task<Void, any Error>,
        recentLog: RecentLog
    ) {
        self.server = server
        self.port = port
        self.directory = directory
        self.configuration = configuration
        self.group = group
        self.task = task
        self.recentLog = recentLog
    }

    /// Shuts the server down gracefully, as SIGTERM would, removes its directory, and returns
    /// how the server ended.
    ///
    /// A shutdown that has not ended after `limit` (a hang guard, not a speed check: a healthy
    /// one takes well under a second) is a failure that says what was still open and what the
    /// server logged last, at every level; the server is then cancelled, and left behind if even
    /// that does not end it, so that one stuck server fails its own test instead of stalling
    /// every test after it.
    @discardableResult
    public func stop(limit: Duration = .seconds(120)) async -> Result<Void, any Error> {
        await group.triggerGracefulShutdown()
        if let result = await task.result(within: limit) {
            try? FileManager.default.removeItem(at: directory)
            return result
        }
        let report =
            "the server on port \(port) did not end within \(limit) of a graceful shutdown (open event streams: \(server.feedFollowers)); "
            + "what it logged last:\n\(recentLog.text)"
        task.cancel()
        let cancelled = await task.result(within: .seconds(30))
        try? FileManager.default.removeItem(at: directory)
        return .failure(
            SupportFailure(report + "\n" + (cancelled.map { "once cancelled it ended: \($0)" } ?? "it did not end once cancelled either"))
        )
    }

    /// Runs `body` against a fresh server and stops it afterwards, whatever happens.
    public static func with<T>(
        storage: StorageLocation? = nil,
        configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (InProcessServer) async throws -> T
    ) async throws -> T {
        let running = try await start(storage: storage, configure: configure)
        do {
            let result = try await body(running)
            await running.stop()
            return result
        } catch {
            await running.stop()
            throw error
        }
    }

    // MARK: - What the server stored

    /// Enrols a device through the server's administration (as `POST /v1/devices` does) and
    /// returns its bearer token.
    public func enrol(_ deviceID: String, age: Int = 70) async throws -> String {
        try await server.enrolDevice(deviceID: deviceID, person: PersonProfile(name: "Test Wearer", age: age)).token
    }

    /// Every reading the server holds for the device, as the wire carried it, in sequence order.
    public func readings(deviceID: String) async throws -> [WireReading] {
        try await server.storedReadings(deviceID: deviceID)
    }

    /// Every alert update the server took, in the order it took them.
    public func alertUpdates() async throws -> [AlertUpdate] {
        try await server.storedAlertUpdates()
    }

    /// The sum of `dropped_by_budget` the device reported, as the server's SQLite file keeps it
    /// (no API shows it).
    public func droppedByBudget(deviceID: String) throws -> Int64 {
        guard let path = sqlitePath else { throw SupportFailure("droppedByBudget reads the SQLite file; this server stores elsewhere") }
        var options = GRDB.Configuration()
        options.readonly = true
        let database = try DatabaseQueue(path: path, configuration: options)
        defer { try? database.close() }
        return try database.read { db in
            try Int64.fetchOne(db, sql: "SELECT dropped_by_budget FROM devices WHERE device_id = ?", arguments: [deviceID]) ?? 0
        }
    }

    /// Acknowledges an alert as a dispatcher does (`POST /v1/alerts/{id}/ack` with a fresh
    /// dispatcher token); the device hears of it in its next batch answer.
    public func acknowledgeAlert(_ alertID: String) async throws {
        let dispatcher = try await server.createDispatcher(name: "test dispatcher")
        let response = try await CurlTransport(baseURL: baseURL, trust: .system).post(
            path: "v1/alerts/\(alertID)/ack",
            headers: ["Authorization": "Bearer \(dispatcher.token)"],
            body: []
        )
        guard response.status == 200 else {
            throw SupportFailure("acknowledge \(alertID): \(response.status) \(String(decoding: response.body, as: UTF8.self))")
        }
    }
}

public struct SupportFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
