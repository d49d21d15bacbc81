#if PostgreSQL
import Foundation
import Logging
import PostgresNIO
import TrackMeCore

/// The store for deployments past one machine: several stateless server instances share one
/// PostgreSQL database (postgres-nio's pooled `PostgresClient`).
///
/// Ordering of the feed: a BIGSERIAL alone would let a reader see id 11 committed before id 10
/// (two transactions committing out of order), and a client resuming after 11 would miss 10.
/// Every transaction that appends to the feed first takes one transaction-scoped advisory lock,
/// so feed ids become visible in order. Feed events are rare (alerts, silences), so the lock costs
/// little; readings never take it.
///
/// TLS: `?sslmode=verify-full&sslrootcert=CA.pem` in the URL (`PostgresTLS`); without it the
/// connection is plain, for loopback, a Unix socket or a tunnel.
final class PostgresServerStore: ServerStore {
    private static let feedLock: Int64 = 7_270_001
    static let migrationLock: Int64 = 7_270_002

    let displayName: String
    let client: PostgresClient
    private let runner: Task<Void, Never>
    let logger: Logger

    /// Sealed per-person keys: contacts, notes and reading bodies are sealed and opened here.
    let personKeys: PersonKeys

    init(url: String, logger: Logger, personKeys: PersonKeys = .off) async throws {
        var configuration = try Self.clientConfiguration(url: url)
        configuration.options.maximumConnections = 32
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        self.personKeys = personKeys
        displayName = StorageLocation.redacted(url)
        runner = Task { await client.run() }
    }

    /// A client's settings from a `postgres://` URL (TLS from its query: `PostgresTLS`).
    static func clientConfiguration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else {
            throw StoreError(code: .badConfiguration, message: "cannot read PostgreSQL URL \(StorageLocation.redacted(url))")
        }
        let database = components.path.split(separator: "/").first.map(String.init)
        return PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user ?? "postgres",
            password: components.password,
            database: database,
            tls: try PostgresTLS.setting(components)
        )
    }

    func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await connection.query("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY)", logger: logger)
            let applied = try await collect(connection.query("SELECT name FROM schema_migrations", logger: logger).decode(String.self))
            // Append-only: a landed migration is never edited, a change is a new one.
            let all =
                Self.migrations + ConsoleSchema.postgres + CareSchema.postgres + PeopleSchema.postgres + RaceSchema.postgres + AlertsSchema.postgres
                + AccountSchema.postgres + FleetSchema.postgres
            for (name, statements) in all where !applied.contains(name) {
                for statement in statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO schema_migrations (name) VALUES (\(name))", logger: logger)
            }
        }
        await ensureReadingPartitionsLogged()
    }

    /// Day partitions ahead; a failure (a lock not granted in time, rows in the default
    /// partition where a day partition would go) is logged and tried again on the next pass:
    /// readings are still stored (in the default partition).
    func ensureReadingPartitionsLogged() async {
        do {
            let created = try await ensureReadingPartitions()
            if !created.isEmpty { logger.info("readings partitions created", metadata: ["server.partitions": "\(created.joined(separator: ","))"]) }
        } catch {
            logger.warning("readings partitions not created", metadata: ["error": "\(String(reflecting: error))"])
        }
    }

    static let migrations: [(String, [String])] = [
        (
            "v1",
            [
                """
                CREATE TABLE tokens (
                    id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, role TEXT NOT NULL, device_id TEXT, created_ms BIGINT NOT NULL)
                """,
                """
                CREATE TABLE devices (
                    device_id TEXT PRIMARY KEY, person TEXT NOT NULL, enrolled_ms BIGINT NOT NULL, last_seen_ms BIGINT,
                    silent BOOLEAN NOT NULL DEFAULT FALSE, heartbeat TEXT, dropped_by_budget BIGINT NOT NULL DEFAULT 0)
                """,
                """
                CREATE TABLE batches (
                    device_id TEXT NOT NULL, batch_seq BIGINT NOT NULL, received_ms BIGINT NOT NULL,
                    stored INTEGER NOT NULL DEFAULT 0, duplicates INTEGER NOT NULL DEFAULT 0,
                    acknowledged_alerts TEXT NOT NULL DEFAULT '[]', PRIMARY KEY (device_id, batch_seq))
                """,
                """
                CREATE TABLE readings (
                    device_id TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, placed_ms BIGINT NOT NULL,
                    received_ms BIGINT NOT NULL, wall_ms BIGINT, time_flag TEXT, body TEXT NOT NULL, PRIMARY KEY (device_id, seq))
                """,
                "CREATE INDEX readings_placed ON readings (placed_ms)",
                """
                CREATE TABLE alerts (
                    alert_id TEXT PRIMARY KEY, device_id TEXT NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL,
                    last_update_seq BIGINT NOT NULL, record TEXT NOT NULL, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL,
                    acknowledged BOOLEAN NOT NULL DEFAULT FALSE, acknowledged_ms BIGINT, acknowledged_by TEXT,
                    ack_delivered BOOLEAN NOT NULL DEFAULT FALSE)
                """,
                "CREATE INDEX alerts_undelivered_acks ON alerts (device_id) WHERE acknowledged AND NOT ack_delivered",
                """
                CREATE TABLE alert_updates (
                    alert_id TEXT NOT NULL, update_seq BIGINT NOT NULL, device_id TEXT NOT NULL, type TEXT NOT NULL,
                    body TEXT NOT NULL, received_ms BIGINT NOT NULL, PRIMARY KEY (alert_id, update_seq))
                """,
                "CREATE TABLE feed (id BIGSERIAL PRIMARY KEY, kind TEXT NOT NULL, data TEXT NOT NULL)",
            ]
        ),
        (
            // Store epochs and batch digests (WIRE.md, "Store epochs and conflicts"); the last
            // trusted wall time of the retention job.
            "v2-epochs-digest-clock",
            [
                "ALTER TABLE batches ADD COLUMN store_epoch TEXT",
                "ALTER TABLE batches ADD COLUMN digest TEXT",
                """
                CREATE TABLE device_epochs (
                    device_id TEXT NOT NULL, store_epoch TEXT NOT NULL, seq_floor BIGINT NOT NULL, batch_floor BIGINT NOT NULL,
                    first_seen_ms BIGINT NOT NULL, PRIMARY KEY (device_id, store_epoch))
                """,
                "CREATE TABLE server_clock (id INTEGER PRIMARY KEY CHECK (id = 1), trusted_wall_ms BIGINT NOT NULL)",
            ]
        ),
        // Dispatcher tokens end by themselves; device tokens have no expiry.
        ("v3-token-expiry", ["ALTER TABLE tokens ADD COLUMN expires_ms BIGINT"]),
        // Issue 22: readings partitioned by day; a batch in one round trip (PostgresIngestSchema).
        ("v4-readings-partitioned", [PostgresIngestSchema.partitionReadings]),
        ("v5-ingest-function", [PostgresIngestSchema.floorsFunction, PostgresIngestSchema.ingestFunction]),
        ("v6-ingest-group", [PostgresIngestSchema.groupFunction]),
    ]

    func insertToken(_ token: StoredToken, createdMilliseconds: Int64) async throws {
        try await client.query(
            """
            INSERT INTO tokens (id, secret_hash, role, device_id, created_ms, expires_ms)
            VALUES (\(token.id), \(token.secretHash), \(token.role.rawValue), \(token.deviceID), \(createdMilliseconds), \(token.expiresMilliseconds))
            """,
            logger: logger
        )
    }

    func token(id: String) async throws -> StoredToken? {
        for try await (hash, role, deviceID, expires) in try await client.execute(TokenLookup(id: id), logger: logger) {
            guard let role = Role(rawValue: role) else { return nil }
            return StoredToken(id: id, secretHash: hash, role: role, deviceID: deviceID, expiresMilliseconds: expires)
        }
        return nil
    }

    func enrolDevice(_ device: DeviceRow, token: StoredToken) async throws -> Bool {
        let person = try await personKeys.sealProfile(try StoreJSON.encode(device.person), owner: device.deviceID)
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO devices (device_id, person, enrolled_ms) VALUES (\(device.deviceID), \(person), \(device.enrolledMilliseconds))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).collect().count
            guard inserted == 1 else { return false }
            try await connection.query(
                """
                INSERT INTO tokens (id, secret_hash, role, device_id, created_ms)
                VALUES (\(token.id), \(token.secretHash), \(token.role.rawValue), \(token.deviceID), \(device.enrolledMilliseconds))
                """,
                logger: logger
            )
            return true
        }
    }

    func device(id: String) async throws -> DeviceRow? {
        let rows = try await client.query("SELECT person, enrolled_ms FROM devices WHERE device_id = \(id)", logger: logger)
        for try await (person, enrolled) in rows.decode((String, Int64).self) {
            let opened = try await personKeys.readableProfile(person, owner: id)
            return DeviceRow(deviceID: id, person: try StoreJSON.decode(opened), enrolledMilliseconds: enrolled)
        }
        return nil
    }

    func deviceContact(id: String) async throws -> (heartbeatJSON: String?, lastSeenMilliseconds: Int64?) {
        let rows = try await client.query("SELECT heartbeat, last_seen_ms FROM devices WHERE device_id = \(id)", logger: logger)
        for try await (heartbeat, lastSeen) in rows.decode((String?, Int64?).self) { return (heartbeat, lastSeen) }
        return (nil, nil)
    }

    func trustedWallTime() async throws -> Int64? {
        let rows = try await client.query("SELECT trusted_wall_ms FROM server_clock WHERE id = 1", logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        return nil
    }

    func setTrustedWallTime(_ milliseconds: Int64) async throws {
        try await client.query(
            """
            INSERT INTO server_clock (id, trusted_wall_ms) VALUES (1, \(milliseconds))
            ON CONFLICT (id) DO UPDATE SET trusted_wall_ms = excluded.trusted_wall_ms
            """,
            logger: logger
        )
    }

    /// PostgreSQL checks its pages itself (checksums, when the cluster has them); this reads the
    /// tables the server depends on once, so that a damaged relation shows at start.
    func integrityProblem() async -> String? {
        do {
            _ = try await client.query(
                "SELECT (SELECT count(*) FROM devices), (SELECT count(*) FROM batches), (SELECT count(*) FROM readings)",
                logger: logger
            ).collect()
            return nil
        } catch {
            return "\(String(reflecting: error))"
        }
    }

    /// One round trip: a standby (in recovery) or a read-only default refuses every write.
    /// Free space is the database server's to watch; it is not visible from here.
    func readiness(minimumFreeBytes: Int64) async -> StoreReadiness {
        var readiness = StoreReadiness()
        do {
            let rows = try await client.query(
                "SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only') = 'on'",
                logger: logger
            )
            for try await (recovery, readOnly) in rows.decode((Bool, Bool).self) where recovery || readOnly {
                readiness.writable = false
                readiness.problems.append(recovery ? "the PostgreSQL server is a standby (in recovery)" : "the PostgreSQL database is read-only")
            }
        } catch {
            readiness.answers = false
            readiness.writable = false
            readiness.problems.append("PostgreSQL does not answer: \(String(reflecting: error))")
        }
        return readiness
    }

    /// The feed's advisory lock, taken at the start of a transaction that may append to the
    /// feed and locks rows: whoever waits for it holds no row a group may wait for (see
    /// PostgresIngestSchema on deadlocks). Held to the commit; taking it again is free.
    static func lockFeed(_ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(feedLock))", logger: logger)
    }

    /// `at` is the server's wall time of the change: replay is bounded by it (`FeedReplay`).
    static func appendFeed(_ connection: PostgresConnection, kind: String, data: String, at: Int64? = nil, logger: Logger) async throws {
        try await connection.query("SELECT pg_advisory_xact_lock(\(feedLock))", logger: logger)
        try await connection.query("INSERT INTO feed (kind, data, at_ms) VALUES (\(kind), \(data), \(at))", logger: logger)
        // Delivered to every instance's `FeedListener` when (and only if) this transaction commits.
        try await connection.query(PostgresQuery(unsafeSQL: "NOTIFY \(feedChannel)"), logger: logger)
    }

    /// The channel feed appends are announced on (`LISTEN`/`NOTIFY`).
    static let feedChannel = "trackme_feed"

    func readingCount(_ query: ReadingQuery) async throws -> Int {
        let kind = query.kind?.rawValue
        let rows = try await client.query(
            """
            SELECT COUNT(*) FROM (SELECT 1 FROM readings
            WHERE device_id = \(query.deviceID) AND seq > \(query.afterSequence)
                AND (\(query.fromMilliseconds)::BIGINT IS NULL OR placed_ms >= \(query.fromMilliseconds))
                AND (\(query.toMilliseconds)::BIGINT IS NULL OR placed_ms < \(query.toMilliseconds))
                AND (\(kind)::TEXT IS NULL OR kind = \(kind))
            LIMIT \(query.limit)) AS counted
            """,
            logger: logger
        )
        var count: Int64 = 0
        for try await (value) in rows.decode(Int64.self) { count = value }
        return Int(count)
    }

    func readings(_ query: ReadingQuery) async throws -> [StoredReadingRow] {
        // NULL parameters switch the optional filters off, so one statement serves every query.
        let kind = query.kind?.rawValue
        let rows = try await client.query(
            """
            SELECT seq, body, placed_ms, received_ms, time_flag FROM readings
            WHERE device_id = \(query.deviceID) AND seq > \(query.afterSequence)
                AND (\(query.fromMilliseconds)::BIGINT IS NULL OR placed_ms >= \(query.fromMilliseconds))
                AND (\(query.toMilliseconds)::BIGINT IS NULL OR placed_ms < \(query.toMilliseconds))
                AND (\(kind)::TEXT IS NULL OR kind = \(kind))
            ORDER BY seq LIMIT \(query.limit)
            """,
            logger: logger
        )
        var result: [StoredReadingRow] = []
        for try await (seq, body, placed, received, flag) in rows.decode((Int64, String, Int64, Int64, String?).self) {
            result.append(
                StoredReadingRow(
                    sequence: seq,
                    body: body,
                    placedMilliseconds: placed,
                    receivedMilliseconds: received,
                    timeFlag: flag.flatMap(TimeFlag.init(rawValue:))
                )
            )
        }
        return try await personKeys.open(result, owner: query.deviceID)
    }

    func markSilentDevices(lastSeenBefore: Int64, nowMilliseconds: Int64) async throws -> [String] {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await Self.lockFeed(connection, logger: logger)
            // The UPDATE decides atomically: with several instances, one device goes silent
            // once. Rows are locked in device order, as ingest groups lock them.
            let rows = try await collect(
                connection.query(
                    """
                    UPDATE devices SET silent = TRUE
                    WHERE device_id IN (
                        SELECT device_id FROM devices WHERE NOT silent AND last_seen_ms IS NOT NULL AND last_seen_ms < \(lastSeenBefore)
                        ORDER BY device_id FOR UPDATE)
                    AND NOT silent AND last_seen_ms < \(lastSeenBefore)
                    RETURNING device_id, last_seen_ms
                    """,
                    logger: logger
                ).decode((String, Int64).self)
            ).sorted { $0.0 < $1.0 }
            for (id, lastSeen) in rows {
                let data = try StoreJSON.encode(
                    DeviceEventData(deviceID: id, lastSeenMilliseconds: lastSeen, silentForMilliseconds: nowMilliseconds - lastSeen)
                )
                try await Self.appendFeed(connection, kind: FeedKind.deviceSilent, data: data, at: nowMilliseconds, logger: logger)
            }
            return rows.map(\.0)
        }
    }

    func counts() async throws -> StoreCounts {
        let rows = try await client.query(
            """
            SELECT (SELECT count(*) FROM devices), (SELECT count(*) FROM readings), (SELECT count(*) FROM alerts),
                (SELECT count(*) FROM devices WHERE silent)
            """,
            logger: logger
        )
        for try await (devices, readings, alerts, silent) in rows.decode((Int64, Int64, Int64, Int64).self) {
            return StoreCounts(devices: devices, readings: readings, alerts: alerts, silentDevices: silent)
        }
        return StoreCounts(devices: 0, readings: 0, alerts: 0, silentDevices: 0)
    }

    func close() async throws {
        runner.cancel()
        // The client's pool ends once its connections have closed. One that has not ended by
        // then is left behind, said at warning: it was seen never to end (every connection
        // closed, the store's work done, `run()` still waiting), and a server stopping, or a
        // test, must not wait for it for ever.
        if await runner.result(within: .seconds(10)) == nil {
            logger.warning("the PostgreSQL client did not shut down within 10 s; left behind", metadata: ["server.store": "\(displayName)"])
        }
        try await personKeys.close()
    }
}

/// Every element of a row sequence.
func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var elements: [S.Element] = []
    for try await element in sequence { elements.append(element) }
    return elements
}

extension PostgresServerStore: FeedFollowing {
    /// Holds one pooled connection for as long as it listens.
    func followFeedAppends(_ changed: @escaping @Sendable () -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: Self.feedChannel) { notifications in
                for try await _ in notifications { changed() }
            }
        }
    }
}
#endif
