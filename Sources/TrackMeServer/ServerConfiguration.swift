public import CoreMetrics
import Foundation
public import TrackMeCore

/// Where the server keeps its data.
public enum StorageLocation: Hashable, Sendable, CustomStringConvertible {
    /// One SQLite file (created with its folder if absent).
    case sqlite(path: String)
    /// A PostgreSQL URL, `postgres://user:password@host:port/database`; needs the package trait
    /// `PostgreSQL`.
    case postgres(url: String)

    /// Parses `--db`: `sqlite:PATH`, a bare path, or `postgres://...` / `postgresql://...`.
    public init(argument: String) {
        if argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://") {
            self = .postgres(url: argument)
        } else if argument.hasPrefix("sqlite:") {
            self = .sqlite(path: String(argument.dropFirst("sqlite:".count)))
        } else {
            self = .sqlite(path: argument)
        }
    }

    /// `$XDG_DATA_HOME/trackme/server.sqlite`, else `~/.local/share/trackme/server.sqlite`.
    public static func defaultSQLite() -> StorageLocation {
        defaultSQLite(environment: ProcessInfo.processInfo.environment)
    }

    static func defaultSQLite(environment: [String: String]) -> StorageLocation {
        let base: String
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = xdg
        } else if let home = environment["HOME"], !home.isEmpty {
            base = home + "/.local/share"
        } else {
            base = FileManager.default.currentDirectoryPath
        }
        return .sqlite(path: base + "/trackme/server.sqlite")
    }

    public var description: String {
        switch self {
        case .sqlite(let path): "sqlite:\(path)"
        case .postgres(let url): Self.redacted(url)
        }
    }

    /// The URL without its password, for logs.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "postgres://?" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "postgres://?"
    }
}

/// Everything `TrackMeServer` needs; the CLI and the simulation build one of these.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0 picks a free port; read the bound one from `TrackMeServer.boundPort()`.
    public var port: Int
    public var storage: StorageLocation
    /// What a stored batch survives, for the SQLite store (PostgreSQL keeps its own settings).
    public var durability: CommitDurability
    /// The admin bearer token in clear (from `--admin-token-file` or `TRACKME_ADMIN_TOKEN`); nil
    /// disables the admin HTTP API (devices can still be enrolled through `TrackMeServer`).
    public var adminToken: String?
    /// Largest request body accepted, before and after gzip inflation.
    public var maxBodyBytes: Int
    /// A device not heard from for this long raises `device_silent` on the feed.
    public var silenceThreshold: Duration
    /// How often devices are checked for silence.
    public var silenceCheckInterval: Duration
    /// How long personal data is kept, for every kind not in `retentionPeriods`
    /// (`RetentionPolicy`, 60 days by default).
    public var retention: Duration
    /// Periods per kind that differ from `retention` (`--retain KIND=DAYS`), e.g. closed alerts
    /// kept a year.
    public var retentionPeriods: [PersonalDataKind: Duration] = [:]
    /// How often the retention job runs.
    public var retentionInterval: Duration
    /// A wall time this far past the server's own clock is flagged `future`.
    public var futureTolerance: Duration
    /// Largest page of `GET /v1/devices/{id}/readings`.
    public var maxPageSize: Int
    /// Pending-connection queue of the listening socket: a fleet reconnecting at once (after an
    /// outage) must not be refused by a short queue. The kernel caps it at `somaxconn`.
    public var backlog: Int
    /// Schedules the periodic jobs (silence, retention); tests pass a `VirtualClock`.
    public var clock: any Clock<Duration>
    /// Drives the feed's tick (`console.feedHeartbeat`: heartbeats, and the fallback that finds other instances'
    /// events when notifications are lost): real time; a test that must tell which of the two
    /// delivered an event passes a `VirtualClock` it never moves.
    public var feedTickClock: any Clock<Duration> = ContinuousClock()
    /// The server's wall time in ms since the epoch: stamps receipt, judges device wall times.
    public var wallClock: @Sendable () -> Int64
    /// Timeouts, connection caps and rate limits (`Security/`).
    public var limits: ServerLimits
    /// HTTPS with this certificate and key; nil serves plain HTTP, which the server allows only
    /// on a loopback address (behind a reverse proxy on the same host, or for tests).
    public var tls: ServerTLS?
    /// Sessions, passwords and the map of the dispatcher console.
    public var console: ConsoleConfiguration = ConsoleConfiguration()
    /// Accounts people manage themselves: sign-up, reset links, password rules (`Accounts/`).
    public var accounts: AccountsConfiguration = AccountsConfiguration()
    /// How long a dispatcher's bearer token works after it is made or rotated; nil: until
    /// revoked. Device tokens never expire (a device cannot be re-enrolled unattended).
    public var dispatcherTokenLifetime: Duration? = ServerConfiguration.defaultDispatcherTokenLifetime
    public static let defaultDispatcherTokenLifetime: Duration = .seconds(90 * 24 * 3600)
    /// How long a taxi driver has to answer a ride offer (10-15 s, 003); silence is a refusal.
    public var rideAnswerWindow: Duration = .seconds(12)
    /// Below this many free bytes on the SQLite database's file system `/health` says
    /// `degraded`: a group commit of batches and its WAL growth need room before SQLite says full.
    public var minimumFreeBytes: Int64 = 16 << 20
    /// How long `/health` waits for the database before answering that it did not answer: a
    /// balancer's check must get an answer, and one that does not come in this time is itself
    /// the answer. Real time, not the injected clock: it bounds a wait on a real socket or file.
    public var healthProbeTimeout: Duration = ServerConfiguration.defaultHealthProbeTimeout
    public static let defaultHealthProbeTimeout: Duration = .seconds(3)
    /// Also receives every metric the server records (tests pass MetricsTestKit's `TestMetrics`);
    /// The master key and the key store of the per-person keys (`PersonKeys`).
    public var personKeys = PersonKeyConfiguration()
    /// `/metrics` always renders the server's own registry, whatever this is.
    public var metricsFactory: (any MetricsFactory)? = nil

    public init(
        host: String = "127.0.0.1",
        port: Int = 8080,
        storage: StorageLocation = .defaultSQLite(),
        durability: CommitDurability = .powerLoss,
        adminToken: String? = nil,
        maxBodyBytes: Int = 1 << 20,
        silenceThreshold: Duration = .seconds(90),
        silenceCheckInterval: Duration = .seconds(5),
        retention: Duration = .seconds(60 * 24 * 3600),
        retentionInterval: Duration = .seconds(3600),
        futureTolerance: Duration = .seconds(300),
        maxPageSize: Int = 1000,
        backlog: Int = 4096,
        clock: any Clock<Duration> = ContinuousClock(),
        wallClock: @escaping @Sendable () -> Int64 = ServerConfiguration.systemWallClock,
        limits: ServerLimits = ServerLimits(),
        tls: ServerTLS? = nil
    ) {
        self.host = host
        self.port = port
        self.storage = storage
        self.durability = durability
        self.adminToken = adminToken
        self.maxBodyBytes = maxBodyBytes
        self.silenceThreshold = silenceThreshold
        self.silenceCheckInterval = silenceCheckInterval
        self.retention = retention
        self.retentionInterval = retentionInterval
        self.futureTolerance = futureTolerance
        self.maxPageSize = maxPageSize
        self.backlog = backlog
        self.clock = clock
        self.wallClock = wallClock
        self.limits = limits
        self.tls = tls
    }

    /// Whether `host` only reaches this machine (`localhost`, 127.0.0.0/8, `::1`).
    public static func isLoopback(host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }
}

extension ServerConfiguration {
    /// The system's wall clock in ms since the epoch.
    @Sendable public static func systemWallClock() -> Int64 {
        Int64((Date().timeIntervalSince1970 * 1000).rounded())
    }
}
