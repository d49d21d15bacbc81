import CoreMetrics
import HTTPTypes
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
public import ServiceLifecycle
import Synchronization
public import TrackMeCore

/// The TrackMe server: the HTTP API over a store, with the silence and retention jobs.
///
/// ```swift
/// let server = try await TrackMeServer(configuration: .init(port: 0, storage: .sqlite(path: path)), logger: logger)
/// let credentials = try await server.enrolDevice(deviceID: "pi-0042", person: PersonProfile(name: "Ada", age: 70))
/// async let running: Void = server.run()   // or add it to a ServiceGroup
/// let port = try await server.boundPort()
/// ```
/// `run()` serves until its task is cancelled or the service group shuts down gracefully; then
/// the store is closed.
public final class TrackMeServer: Service, Sendable {
    public let configuration: ServerConfiguration
    let store: any ServerStore
    /// Device intake's store: only the ingest room (and the inspection helpers) hold it.
    let ingestStore: any IngestStore
    /// The runs room's store (and `RaceIngest`'s, which follows runners from intake).
    let runStore: any RunStore
    let hall: ServerHall
    let logger: Logger
    private let announcement = PortAnnouncement()
    /// The certificate new connections get; nil for plain HTTP on loopback.
    let certificates: TLSCertificates?
    /// Monotonic time on the injected clock since the server's start, for the retention job's
    /// clock guard.
    private let stopwatch: Stopwatch
    private let retentionGuard: Mutex<RetentionClockGuard>
    /// How long each kind of personal data is kept (`--retain`).
    let retentionPolicy: RetentionPolicy

    /// Opens (creating if needed) and migrates the store. Nothing listens until `run()`.
    public init(configuration requested: ServerConfiguration, logger: Logger) async throws {
        var configuration = requested
        var postgres = false
        if case .postgres = configuration.storage { postgres = true }
        let reserved = DescriptorBudget.serverOwn + (postgres ? DescriptorBudget.postgresConnections : DescriptorBudget.sqliteConnections)
        if let fileLimit = DescriptorBudget.raiseFileLimit(toward: configuration.limits.maxConnections + reserved) {
            do {
                let budget = try DescriptorBudget.fit(configuration.limits, fileLimit: fileLimit, postgres: postgres)
                if !budget.changes.isEmpty {
                    logger.warning(
                        "connection caps lowered to fit the open-file limit",
                        metadata: ["server.file_limit": "\(fileLimit)", "server.changes": "\(budget.changes.joined(separator: "; "))"]
                    )
                }
                configuration.limits = budget.limits
            } catch {
                throw ServerConfigurationError(message: "\(error)")
            }
        }
        if try configuration.console.loadContactLinkKey() == .ephemeral, configuration.console.contactNotifierCommand != nil {
            logger.warning(
                "contact link key is random for this process: links sent before a restart will not work",
                metadata: ["server.todo": "give --contact-link-key-file or the systemd credential \(ConsoleConfiguration.linkKeyCredential)"]
            )
        }
        self.configuration = configuration
        self.logger = logger
        if let tls = configuration.tls {
            certificates = try TLSCertificates(tls)
        } else {
            guard ServerConfiguration.isLoopback(host: configuration.host) else {
                throw ServerConfigurationError(
                    message: "plain HTTP is served only on loopback, not on \(configuration.host): configure a TLS certificate and key"
                )
            }
            certificates = nil
        }
        do {
            retentionPolicy = try RetentionPolicy(defaultPeriod: configuration.retention, periods: configuration.retentionPeriods)
        } catch {
            throw ServerConfigurationError(message: "retention: \(error.message)")
        }
        let personKeys = try await PersonKeys.open(
            configuration.personKeys,
            credentialsDirectory: configuration.console.credentialsDirectory,
            storage: configuration.storage,
            logger: logger
        )
        if personKeys.isOn {
            logger.info(
                "personal data sealed under per-person keys",
                metadata: ["server.master_key": "\(personKeys.masterKeyID ?? "")", "server.key_store": "\(personKeys.keyStoreName ?? "")"]
            )
        } else {
            // Notice, not warning: tests and the simulation run this way by design.
            logger.notice(
                "no master key: contacts, notes and readings are stored in clear and erasure cannot reach backups",
                metadata: ["server.todo": "give --master-key-file or the systemd credential \(PersonKeyConfiguration.masterKeyCredential)"]
            )
        }
        let stores: (hall: any ServerStore, ingest: any IngestStore)
        do {
            stores = try await Self.openStores(
                configuration.storage,
                durability: configuration.durability,
                personKeys: personKeys,
                logger: logger
            )
        } catch {
            try? await personKeys.close()
            throw error
        }
        let (store, ingestStore) = stores
        do {
            try await store.migrate()
            let sealed = try await store.sealClearPersonalData()
            if sealed > 0 { logger.notice("personal data in clear sealed under per-person keys", metadata: ["server.values": "\(sealed)"]) }
        } catch {
            try? await store.close()
            try? await personKeys.close()
            throw error
        }
        self.store = store
        self.ingestStore = ingestStore
        stopwatch = Stopwatch(configuration.clock)
        // A damaged database is reported below rather than stopping the start here.
        let persisted = (try? await store.trustedWallTime()) ?? nil
        let wallAtStart = configuration.wallClock()
        if persisted == nil { try? await store.setTrustedWallTime(wallAtStart) }
        retentionGuard = Mutex(RetentionClockGuard(trustedWall: persisted ?? wallAtStart, restarted: persisted != nil, monotonicNow: .zero))
        let authenticator = Authenticator(adminToken: configuration.adminToken, store: store, wallClock: configuration.wallClock)
        let notifier = FeedNotifier()
        let metrics = ServerMetrics(also: configuration.metricsFactory)
        let databaseHealth = DatabaseHealth()
        let runStore = try Self.runStore(for: store)
        self.runStore = runStore
        let fleetStore = try Self.fleetStore(store)
        let rides = RideDesk(
            store: fleetStore,
            settings: RideDispatch.Settings(answerWindowMilliseconds: configuration.rideAnswerWindow.milliseconds),
            wallClock: configuration.wallClock
        )
        let services = RoomServices(configuration: configuration, authenticator: authenticator, notifier: notifier, metrics: metrics, logger: logger)
        hall = ServerHall(
            store: store,
            configuration: configuration,
            authenticator: authenticator,
            notifier: notifier,
            metrics: metrics,
            heavyRequests: HeavyRequestGate(limit: configuration.limits.heavyRequests),
            logger: logger,
            ingest: IngestRoom(
                store: ingestStore,
                services: services,
                databaseHealth: databaseHealth,
                runs: RaceIngest(runs: runStore, store: store, logger: logger),
                rides: rides
            ),
            alerts: AlertsRoom(store: store, services: services),
            runs: RunsRoom(store: runStore, services: services),
            fleet: FleetRoom(store: fleetStore, desk: rides, services: services),
            contacts: ContactsRoom(store: store, services: services),
            care: CareRoom(store: store, services: services),
            people: PeopleRoom(
                store: store,
                services: services,
                heavyWork: WorkPool(threads: configuration.limits.heavyRequests, queueLimit: 2 * configuration.limits.heavyRequests, niceness: 10),
                readingBudget: configuration.limits.readingsPerPrincipal.map(ReadingBudget.init(limit:))
            ),
            access: AccessRoom(
                store: store,
                services: services,
                passwords: PasswordHasher(
                    cost: configuration.console.bcryptCost,
                    threads: configuration.limits.passwordHashThreads,
                    queueLimit: configuration.limits.passwordHashQueue
                ),
                signInGuard: SignInGuard(
                    limits: configuration.limits,
                    rules: try Self.passwordRules(configuration.accounts, logger: logger),
                    notices: AccountNotices(configuration.accounts, clock: configuration.clock, logger: logger)
                )
            ),
            pages: PagesRoom(console: configuration.console),
            databaseHealth: databaseHealth
        )
        // A database that opens and migrates may still be damaged inside (a flipped page):
        // checked once at start, reported by /health and /metrics, and ingest is refused.
        if let problem = await store.integrityProblem() {
            hall.databaseHealth.databaseProblem = problem
            logger.error(
                "database failed its integrity check; ingest refused",
                metadata: ["server.store": "\(store.displayName)", "server.problem": "\(problem)", "server.todo": "\(DatabaseHealth.whatToDo)"]
            )
        }
    }

    /// Where the data is, as logged (`sqlite:/path`, or the PostgreSQL URL without password).
    public var storeDescription: String { configuration.storage.description }

    public func run() async throws {
        let configuration = self.configuration
        let logger = self.logger
        let announcement = self.announcement
        let storeDescription = self.storeDescription
        let hall = self.hall
        let scheme = certificates == nil ? "http" : "https"
        var jobs: [any Service] = [
            PeriodicJob(interval: configuration.silenceCheckInterval, clock: configuration.clock, logger: logger) { [self] in
                _ = try await checkSilence()
            },
            PeriodicJob(interval: configuration.retentionInterval, clock: configuration.clock, logger: logger) { [self] in
                // The group figures' summaries first: a day about to leave the readings is
                // summarised before it goes. A roll-up that fails does not stop the purge.
                do {
                    try await rollUpGroupFigures()
                } catch {
                    logger.error("group figures roll-up failed; the summaries stay as they were until the next pass", metadata: ["error": "\(error)"])
                }
                _ = try await applyRetention()
            },
            // A wall-clock tick, not a business schedule: finds feed events other instances
            // appended and sends each stream its heartbeat.
            PeriodicJob(interval: configuration.console.feedHeartbeat, clock: configuration.feedTickClock, logger: logger) {
                hall.notifier.notify(.tick)
            },
        ]
        // Several instances on one PostgreSQL: another instance's append wakes this one's
        // streams through the database's notifications, not the 5 s tick.
        if let following = store as? any FeedFollowing {
            jobs.append(FeedListener(store: following, notifier: hall.notifier, clock: ContinuousClock(), logger: logger))
        }
        if configuration.console.contactNotifierCommand != nil {
            jobs.append(
                PeriodicJob(interval: configuration.silenceCheckInterval, clock: configuration.clock, logger: logger) { [self] in
                    _ = try await escalateToContacts()
                }
            )
        }
        let application = Application(
            responder: ListeningResponder(router: hall.makeRouter().buildResponder()),
            server: ServerChannels.builder(limits: configuration.limits, metrics: hall.metrics, tls: certificates),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: nil,
                backlog: configuration.backlog,
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.limits.maxConnections, logger: logger)
            ),
            services: jobs,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                announcement.announce(port)
                logger.info(
                    "trackme-server listening",
                    metadata: [
                        "server.address": "\(scheme)://\(configuration.host):\(port)", "server.store": "\(storeDescription)",
                    ]
                )
            },
            logger: logger
        )
        do {
            try await application.run()
        } catch {
            announcement.fail(error)
            hall.notifier.finishAll()
            hall.endIdleThreads()
            try? await store.close()
            throw error
        }
        announcement.fail(CancellationError())
        hall.notifier.finishAll()
        hall.endIdleThreads()
        try await store.close()
    }

    /// Reads the TLS certificate and key files again (the CLI calls this on SIGHUP): new
    /// connections get the new certificate, open ones keep theirs. On failure the old one stays
    /// and the error is thrown. Without TLS it does nothing.
    public func reloadCertificates() throws {
        guard let certificates else { return }
        try certificates.reload()
        logger.notice("TLS certificate reloaded", metadata: ["server.certificate": "\(certificates.files.certificateChainPath)"])
    }

    /// The port the server listens on, once it does (useful with `port: 0`).
    public func boundPort() async throws -> Int {
        try await announcement.wait()
    }

    /// Enrols a device (as `POST /v1/devices` does) and returns its token, shown only this once.
    public func enrolDevice(deviceID: String, person: PersonProfile) async throws -> DeviceCredentials {
        try await ServerAdministration(store: store, wallClock: configuration.wallClock).enrolDevice(deviceID: deviceID, person: person)
    }

    /// Creates a dispatcher token (as `POST /v1/dispatchers` does).
    public func createDispatcher(name: String? = nil) async throws -> DispatcherCredentials {
        try await ServerAdministration(
            store: store,
            wallClock: configuration.wallClock,
            dispatcherTokenLifetime: configuration.dispatcherTokenLifetime
        ).createDispatcher(name: name)
    }

    /// One pass of the silence job: devices not heard from for `silenceThreshold` get a
    /// `device_silent` event. Returns their ids.
    @discardableResult
    public func checkSilence() async throws -> [String] {
        let now = configuration.wallClock()
        let silenced = try await store.markSilentDevices(
            lastSeenBefore: now - configuration.silenceThreshold.milliseconds,
            nowMilliseconds: now
        )
        if !silenced.isEmpty {
            hall.metrics.devicesSilenced.increment(by: silenced.count)
            hall.notifier.notify()
            logger.info("devices silent", metadata: ["server.devices": "\(silenced.joined(separator: ","))"])
        }
        return silenced
    }

    /// One pass of the retention job: for every kind of personal data, deletes what is older
    /// than its period (`RetentionPolicy`), unless the wall clock jumped ahead. Returns the rows
    /// deleted per kind (empty when refused).
    @discardableResult
    public func applyRetention() async throws -> [PersonalDataKind: Int] {
        let wall = configuration.wallClock()
        let monotonic = stopwatch.elapsed
        let decision = retentionGuard.withLock { $0.decide(wallMilliseconds: wall, monotonicNow: monotonic) }
        switch decision {
        case .refuse(let ahead):
            let reason = "wall clock \(ahead / 1000) s ahead of the last trusted time; retention deletes nothing until it is corrected"
            hall.databaseHealth.retentionRefusal = reason
            hall.metrics.retentionRefusals.increment()
            logger.warning("retention refused: the wall clock jumped ahead", metadata: ["server.ahead_ms": "\(ahead)"])
            return [:]
        case .act:
            hall.databaseHealth.retentionRefusal = nil
            try await store.setTrustedWallTime(wall)
        }
        var deleted: [PersonalDataKind: Int] = [:]
        for cutoff in retentionPolicy.cutoffs(nowMilliseconds: wall) {
            let count = try await store.applyRetention(cutoff, nowMilliseconds: wall)
            deleted[cutoff.kind] = count
            if count > 0 {
                hall.metrics.recordRetention(cutoff.kind, deleted: count)
                logger.info("retention deleted", metadata: ["server.kind": "\(cutoff.kind.rawValue)", "server.deleted": "\(count)"])
            }
        }
        // A person the job removed goes from the key store too, and with it from the backups.
        if store.personKeys.isOn, (deleted[.retiredPeople] ?? 0) > 0 {
            let kept = Set(try await store.deviceRows().map(\.deviceID))
            let destroyed = try await store.personKeys.destroyKeys(except: kept)
            if destroyed > 0 { logger.info("retention destroyed person keys", metadata: ["server.keys": "\(destroyed)"]) }
        }
        return deleted
    }

    /// How many readings the store holds now (for the simulation's and benchmarks' checks).
    public func storedReadingCount() async throws -> Int64 {
        try await store.counts().readings
    }

    /// The fleet room's store over the hall's database connection.
    static func fleetStore(_ hall: any ServerStore) throws -> any FleetStore {
        if let sqlite = hall as? SQLiteServerStore { return SQLiteFleetStore(sqlite) }
        #if PostgreSQL
        if let postgres = hall as? PostgresServerStore { return PostgresFleetStore(postgres) }
        #endif
        throw StoreError(code: .badConfiguration, message: "no fleet store for \(hall.displayName)")
    }

    static func openStore(_ location: StorageLocation, durability: CommitDurability = .powerLoss, logger: Logger) async throws -> any ServerStore {
        try await openStores(location, durability: durability, logger: logger).hall
    }

    /// The runs room's store over the hall's database connection.
    static func runStore(for hall: any ServerStore) throws -> any RunStore {
        if let sqlite = hall as? SQLiteServerStore { return SQLiteRunStore(sqlite) }
        #if PostgreSQL
        if let postgres = hall as? PostgresServerStore { return PostgresRunStore(postgres) }
        #endif
        throw StoreError(code: .badConfiguration, message: "no runs store for \(hall.displayName)")
    }

    /// The hall's store and device intake's, on one database connection (SQLite pool or
    /// PostgreSQL client).
    static func openStores(
        _ location: StorageLocation,
        durability: CommitDurability = .powerLoss,
        personKeys: PersonKeys = .off,
        logger: Logger
    ) async throws -> (hall: any ServerStore, ingest: any IngestStore) {
        switch location {
        case .sqlite(let path):
            let store = try SQLiteServerStore(path: path, durability: durability, personKeys: personKeys)
            return (store, SQLiteIngestStore(store))
        case .postgres(let url):
            #if PostgreSQL
            let store = try await PostgresServerStore(url: url, logger: logger, personKeys: personKeys)
            return (store, PostgresIngestStore(store))
            #else
            _ = url
            throw StoreError(
                code: .badConfiguration,
                message: "this build has no PostgreSQL support; build with `--traits PostgreSQL`"
            )
            #endif
        }
    }
}

/// Runs `body` every `interval` on `clock` until cancelled or shut down; a failing pass is
/// logged and the next one runs on time.
struct PeriodicJob: Service {
    let interval: Duration
    let clock: any Clock<Duration>
    let logger: Logger
    let body: @Sendable () async throws -> Void

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    try await clock.sleep(for: interval)
                    do {
                        try await body()
                    } catch is CancellationError {
                        return
                    } catch {
                        logger.warning("periodic job failed", metadata: ["error": "\(error)"])
                    }
                }
            }
        } catch is CancellationError {
            // Shutting down is how this job ends, not a failure of the service group.
        }
    }
}

/// Hands the bound port to whoever waits for it.
final class PortAnnouncement: Sendable {
    private struct State {
        var result: Result<Int, any Error>?
        var waiters: [CheckedContinuation<Int, any Error>] = []
    }

    private let state = Mutex(State())

    func announce(_ port: Int) { settle(.success(port)) }

    func fail(_ error: any Error) { settle(.failure(error)) }

    private func settle(_ result: Result<Int, any Error>) {
        let waiters = state.withLock { s -> [CheckedContinuation<Int, any Error>] in
            guard s.result == nil else { return [] }
            s.result = result
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    func wait() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let result = state.withLock { s -> Result<Int, any Error>? in
                if let result = s.result { return result }
                s.waiters.append(continuation)
                return nil
            }
            if let result { continuation.resume(with: result) }
        }
    }
}
