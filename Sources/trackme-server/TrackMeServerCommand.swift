// Data path: the server's executable (TrackMeServer).

import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TrackMeServer
import UnixSignals

/// `trackme-server [serve] [--host 127.0.0.1] [--port 8080] [--db sqlite:PATH | --db postgres://...]
/// [--admin-token-file F]`: serves the TrackMe API until SIGTERM or SIGINT.
/// `trackme-server token list|revoke ID|rotate ID [--db ...]`: token lifecycle on the database.
@main
struct TrackMeServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trackme-server",
        abstract: "Serve the TrackMe API: batch ingest, alerts, and the dispatcher feed.",
        subcommands: [Serve.self, TokenCommand.self],
        defaultSubcommand: Serve.self
    )
}

/// Where the data is, for every verb.
struct StorageOptions: ParsableArguments {
    @Option(help: "sqlite:PATH, or postgres://user:password@host:port/database (needs a build with --traits PostgreSQL).")
    var db: String?

    var location: StorageLocation { db.map(StorageLocation.init(argument:)) ?? .defaultSQLite() }
}

func makeLogger() -> Logger {
    LoggingSystem.bootstrap(StreamLogHandler.standardError)
    var logger = Logger(label: "trackme-server")
    logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return logger
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the API (the default verb).",
        discussion: """
            With no --db the data is kept in $XDG_DATA_HOME/trackme/server.sqlite (or \
            ~/.local/share/trackme/server.sqlite). The admin token comes from --admin-token-file or \
            the TRACKME_ADMIN_TOKEN environment variable; without one the admin endpoints answer 401.
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "PEM certificate chain (leaf first) for HTTPS; reloaded on SIGHUP.")
    var tlsCert: String?

    @Option(help: "PEM private key of --tls-cert; reloaded on SIGHUP.")
    var tlsKey: String?

    @Flag(help: "Serve plain HTTP instead of HTTPS: allowed only on a loopback --host (a reverse proxy on this host, tests).")
    var plainHttp = false

    @Option(help: "Port to listen on (0 picks a free one).")
    var port = 8080

    @OptionGroup var storage: StorageOptions

    @Option(help: "File holding the admin bearer token (first line).")
    var adminTokenFile: String?

    @Option(help: "Seconds without a batch or heartbeat before a device is reported silent.")
    var silenceSeconds = 90

    @Option(
        help:
            "Days personal data is kept (readings, alert updates, closed alerts, feed events, retired people), unless --retain says otherwise for a kind."
    )
    var retentionDays = 60

    @Option(
        help: ArgumentHelp(
            "Days one kind of personal data is kept (repeatable), e.g. closed_alerts=365.",
            valueName: "kind=days"
        )
    )
    var retain: [String] = []

    @Option(help: "Largest request body in bytes (compressed and inflated).")
    var maxBodyBytes = 1 << 20

    @Option(help: "Seconds a connection may wait for a complete request head (idle keep-alive and slow headers).")
    var idleTimeoutSeconds: Double = 30

    @Option(help: "Seconds a console sign-in lasts.")
    var sessionSeconds = 12 * 3600

    @Flag(help: "Mark the console's session cookie Secure (set when clients reach the server over TLS).")
    var secureCookies = false

    @Option(help: "bcrypt cost for console passwords (4-31).")
    var bcryptCost = 12

    @Option(help: "Map tile URL template for the console (https://host/{z}/{x}/{y}.png); without it the track is drawn on a plain grid.")
    var tileURL: String?

    @Option(help: "Seconds between heartbeat events on the dispatcher feed (1-60); the console says \"not connected\" after two are missed.")
    var feedHeartbeatSeconds = 5

    @Option(help: "Executable run once per emergency contact to tell of an unacknowledged alert (an SMS gateway's CLI); see ConsoleConfiguration.")
    var contactNotifier: String?

    @Option(
        help:
            "Executable run once per message to an account's owner: the sign-up verification link, a password reset link, a burst of wrong passwords (see AccountsConfiguration). Without it there is no sign-up and no reset by link."
    )
    var accountNotifier: String?

    @Flag(help: "Turn people's own sign-up off (only an admin makes accounts).")
    var noSignUp = false

    @Option(
        help:
            "File of passwords known from breaches, one a line; a password people choose that is on it is refused (absent: the check is skipped, and the log says so)."
    )
    var breachedPasswordsFile: String?

    @Option(
        help:
            "File holding the key contact links are signed with (first line, 16+ bytes; share it between instances; default: the systemd credential contact-link-key, else random per process)."
    )
    var contactLinkKeyFile: String?

    @Option(
        help:
            "File holding the master key that seals each person's key (64 hex digits or 32 bytes, mode 0400; default: the systemd credential trackme-master-key, else personal data is kept in clear and the log says so)."
    )
    var masterKeyFile: String?

    @Option(
        help:
            "Where the sealed person keys are kept, apart from the data and its backups: a SQLite path or a postgres:// URL of a database of its own (default with SQLite: the database's path + .keys)."
    )
    var personKeyStore: String?

    @Option(help: "How contacts reach this server, for their links (https://console.example).")
    var publicURL: String?

    @Option(help: "Days a dispatcher's bearer token works after it is made or rotated (0: until revoked).")
    var dispatcherTokenDays = 90

    @Option(help: "Seconds a taxi driver has to answer a ride offer (10-15); silence is a refusal.")
    var rideAnswerSeconds: Int64 = 12

    @Option(help: "Seconds after an alert opened, unacknowledged, that its first emergency contact is told.")
    var contactAfterSeconds: Int = 180

    @Option(help: "Seconds between telling one contact and the next while nobody acknowledges.")
    var contactRepeatSeconds: Int = 120

    @Option(help: "Seconds from a request's head to the end of its body.")
    var bodyTimeoutSeconds: Double = 30

    @Option(help: "Open connections allowed from one address.")
    var maxConnectionsPerAddress = 32

    @Option(help: "Open connections allowed in all (keep under the file-descriptor limit).")
    var maxConnections = 1024

    @Option(help: "Requests per second from one address (0: no limit); the burst is 6 s worth.")
    var ratePerAddress: Double = 100

    @Option(help: "Requests per second with one token (0: no limit); the burst is 6 s worth.")
    var ratePerToken: Double = 20

    @Option(help: "New alerts per minute from one device (0: no limit); the burst is 10.")
    var alertsPerMinute: Double = 10

    @Option(help: "Sign-in attempts per minute from one address (0: no limit); the burst is 30.")
    var signInsPerMinute: Double = 30

    @Option(help: "Organisations registering per hour from one address (0: no limit); the burst is 3.")
    var registrationsPerHour: Double = 6

    @Option(help: "Threads hashing passwords at once (default: half the cores); the rest stay for device intake.")
    var passwordHashThreads: Int?

    @Option(help: "Exports, GPX tracks, statistics and group figures at once in the server (default: half the cores).")
    var heavyRequests: Int?

    @Option(
        help:
            "Readings per minute one account's (or token's) exports, GPX tracks and statistics may read (0: no limit); the burst is 10 minutes' worth."
    )
    var readingsPerMinute: Double = 600_000

    func validate() throws {
        switch (tlsCert, tlsKey, plainHttp) {
        case (.some, .some, false), (nil, nil, true): break
        case (.some, .some, true): throw ValidationError("--plain-http and --tls-cert/--tls-key exclude each other")
        case (nil, nil, false): throw ValidationError("give --tls-cert and --tls-key for HTTPS, or --plain-http (loopback only)")
        default: throw ValidationError("--tls-cert and --tls-key go together")
        }
        if plainHttp, !ServerConfiguration.isLoopback(host: host) {
            throw ValidationError("--plain-http is allowed only on a loopback --host, not \(host)")
        }
    }

    func run() async throws {
        let logger = makeLogger()
        var adminToken = ProcessInfo.processInfo.environment["TRACKME_ADMIN_TOKEN"]
        if let adminTokenFile {
            let text = try String(contentsOfFile: adminTokenFile, encoding: .utf8)
            adminToken = text.split(whereSeparator: \.isNewline).first.map(String.init)
        }
        if let token = adminToken, token.isEmpty { adminToken = nil }
        if adminToken == nil { logger.warning("no admin token: the admin endpoints are disabled") }

        func rate(_ perSecond: Double) -> RateLimit? {
            perSecond > 0 ? RateLimit(burst: max(1, Int(perSecond * 6)), perSecond: perSecond) : nil
        }
        var limits = ServerLimits(
            idleTimeout: .milliseconds(Int64(idleTimeoutSeconds * 1000)),
            bodyTimeout: .milliseconds(Int64(bodyTimeoutSeconds * 1000)),
            maxConnectionsPerAddress: maxConnectionsPerAddress,
            maxConnections: maxConnections,
            requestsPerAddress: rate(ratePerAddress),
            requestsPerToken: rate(ratePerToken),
            alertRaisesPerDevice: alertsPerMinute > 0 ? RateLimit(burst: 10, perSecond: alertsPerMinute / 60) : nil
        )
        limits.signInsPerAddress = signInsPerMinute > 0 ? RateLimit(burst: 30, perSecond: signInsPerMinute / 60) : nil
        limits.registrationsPerAddress = registrationsPerHour > 0 ? RateLimit(burst: 3, perSecond: registrationsPerHour / 3600) : nil
        if let passwordHashThreads {
            guard passwordHashThreads >= 1 else { throw ValidationError("--password-hash-threads must be at least 1") }
            limits.passwordHashThreads = passwordHashThreads
        }
        limits.readingsPerPrincipal =
            readingsPerMinute > 0 ? RateLimit(burst: max(1, Int(readingsPerMinute * 10)), perSecond: readingsPerMinute / 60) : nil
        if let heavyRequests {
            guard heavyRequests >= 1 else { throw ValidationError("--heavy-requests must be at least 1") }
            limits.heavyRequests = heavyRequests
        }
        guard (4...31).contains(bcryptCost) else { throw ValidationError("--bcrypt-cost must be 4-31") }
        guard sessionSeconds > 0 else { throw ValidationError("--session-seconds must be positive") }
        var configuration = ServerConfiguration(
            host: host,
            port: port,
            storage: storage.location,
            adminToken: adminToken,
            maxBodyBytes: maxBodyBytes,
            silenceThreshold: .seconds(silenceSeconds),
            retention: .seconds(retentionDays * 24 * 3600),
            limits: limits,
            tls: tlsCert.flatMap { cert in tlsKey.map { ServerTLS(certificateChainPath: cert, privateKeyPath: $0) } }
        )
        for text in retain {
            do {
                let (kind, period) = try RetentionPolicy.parsePeriod(text)
                configuration.retentionPeriods[kind] = period
            } catch {
                throw ValidationError("--retain: \(error.message)")
            }
        }
        configuration.console = ConsoleConfiguration(
            sessionLifetime: .seconds(sessionSeconds),
            secureCookies: secureCookies,
            bcryptCost: UInt8(bcryptCost),
            tileURL: tileURL
        )
        guard (1...60).contains(feedHeartbeatSeconds) else { throw ValidationError("--feed-heartbeat-seconds must be 1-60") }
        configuration.console.feedHeartbeat = .seconds(feedHeartbeatSeconds)
        // Under TLS the session cookie is Secure whether or not the flag was given.
        configuration.console.secureCookies = secureCookies || configuration.tls != nil
        configuration.console.contactNotifierCommand = contactNotifier
        configuration.accounts.notifierCommand = accountNotifier
        configuration.accounts.signUpOpen = !noSignUp
        configuration.accounts.breachedPasswordsFile = breachedPasswordsFile
        configuration.console.publicURL = publicURL
        guard contactAfterSeconds >= 0, contactRepeatSeconds >= 0 else {
            throw ValidationError("--contact-after-seconds and --contact-repeat-seconds must not be negative")
        }
        guard dispatcherTokenDays >= 0 else { throw ValidationError("--dispatcher-token-days must not be negative") }
        configuration.dispatcherTokenLifetime = dispatcherTokenDays == 0 ? nil : .seconds(dispatcherTokenDays * 24 * 3600)
        guard (10...15).contains(rideAnswerSeconds) else { throw ValidationError("--ride-answer-seconds must be 10-15 (003)") }
        configuration.rideAnswerWindow = .seconds(rideAnswerSeconds)
        configuration.console.scheduleContacts(first: .seconds(contactAfterSeconds), repeatEvery: .seconds(contactRepeatSeconds))
        configuration.console.contactLinkKeyFile = contactLinkKeyFile
        configuration.console.credentialsDirectory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
        configuration.personKeys = PersonKeyConfiguration(masterKeyFile: masterKeyFile, keyStore: personKeyStore.map(StorageLocation.init(argument:)))
        logger.info("trackme-server starting", metadata: ["server.store": "\(configuration.storage)"])
        let server = try await TrackMeServer(configuration: configuration, logger: logger)
        // Trapped before anything listens, so a SIGHUP never finds the default action (exit).
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        let group = ServiceGroup(
            configuration: .init(
                services: [server, CertificateReloader(server: server, hangups: hangups, logger: logger)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        try await group.run()
    }
}

/// `trackme-server token list|revoke|rotate`: works on the database directly, so it needs no
/// admin token, only access to the database; a running server refuses a revoked token on its
/// next request (it reads the token on every request).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "List, revoke or rotate bearer tokens.",
        subcommands: [List.self, Revoke.self, Rotate.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List tokens (id, role, device, created, expires); never secrets.")
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            let tokens = try await TokenAdministrator.with(storage.location, logger: makeLogger()) { try await $0.tokens() }
            for token in tokens {
                let expires = token.expiresMilliseconds.map { "\($0)" } ?? "never"
                print("\(token.tokenID)\t\(token.role.rawValue)\t\(token.deviceID ?? "-")\t\(token.createdMilliseconds)\t\(expires)")
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a token: refused from the next request on.")
        @Argument(help: "The token id (the part before the dot).") var tokenID: String
        @OptionGroup var storage: StorageOptions

        func run() async throws {
            try await TokenAdministrator.with(storage.location, logger: makeLogger()) { try await $0.revoke(tokenID: tokenID) }
            print("revoked \(tokenID)")
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace a token by a new one for the same role and device; prints the new token once."
        )
        @Argument(help: "The token id (the part before the dot).") var tokenID: String
        @OptionGroup var storage: StorageOptions
        @Option(help: "Days a rotated dispatcher token works (0: until revoked); device tokens never expire.")
        var dispatcherTokenDays = 90

        func run() async throws {
            guard dispatcherTokenDays >= 0 else { throw ValidationError("--dispatcher-token-days must not be negative") }
            let lifetime: Duration? = dispatcherTokenDays == 0 ? nil : .seconds(dispatcherTokenDays * 24 * 3600)
            let rotated = try await TokenAdministrator.with(storage.location, logger: makeLogger(), dispatcherTokenLifetime: lifetime) {
                try await $0.rotate(tokenID: tokenID)
            }
            print(rotated.token)
        }
    }
}

/// Reloads the TLS certificate and key on SIGHUP, keeping open connections; a bad file is
/// logged and the old certificate stays.
struct CertificateReloader: Service {
    let server: TrackMeServer
    let hangups: UnixSignalsSequence
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in hangups {
                do {
                    try server.reloadCertificates()
                } catch {
                    logger.error("TLS certificate reload failed; the old one stays", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
