import Foundation
import GRDB

/// The sealed person keys in a SQLite file of their own (default: the database's path with
/// `.keys` appended). `secure_delete`: a destroyed key's bytes are overwritten in the file,
/// not left in a free page; `synchronous = FULL`: a key is on disk before the first value
/// sealed under it is stored.
final class SQLitePersonKeyStore: PersonKeyStore {
    let path: String
    private let queue: DatabaseQueue
    var displayName: String { "sqlite:\(path)" }

    init(path: String) throws {
        self.path = path
        try PrivateFile.prepareDatabase(at: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        var migrator = DatabaseMigrator()
        // Append-only: a landed migration is never edited, a change is a new one.
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE person_keys (owner TEXT PRIMARY KEY, sealed BLOB NOT NULL);
                    CREATE TABLE key_store_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                    """
            )
        }
        try migrator.migrate(queue)
    }

    func adoptMasterKey(id: Int64) async throws -> Int64 {
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO key_store_meta (key, value) VALUES ('master_key_id', ?) ON CONFLICT DO NOTHING", arguments: [id])
            return try Int64.fetchOne(db, sql: "SELECT value FROM key_store_meta WHERE key = 'master_key_id'") ?? id
        }
    }

    func sealedKey(owner: String) async throws -> [UInt8]? {
        try await queue.read { db in
            try Data.fetchOne(db, sql: "SELECT sealed FROM person_keys WHERE owner = ?", arguments: [owner]).map { Array($0) }
        }
    }

    func keep(owner: String, sealed: [UInt8]) async throws -> [UInt8] {
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO person_keys (owner, sealed) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [owner, Data(sealed)])
            guard let kept = try Data.fetchOne(db, sql: "SELECT sealed FROM person_keys WHERE owner = ?", arguments: [owner]) else {
                throw StoreError(code: .inconsistent, message: "the key of \(owner) vanished from \(self.path)")
            }
            return Array(kept)
        }
    }

    func destroy(owner: String) async throws {
        try await queue.write { db in try db.execute(sql: "DELETE FROM person_keys WHERE owner = ?", arguments: [owner]) }
    }

    func owners() async throws -> [String] {
        try await queue.read { db in try String.fetchAll(db, sql: "SELECT owner FROM person_keys ORDER BY owner") }
    }

    func close() async throws {
        try queue.close()
    }
}

#if PostgreSQL
import Logging
import NIOCore
import PostgresNIO

/// The sealed person keys in a PostgreSQL database of their own, shared by every instance;
/// its backups are kept apart from the data's, for a short time (PERSONAL-DATA.md).
final class PostgresPersonKeyStore: PersonKeyStore {
    let displayName: String
    private let client: PostgresClient
    private let runner: Task<Void, Never>
    private let logger: Logger

    init(url: String, logger: Logger) async throws {
        var configuration = try PostgresServerStore.clientConfiguration(url: url)
        configuration.options.maximumConnections = 4
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        displayName = StorageLocation.redacted(url)
        runner = Task { await client.run() }
        do {
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query("SELECT pg_advisory_xact_lock(\(PostgresServerStore.migrationLock))", logger: logger)
                try await connection.query(
                    "CREATE TABLE IF NOT EXISTS person_keys (owner TEXT PRIMARY KEY, sealed BYTEA NOT NULL)",
                    logger: logger
                )
                try await connection.query(
                    "CREATE TABLE IF NOT EXISTS key_store_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
                    logger: logger
                )
            }
        } catch {
            runner.cancel()
            throw error
        }
    }

    func adoptMasterKey(id: Int64) async throws -> Int64 {
        try await client.query(
            "INSERT INTO key_store_meta (key, value) VALUES ('master_key_id', \(id)) ON CONFLICT DO NOTHING",
            logger: logger
        )
        for try await value in try await client.query("SELECT value FROM key_store_meta WHERE key = 'master_key_id'", logger: logger).decode(
            Int64.self
        ) {
            return value
        }
        return id
    }

    func sealedKey(owner: String) async throws -> [UInt8]? {
        for try await sealed in try await client.query("SELECT sealed FROM person_keys WHERE owner = \(owner)", logger: logger).decode(
            ByteBuffer.self
        ) {
            return Array(buffer: sealed)
        }
        return nil
    }

    func keep(owner: String, sealed: [UInt8]) async throws -> [UInt8] {
        try await client.query(
            "INSERT INTO person_keys (owner, sealed) VALUES (\(owner), \(ByteBuffer(bytes: sealed))) ON CONFLICT DO NOTHING",
            logger: logger
        )
        guard let kept = try await sealedKey(owner: owner) else {
            throw StoreError(code: .inconsistent, message: "the key of \(owner) vanished from \(displayName)")
        }
        return kept
    }

    /// The row goes, then a VACUUM of the table so that the dead tuple's bytes are not left in
    /// its pages (the WAL still holds them until it is recycled: PERSONAL-DATA.md).
    func destroy(owner: String) async throws {
        try await client.query("DELETE FROM person_keys WHERE owner = \(owner)", logger: logger)
        try await client.query("VACUUM person_keys", logger: logger)
    }

    func owners() async throws -> [String] {
        var owners: [String] = []
        for try await owner in try await client.query("SELECT owner FROM person_keys ORDER BY owner", logger: logger).decode(String.self) {
            owners.append(owner)
        }
        return owners
    }

    func close() async throws {
        runner.cancel()
    }
}
#endif
