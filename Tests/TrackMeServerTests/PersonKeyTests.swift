import Foundation
import GRDB
import Logging
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
import PostgresNIO
#endif

/// Each person's contacts, notes and reading bodies sealed under a key of their own, the keys
/// sealed by a master key and kept apart from the data; erasure destroys the key, so a copy of
/// the database taken before no longer opens (PERSONAL-DATA.md, "Encryption and
/// crypto-shredding").
@Suite("Per-person keys and crypto-shredding")
struct PersonKeyTests {
    static let notes = "door code 4711"
    static let contactName = "Yorick Quixote"

    /// A master key file (64 hex digits, owner-only) in `directory`.
    static func masterKey(in directory: URL, name: String = "master.key", mode: Int = 0o400) throws -> String {
        let path = directory.appendingPathComponent(name).path
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try #require(FileManager.default.createFile(atPath: path, contents: Data((hex + "\n").utf8), attributes: [.posixPermissions: mode]))
        return path
    }

    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// The key store a backend's test uses: beside the SQLite file, or a PostgreSQL database of its own.
    static func keyStore(_ backend: Backend) async throws -> StorageLocation? {
        switch backend {
        case .sqlite: return nil
        case .postgres: return .postgres(url: try await PostgresFixture.shared.createDatabase())
        }
    }

    static func enrolWithSecrets(_ s: TestServer, _ deviceID: String) async throws -> String {
        let person: [String: Any] = [
            "name": "Zelda", "age": 81, "notes": notes,
            "contacts": [["name": contactName, "relation": "son", "phone": "+44 7700 900123"]],
        ]
        let enrolled = try await s.client.send("POST", "/v1/devices", token: TestServer.adminToken, json: ["device_id": deviceID, "person": person])
        try #require(enrolled.status == 201, "\(enrolled.text)")
        return try #require(enrolled.object["token"] as? String)
    }

    /// What a store holding a copy of the database reveals, opened as the server opens it: the
    /// master key and the key store as they are now.
    struct Revealed {
        var notes: String?
        var contacts: [String]
        var positions: [String]
        var readingsError: PersonKeyError?
    }

    static func reveal(
        _ copy: StorageLocation,
        masterKey: String,
        keyStore: StorageLocation,
        deviceID: String
    ) async throws -> Revealed {
        let logger = Logger(label: "test.copy")
        let keys = try await PersonKeys.open(
            PersonKeyConfiguration(masterKeyFile: masterKey, keyStore: keyStore),
            credentialsDirectory: nil,
            storage: copy,
            logger: logger
        )
        let store = try await TrackMeServer.openStores(copy, personKeys: keys, logger: logger).hall
        do {
            let device = try #require(try await store.device(id: deviceID))
            var revealed = Revealed(notes: device.person.notes, contacts: (device.person.contacts ?? []).map(\.name), positions: [])
            do {
                let rows = try await store.readings(
                    ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: 0, limit: 100)
                )
                revealed.positions = rows.map(\.body).filter { $0.contains("44.07") }
            } catch let error as PersonKeyError {
                revealed.readingsError = error
            }
            try await store.close()
            return revealed
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// A copy of the data's database as an operator's backup takes it: the SQLite file alone
    /// (online backup), or `pg_dump` of the data's database restored into a new one.
    static func backup(_ s: TestServer, into directory: URL) async throws -> StorageLocation {
        if let sqlite = s.server.store as? SQLiteServerStore {
            let path = directory.appendingPathComponent("backup.sqlite").path
            let copy = try DatabaseQueue(path: path)
            try sqlite.pool.backup(to: copy)
            try copy.close()
            return .sqlite(path: path)
        }
        #if PostgreSQL
        if let postgres = s.server.store as? PostgresServerStore {
            _ = postgres
            guard case .postgres(let url) = s.server.configuration.storage, let components = URLComponents(string: url),
                let port = components.port, let name = components.path.split(separator: "/").first.map(String.init)
            else {
                throw PostgresFixture.Failure(description: "no PostgreSQL URL")
            }
            let copyURL = try await PostgresFixture.shared.createDatabase()
            let copyName = try #require(URLComponents(string: copyURL)?.path.split(separator: "/").first.map(String.init))
            let dump = directory.appendingPathComponent("backup.sql").path
            let bin = PostgresFixture.binDirectory
            let connection = ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres"]
            try await PostgresFixture.run("\(bin)/pg_dump", connection + ["-d", name, "-f", dump], asPostgres: false)
            try await PostgresFixture.run("\(bin)/psql", connection + ["-q", "-v", "ON_ERROR_STOP=1", "-d", copyName, "-f", dump], asPostgres: false)
            return .postgres(url: copyURL)
        }
        #endif
        throw PostgresFixture.Failure(description: "unknown store")
    }

    @Test(
        "erasure destroys the person's key: a copy of the database taken before erasure showed the notes, contacts and positions, and no longer does; another person in it still opens",
        arguments: Backend.enabled
    )
    func erasureShredsBackups(backend: Backend) async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let master = try Self.masterKey(in: directory)
        let keyStore = try await Self.keyStore(backend)
        let sealing: (inout ServerConfiguration) -> Void = { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master, keyStore: keyStore) }
        try await TestServer.with(backend, configure: sealing) { s in
            let token = try await Self.enrolWithSecrets(s, "pi-shred")
            let other = try await Self.enrolWithSecrets(s, "pi-other")
            let readings = [Sample.heartRate(seq: 1), Sample.fix(seq: 2)]
            #expect(try await s.send(Sample.batch("pi-shred", seq: 1, readings: readings), token: token).status == 200)
            #expect(try await s.send(Sample.batch("pi-other", seq: 1, readings: readings), token: other).status == 200)
            // The server reads them back; the database holds none of it in clear.
            #expect(try await s.readings("pi-shred").count == 2)
            let device = try #require(try await s.server.store.device(id: "pi-shred"))
            #expect(device.person.notes == Self.notes)
            #expect(device.person.contacts?.first?.name == Self.contactName)
            for (table, column) in [("devices", "person"), ("readings", "body")] {
                for secret in [Self.notes, Self.contactName, "44.07", "\"bpm\""] {
                    #expect(
                        try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM \(table) WHERE instr(\(column), '\(secret)') > 0") == 0
                    )
                }
            }
            let liveKeys = try PersonKeys.keyStoreLocation(s.server.configuration.personKeys, storage: s.server.configuration.storage)

            let copy = try await Self.backup(s, into: directory)
            let before = try await Self.reveal(copy, masterKey: master, keyStore: liveKeys, deviceID: "pi-shred")
            #expect(before.notes == Self.notes)
            #expect(before.contacts == [Self.contactName])
            #expect(before.positions.count == 1)
            #expect(before.readingsError == nil)

            let erased = try await s.client.send("POST", "/v1/devices/pi-shred/erase", token: TestServer.adminToken, body: Data())
            #expect(erased.status == 200, "\(erased.text)")

            let after = try await Self.reveal(copy, masterKey: master, keyStore: liveKeys, deviceID: "pi-shred")
            #expect(after.notes?.contains(Self.notes) != true)
            #expect(after.contacts.isEmpty)
            #expect(after.positions.isEmpty)
            #expect(after.readingsError?.code == .keyDestroyed)
            // The copy is not simply broken: the other person in it still opens.
            let kept = try await Self.reveal(copy, masterKey: master, keyStore: liveKeys, deviceID: "pi-other")
            #expect(kept.notes == Self.notes)
            #expect(kept.positions.count == 1)
        }
    }

    @Test("a master key file that is missing, of the wrong size, readable by others, or not the key store's stops the start with a clear error")
    func masterKeyRefusals() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("absent.key").path
        let short = directory.appendingPathComponent("short.key").path
        try #require(FileManager.default.createFile(atPath: short, contents: Data("abcd\n".utf8), attributes: [.posixPermissions: 0o400]))
        let open = try Self.masterKey(in: directory, name: "open.key", mode: 0o644)
        for (path, expected) in [(missing, "absent.key"), (short, "expected 64 hexadecimal digits"), (open, "chmod 0400")] {
            do {
                let server = try await TestServer.start(.sqlite, configure: { $0.personKeys = PersonKeyConfiguration(masterKeyFile: path) })
                await server.stop()
                Issue.record("started with master key \(path)")
            } catch let error as ServerConfigurationError {
                #expect(error.message.contains("--master-key-file"), "\(error)")
                #expect(error.message.contains(expected), "\(error)")
            }
        }
        // A key store sealed under one master key refuses another, and refuses none at all.
        let first = try Self.masterKey(in: directory, name: "first.key")
        let second = try Self.masterKey(in: directory, name: "second.key")
        let database = StorageLocation.sqlite(path: directory.appendingPathComponent("db.sqlite").path)
        let server = try await TestServer.start(
            .sqlite,
            storage: database,
            configure: { $0.personKeys = PersonKeyConfiguration(masterKeyFile: first) }
        )
        let token = try await Self.enrolWithSecrets(server, "pi-keyed")
        #expect(try await server.send(Sample.batch("pi-keyed", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: token).status == 200)
        await server.stop()
        for (key, expected) in [(second as String?, "is sealed under master key"), (nil, "holds 1 sealed person keys and no master key")] {
            do {
                let again = try await TestServer.start(
                    .sqlite,
                    storage: database,
                    configure: { $0.personKeys = PersonKeyConfiguration(masterKeyFile: key) }
                )
                await again.stop()
                Issue.record("started with master key \(key ?? "none")")
            } catch let error as ServerConfigurationError {
                #expect(error.message.contains(expected), "\(error)")
            }
        }
        // With the right key it starts and everything reads back.
        let right = try await TestServer.start(
            .sqlite,
            storage: database,
            configure: { $0.personKeys = PersonKeyConfiguration(masterKeyFile: first) }
        )
        #expect(try await right.readings("pi-keyed").count == 1)
        #expect(try await right.server.store.device(id: "pi-keyed")?.person.notes == Self.notes)
        await right.stop()
    }

    /// The sealed key of `owner` in the SQLite key store, and a way to put bytes back.
    static func sealedKey(_ path: String, _ owner: String) throws -> Data {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT sealed FROM person_keys WHERE owner = ?", arguments: [owner]) })
    }

    static func setSealedKey(_ path: String, _ owner: String, _ sealed: Data) throws {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.write { db in try db.execute(sql: "UPDATE person_keys SET sealed = ? WHERE owner = ?", arguments: [sealed, owner]) }
    }

    @Test(
        "a damaged sealed key: the person's readings answer a clear error, a new batch is refused and kept by the device, an alert still gets through, nothing is replaced; restored, everything reads"
    )
    func damagedSealedKey() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let master = try Self.masterKey(in: directory)
        let path = directory.appendingPathComponent("db.sqlite").path
        let keys = path + ".keys"
        let configure: (inout ServerConfiguration) -> Void = { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master) }
        var token = ""
        do {
            let s = try await TestServer.start(.sqlite, storage: .sqlite(path: path), configure: configure)
            token = try await Self.enrolWithSecrets(s, "pi-damaged")
            #expect(try await s.send(Sample.batch("pi-damaged", seq: 1, readings: [Sample.fix(seq: 1)]), token: token).status == 200)
            let fine = try await s.enrol("pi-fine")
            #expect(try await s.send(Sample.batch("pi-fine", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: fine).status == 200)
            await s.stop()
        }
        let good = try Self.sealedKey(keys, "pi-damaged")
        var damaged = good
        damaged[damaged.startIndex + 20] ^= 0x01
        try Self.setSealedKey(keys, "pi-damaged", damaged)
        do {
            let s = try await TestServer.start(.sqlite, storage: .sqlite(path: path), configure: configure)
            let read = try await s.client.send("GET", "/v1/devices/pi-damaged/readings", token: TestServer.adminToken)
            #expect(read.status == 500)
            #expect((read.object["error"] as? [String: Any])?["code"] as? String == "damaged_key", "\(read.text)")
            #expect(read.text.contains("does not open under master key"), "\(read.text)")
            let batch = try await s.send(Sample.batch("pi-damaged", seq: 2, readings: [Sample.fix(seq: 2)]), token: token)
            #expect(batch.status == 500, "\(batch.text)")
            // The alert is taken whatever the key: nothing waits in front of an SOS.
            let alert = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-damaged")))
            #expect(alert.status == 200, "\(alert.text)")
            let profile = try #require(try await s.server.store.device(id: "pi-damaged")).person
            #expect(profile.name == "Zelda")
            #expect(profile.contacts == nil)
            #expect(profile.notes?.contains("damaged_key") == true)
            // The group figures' roll-up opens no reading: it sums the counters intake kept when
            // the batch was stored, so a damaged key stops neither the person's day nor anyone else's.
            s.wall.advance(milliseconds: 86_400_000)
            try await GroupFigureDesk(store: s.server.store, wallClock: { s.wall.now }).rollUp()
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM person_days WHERE person_key = 'device:pi-fine'") == 1)
            #expect(
                try await DatabaseScan.count(
                    s.server.store,
                    "SELECT count(*) FROM person_days WHERE person_key = 'device:pi-damaged' AND cell_lat IS NOT NULL"
                ) == 1
            )
            await s.stop()
        }
        // Nothing was replaced: the damaged key is still the one kept, and the reading still there.
        #expect(try Self.sealedKey(keys, "pi-damaged") == damaged)
        try Self.setSealedKey(keys, "pi-damaged", good)
        let s = try await TestServer.start(.sqlite, storage: .sqlite(path: path), configure: configure)
        #expect(try await s.readings("pi-damaged").count == 1)
        #expect(try await s.server.store.device(id: "pi-damaged")?.person.notes == Self.notes)
        #expect(try await s.send(Sample.batch("pi-damaged", seq: 2, readings: [Sample.fix(seq: 2)]), token: token).status == 200)
        await s.stop()
    }

    @Test(
        "a reading whose sealed body was altered or moved to another row answers a clear error naming it; put back, it reads",
        arguments: Backend.enabled
    )
    func damagedReading(backend: Backend) async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let master = try Self.masterKey(in: directory)
        let keyStore = try await Self.keyStore(backend)
        let sealing: (inout ServerConfiguration) -> Void = { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master, keyStore: keyStore) }
        try await TestServer.with(backend, configure: sealing) { s in
            let token = try await s.enrol("pi-rows")
            let readings = [Sample.heartRate(seq: 1, bpm: 61), Sample.heartRate(seq: 2, bpm: 140)]
            #expect(try await s.send(Sample.batch("pi-rows", seq: 1, readings: readings), token: token).status == 200)
            // Seq 2's sealed body copied over seq 1's: it would read as 140 bpm at seq 1's time.
            try await Self.execute(s, "CREATE TABLE kept AS SELECT body FROM readings WHERE device_id = 'pi-rows' AND seq = 1")
            try await Self.execute(
                s,
                "UPDATE readings SET body = (SELECT body FROM readings WHERE device_id = 'pi-rows' AND seq = 2) WHERE device_id = 'pi-rows' AND seq = 1"
            )
            let read = try await s.client.send("GET", "/v1/devices/pi-rows/readings", token: TestServer.adminToken)
            #expect(read.status == 500)
            #expect((read.object["error"] as? [String: Any])?["code"] as? String == "damaged_value", "\(read.text)")
            #expect(read.text.contains("reading 1 of pi-rows"), "\(read.text)")
            #expect(try await DatabaseScan.count(s.server.store, "SELECT count(*) FROM readings WHERE device_id = 'pi-rows'") == 2)
            try await Self.execute(s, "UPDATE readings SET body = (SELECT body FROM kept) WHERE device_id = 'pi-rows' AND seq = 1")
            try await Self.execute(s, "DROP TABLE kept")
            let rows = try await s.readings("pi-rows")
            #expect(rows.compactMap { ($0["hr"] as? [String: Any])?["bpm"] as? Int } == [61, 140], "\(rows)")
        }
    }

    static func execute(_ s: TestServer, _ sql: String) async throws {
        if let sqlite = s.server.store as? SQLiteServerStore {
            try await sqlite.pool.write { db in try db.execute(sql: sql) }
            return
        }
        #if PostgreSQL
        if let postgres = s.server.store as? PostgresServerStore {
            try await postgres.client.query(PostgresQuery(unsafeSQL: sql), logger: postgres.logger)
            return
        }
        #endif
        Issue.record("unknown store")
    }

    static func canonical(_ readings: [[String: Any]]) throws -> [String] {
        try readings.map { String(decoding: try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]), as: UTF8.self) }
    }

    @Test("a database kept in clear is sealed in place when a master key is first given; everything reads back the same", arguments: Backend.enabled)
    func clearRowsSealedAtStart(backend: Backend) async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage: StorageLocation =
            switch backend {
            case .sqlite: .sqlite(path: directory.appendingPathComponent("db.sqlite").path)
            case .postgres: .postgres(url: try await PostgresFixture.shared.createDatabase())
            }
        let clear = try await TestServer.start(backend, storage: storage)
        let token = try await Self.enrolWithSecrets(clear, "pi-old")
        #expect(
            try await clear.send(Sample.batch("pi-old", seq: 1, readings: [Sample.heartRate(seq: 1), Sample.fix(seq: 2)]), token: token).status == 200
        )
        let before = try await Self.canonical(clear.readings("pi-old"))
        #expect(try await DatabaseScan.count(clear.server.store, "SELECT count(*) FROM devices WHERE instr(person, '\(Self.notes)') > 0") == 1)
        await clear.stop()

        let master = try Self.masterKey(in: directory)
        let keyStore = try await Self.keyStore(backend)
        let sealed = try await TestServer.start(
            backend,
            storage: storage,
            configure: { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master, keyStore: keyStore) }
        )
        #expect(try await DatabaseScan.count(sealed.server.store, "SELECT count(*) FROM readings WHERE substr(body, 1, 3) <> 's1.'") == 0)
        #expect(try await DatabaseScan.count(sealed.server.store, "SELECT count(*) FROM devices WHERE instr(person, '\(Self.notes)') > 0") == 0)
        #expect(try await Self.canonical(sealed.readings("pi-old")) == before)
        #expect(try await sealed.server.store.device(id: "pi-old")?.person.notes == Self.notes)
        await sealed.stop()
    }
}
