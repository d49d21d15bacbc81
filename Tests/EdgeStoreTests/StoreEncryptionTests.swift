import EdgeBenchmarks
import Foundation
import GRDB
import Testing
import TrackMeCore

@testable import EdgeStore

/// Issue 17: the device store encrypted at rest (ChaCha20-Poly1305 per row body, the row's
/// identity as associated data, the key never in the store).
@Suite("Store encryption at rest")
struct StoreEncryptionTests {
    static var key: StoreKey { get throws { try StoreKey(bytes: [UInt8](repeating: 0x42, count: 32)) } }
    static var otherKey: StoreKey { get throws { try StoreKey(bytes: (0..<32).map { UInt8($0) }) } }
    static let token = "tm-device-token-8f3a1c9be27d4e05"

    /// A person's position, distinctive enough to be looked for byte for byte.
    static let fix = PositionFix(
        time: "2034-11-27T20:26:40.000Z",
        mode: .threeDimensional,
        latitude: 51.501476,
        longitude: -0.140634,
        altitudeHAE: 31.7,
        altitudeMSL: nil,
        speed: 1.2,
        track: 87.5,
        horizontalError: 3.9
    )
    static let heartRate = HeartRateReading(bpm: 187, contact: .detected, energyExpendedKilojoules: 412, rrIntervals: [321, 327, 318, 330])

    static func personReadings() -> [NewReading] {
        (0..<40).map { i in
            let t = ReadingTimestamp(
                monotonicNanoseconds: UInt64(i) * 1_000_000_000,
                bootID: SyntheticReadings.bootID,
                wallClockMilliseconds: 2_000_000_000_000 + Int64(i) * 1000,
                wallClockTrusted: true
            )
            return NewReading(timestamp: t, payload: i % 2 == 0 ? .heartRate(heartRate) : .position(fix))
        }
    }

    static func sosAlert() -> AlertUpdate {
        let t = ReadingTimestamp(
            monotonicNanoseconds: 5_000_000_000,
            bootID: SyntheticReadings.bootID,
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        )
        var record = AlertRecord(id: "alert-enc-1", deviceID: "pi-0042", kind: .heartRateHigh, state: .raised, firstCritical: t, raised: t)
        record.position = AlertPosition(fix: fix, ageMilliseconds: 800)
        return AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: t)
    }

    /// What must not be found in the files: every reading body as the codec encodes it (the
    /// bytes a store in clear keeps), the alert as the journal encodes it, its latitude as text,
    /// and the token.
    static func secrets() throws -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = [
            ("heart rate body", ReadingBodyCodec.encode(.heartRate(heartRate), wallClockTrusted: true)),
            ("position body", ReadingBodyCodec.encode(.position(fix), wallClockTrusted: true)),
            ("alert journal body", Array(try WireCodec.encode(sosAlert()))),
            ("latitude text", Array("51.501476".utf8)),
            ("token", Array(token.utf8)),
        ]
        out = out.filter { $0.1.count >= 6 }
        return out
    }

    /// The names of the secrets found in the database file and its WAL.
    static func plaintextFound(at path: String) throws -> [String] {
        var bytes: [UInt8] = []
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: path + suffix) {
            bytes += Array(try Data(contentsOf: URL(fileURLWithPath: path + suffix)))
        }
        return try secrets().filter { _, needle in Self.contains(bytes, needle) }.map(\.0)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first, Array(haystack[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }

    static func fill(_ store: ReadingStore) throws {
        try store.append(personReadings())
        #expect(store.appendAlert(sosAlert()) == .durable)
        try store.setDeviceState(Data(token.utf8), for: ReadingStore.DeviceStateKey.deviceToken)
    }

    @Test("readings with a person's position, an alert and the token leave no clear text in the file or its WAL")
    func noPlaintextOnDisk() throws {
        // The control: the same contents in a store in clear are found, so the search works.
        let clearDir = try TemporaryDirectory()
        let clear = try ReadingStore(configuration: StoreConfiguration(path: clearDir.storePath), logger: quiet)
        try Self.fill(clear)
        #expect(try Set(Self.plaintextFound(at: clearDir.storePath)) == Set(Self.secrets().map(\.0)))

        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        #expect(store.isEncrypted)
        try Self.fill(store)
        // While open (the commits sit in the WAL) and after a checkpoint into the database file.
        #expect(try Self.plaintextFound(at: dir.storePath) == [])
        let queue = try DatabaseQueue(path: dir.storePath)
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(FULL)") }
        try queue.close()
        #expect(try Self.plaintextFound(at: dir.storePath) == [])
        // The meta table names the key by its fingerprint, never the key.
        let keyBytes = [UInt8](repeating: 0x42, count: 32)
        let raw = Array(try Data(contentsOf: URL(fileURLWithPath: dir.storePath)))
        #expect(!Self.contains(raw, keyBytes))
        let recorded = try DatabaseQueue(path: dir.storePath).read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'store_key_id'")
        }
        #expect(recorded.map { UInt64(bitPattern: $0) } == (try Self.key).id)
    }

    @Test("reopened with the right key, everything reads back: readings, the alert, the token")
    func roundTrip() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
            try Self.fill(store)
            store.close()
        }
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        #expect(store.openReport.memoryFallback == nil)
        #expect(store.encryptionKeyID == (try Self.key).idText)
        let readings = try store.allReadings().map(\.reading)
        #expect(readings.map(\.payload) == Self.personReadings().map(\.payload))
        #expect(readings.map(\.timestamp) == Self.personReadings().map(\.timestamp))
        #expect(try store.oldestUnsynced(limit: 100).count == 40)
        #expect(store.pendingAlertUpdates() == [Self.sosAlert()])
        #expect(try store.alertStates() == [Self.sosAlert()])
        #expect(try store.deviceState(ReadingStore.DeviceStateKey.deviceToken) == Data(Self.token.utf8))
        #expect(store.statistics().quarantinedReadings == 0)
        // New readings after the reopen go on above the old numbers and read back too.
        let more = try store.append(newReadings(0..<3))
        #expect(more.first == (readings.last?.sequence ?? 0) + 1)
        #expect(try store.readings(sequences: more).count == 3)
    }

    @Test("a wrong or missing key is a clear error, the store runs from memory and the file stays byte for byte the same", arguments: [true, false])
    func wrongKeyKeepsFile(giveOtherKey: Bool) throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
            try Self.fill(store)
            store.close()
        }
        let files = ["", "-wal"].map { dir.storePath + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
        let before = try files.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        let listing = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()

        let store = try ReadingStore(
            configuration: StoreConfiguration(path: dir.storePath, encryptionKey: giveOtherKey ? try Self.otherKey : nil),
            logger: quiet
        )
        let problem = try #require(store.openReport.memoryFallback)
        #expect(problem.code == (giveOtherKey ? .wrongKey : .keyMissing))
        #expect(problem.message.contains((try Self.key).idText))
        #expect(store.openReport.movedAsidePath == nil)
        let stats = store.statistics()
        #expect(stats.storeState == "memory_only")
        #expect(stats.memoryOnlyReason?.hasPrefix(giveOtherKey ? "wrong_key" : "key_missing") == true)
        #expect(store.health == .keyUnavailable)
        // Monitoring goes on in memory; the file is not touched by it, nor by retries to reopen.
        try store.append(newReadings(0..<5))
        #expect(!store.reopenIfMemoryOnly())
        store.close()

        // Nothing moved aside or added, but the WAL index and an empty WAL that SQLite leaves
        // after a read-only look.
        let sqliteSidecars: Set<String> = ["store.sqlite-wal", "store.sqlite-shm"]
        #expect(
            try Set(FileManager.default.contentsOfDirectory(atPath: dir.path)).subtracting(sqliteSidecars) == Set(listing).subtracting(sqliteSidecars)
        )
        for (file, bytes) in zip(files, before) {
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == bytes, "\(file) changed")
        }
        if !files.contains(dir.storePath + "-wal") {
            #expect(((try? Data(contentsOf: URL(fileURLWithPath: dir.storePath + "-wal"))) ?? Data()).isEmpty)
        }
        // And the right key still opens all of it.
        let right = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        #expect(right.openReport.memoryFallback == nil)
        #expect(try right.allReadings().count == 40)
    }

    @Test("a tampered ciphertext, and a sealed body copied into another row, are quarantined; sync goes on")
    func tamperedRowsQuarantined() throws {
        let dir = try TemporaryDirectory()
        var seqs: [Int64] = []
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
            seqs = try store.append(Self.personReadings())
            store.close()
        }
        // Row 3: one ciphertext bit flipped and the CRC recomputed (what an attacker, not a bad
        // sector, would do). Row 6: the sealed body of row 4 (the same kind, a position) copied
        // in with a matching CRC: a replay into another slot.
        let queue = try DatabaseQueue(path: dir.storePath)
        try queue.write { db in
            func row(_ seq: Int64) throws -> (boot: Int64, mono: Int64, wall: Int64?, body: [UInt8]) {
                let r = try #require(try Row.fetchOne(db, sql: "SELECT boot, mono_ns, wall_ms, body FROM readings WHERE seq = ?", arguments: [seq]))
                return (r[0], r[1], r[2], Array(r[3] as Data))
            }
            func put(_ seq: Int64, body: [UInt8]) throws {
                let r = try row(seq)
                let crc = ReadingChecksum.compute(boot: r.boot, monotonicNanoseconds: r.mono, wallMilliseconds: r.wall, body: body)
                try db.execute(sql: "UPDATE readings SET body = ?, crc = ? WHERE seq = ?", arguments: [Data(body), crc, seq])
            }
            var flipped = try row(seqs[3]).body
            flipped[14] ^= 0x01
            try put(seqs[3], body: flipped)
            try put(seqs[6], body: try row(seqs[4]).body)
        }
        try queue.close()

        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        let expected = seqs.filter { $0 != seqs[3] && $0 != seqs[6] }
        for attempt in 0..<2 {
            #expect(try store.oldestUnsynced(limit: 100).map(\.sequence) == expected, "attempt \(attempt)")
        }
        let quarantined = try store.quarantinedRows()
        #expect(quarantined.map(\.sequence) == [seqs[3], seqs[6]])
        #expect(quarantined.allSatisfy { $0.reason.contains("authentication failed") })
        #expect(store.statistics().quarantinedReadings == 2)
        // Sync goes on: the rest is reserved and acknowledged, nothing left.
        let reserved = try store.reserveBatch(deviceID: "d", readings: try store.oldestUnsynced(limit: 100), heartbeat: nil)
        try store.acknowledge(batchSequence: reserved.batch.batchSequence)
        #expect(store.statistics().unsyncedReadings == 0)
        #expect(store.statistics().health == .healthy)
    }

    @Test("an alert journal row moved to another update number fails authentication and is quarantined, never offered")
    func tamperedAlertQuarantined() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
            #expect(store.appendAlert(Self.sosAlert()) == .durable)
            store.close()
        }
        let queue = try DatabaseQueue(path: dir.storePath)
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO alert_updates (alert_id, update_seq, boot, mono_ns, body, delivered)
                    SELECT alert_id, 7, boot, mono_ns, body, 0 FROM alert_updates WHERE alert_id = 'alert-enc-1'
                    """
            )
        }
        try queue.close()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        #expect(store.hasPendingAlertUpdates())
        #expect(store.pendingAlertUpdates() == [Self.sosAlert()])
        #expect(try store.quarantinedAlertRows().map(\.updateSequence) == [7])
        #expect(try store.quarantinedAlertRows().first?.reason.contains("authentication failed") == true)
        #expect(try store.alertStates() == [Self.sosAlert()])
        store.markAlertUpdateDelivered(alertID: "alert-enc-1", updateSequence: 0)
        #expect(!store.hasPendingAlertUpdates())
    }

    @Test("a store in clear opened with a key is sealed in place: no clear text left, everything reads back")
    func encryptsExistingStore() throws {
        let dir = try TemporaryDirectory()
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
            try Self.fill(store)
            store.close()
        }
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        #expect(store.openReport.memoryFallback == nil)
        #expect(try Self.plaintextFound(at: dir.storePath) == [])
        #expect(try store.allReadings().map(\.reading.payload) == Self.personReadings().map(\.payload))
        #expect(store.pendingAlertUpdates() == [Self.sosAlert()])
        #expect(try store.deviceState(ReadingStore.DeviceStateKey.deviceToken) == Data(Self.token.utf8))
        store.close()
        // From now on it needs its key.
        let without = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath), logger: quiet)
        #expect(without.openReport.memoryFallback?.code == .keyMissing)
    }

    @Test("re-basing an encrypted store re-seals every reading under its new number")
    func rebaseReseals() throws {
        let dir = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: dir.storePath, encryptionKey: try Self.key), logger: quiet)
        try store.append(newReadings(0..<6))
        let before = try store.allReadings().map(\.reading.payload)
        try store.rebase(sequenceFloor: 100, batchFloor: 1)
        #expect(try store.sequenceNumbers() == Array(100...105))
        #expect(try store.allReadings().map(\.reading.payload) == before)
        #expect(store.statistics().quarantinedReadings == 0)
        #expect(try store.append(newReadings(6..<7)) == [106])
    }

    @Test("key files: 64 hex digits or 32 bytes, owner-only, with the same fingerprint either way")
    func keyFiles() throws {
        let dir = try TemporaryDirectory()
        let hexPath = dir.path + "/key.hex"
        let rawPath = dir.path + "/key.raw"
        let raw = (0..<32).map { UInt8($0) }
        try Data((raw.map { String(format: "%02x", $0) }.joined() + "\n").utf8).write(to: URL(fileURLWithPath: hexPath))
        try Data(raw).write(to: URL(fileURLWithPath: rawPath))
        for path in [hexPath, rawPath] { try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path) }
        #expect(try StoreKey.load(path: hexPath).id == (try Self.otherKey).id)
        #expect(try StoreKey.load(path: rawPath).id == (try Self.otherKey).id)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: hexPath)
        #expect(throws: StoreKeyError.self) { try StoreKey.load(path: hexPath) }
        do {
            _ = try StoreKey.load(path: hexPath)
        } catch {
            #expect(error.code == .tooOpen)
        }
        #expect(throws: StoreKeyError.self) { try StoreKey(material: Array("too short".utf8), source: "x") }
        #expect(throws: StoreKeyError.self) { try StoreKey.load(path: dir.path + "/absent") }
    }
}
