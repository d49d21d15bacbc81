import Foundation
import GRDB
import Logging
import TrackMeCore

/// Encryption at rest: which key a file is sealed under, and encrypting a store that
/// was in clear. The sealing itself is `RowCipher`; what is sealed:
///
/// - `readings.body` (the reading's value: bpm, position), under `RowIdentity.reading(seq)`;
///   the CRC (`ReadingChecksum`) covers the sealed bytes, so damage is still told apart from
///   tampering (`checksum mismatch` vs `authentication failed`) and both are quarantined;
/// - `alert_updates.body` (the alert with its position), under the alert id and update number;
/// - `device_state.value` (the device token, the learned resting heart rate, ...), under its key.
///
/// Left in clear, because the store needs them to work without the key in hand for every
/// query: sequence numbers, boot ids, monotonic and wall-clock times, synced and delivered
/// flags, alert ids (random UUIDs), meta counters, the in-flight batches' sequence lists and
/// heartbeat (battery level and counts). STORE-KEY.md lists this for a field engineer.
extension ReadingStore {
    /// Whether this store seals its row bodies.
    public var isEncrypted: Bool { cipher != nil }

    /// The fingerprint of the key the store is sealed under (16 hex digits), or nil in clear.
    public var encryptionKeyID: String? { cipher?.key.idText }

    /// Throws `keyMissing` or `wrongKey` when the file is sealed under a key other than `key`.
    /// Reads only; a file without a meta table (new) passes.
    static func checkKey(_ queue: DatabaseQueue, key: StoreKey?, path: String) throws {
        let stored = try queue.read { db -> Int64? in
            guard try db.tableExists("meta") else { return nil }
            return try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.storeKeyID])
        }
        guard let stored else { return }
        let storedID = StoreKey.idText(UInt64(bitPattern: stored))
        guard let key else {
            throw StoreError(
                code: .keyMissing,
                message:
                    "the store is encrypted under key \(storedID) and no key was given (store.encryption, the trackme-store-key credential or store.key_file)",
                path: path
            )
        }
        guard key.id == UInt64(bitPattern: stored) else {
            throw StoreError(
                code: .wrongKey,
                message: "the store is encrypted under key \(storedID), the key given is \(key.idText); the file is left as it is",
                path: path
            )
        }
    }

    /// Records `key` in a store that has none: a new store simply gets its id; a store in clear
    /// has every reading body, alert update and device state value sealed in place in one
    /// transaction, then is vacuumed and its WAL truncated so that no page of the clear text is
    /// left in the database or WAL files. (The card's free blocks may still hold old copies:
    /// STORE-KEY.md says to provision the key before the first start.)
    static func adoptKey(_ queue: DatabaseQueue, key: StoreKey, logger: Logger) throws {
        let cipher = RowCipher(key: key)
        // Every open of an encrypted store passes here: a read, not a write transaction, when the
        // key is already recorded (`openChecked` checked it is this one).
        let recorded = try queue.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.storeKeyID])
        }
        if recorded != nil { return }
        let sealed = try queue.write { db -> Int in
            let stored = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.storeKeyID])
            if stored != nil { return 0 }
            var sealed = 0
            let readings = try Row.fetchAll(db, sql: "SELECT seq, boot, mono_ns, wall_ms, body, crc FROM readings")
            for row in readings {
                guard let seq = row[0] as Int64?, let boot = row[1] as Int64?, let mono = row[2] as Int64?, let body = row[4] as Data?
                else { continue }
                let wall = row[3] as Int64?
                // A row already damaged stays as it is: it fails to open afterwards and is
                // quarantined, rather than having its damage sealed as if it were sound.
                if let crc = row[5] as Int64?,
                    crc != ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: Array(body))
                {
                    continue
                }
                let box = Array(try cipher.seal(body, .reading(seq)))
                let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: box)
                try db.execute(sql: "UPDATE readings SET body = ?, crc = ? WHERE seq = ?", arguments: [Data(box), crc, seq])
                sealed += 1
            }
            for row in try Row.fetchAll(db, sql: "SELECT alert_id, update_seq, body FROM alert_updates") {
                guard let id = row[0] as String?, let number = row[1] as Int?, let body = row[2] as Data? else { continue }
                try db.execute(
                    sql: "UPDATE alert_updates SET body = ? WHERE alert_id = ? AND update_seq = ?",
                    arguments: [try cipher.seal(body, .alertUpdate(alertID: id, updateSequence: number)), id, number]
                )
                sealed += 1
            }
            for row in try Row.fetchAll(db, sql: "SELECT key, value FROM device_state") {
                guard let name = row[0] as String?, let value = row[1] as Data? else { continue }
                try db.execute(
                    sql: "UPDATE device_state SET value = ? WHERE key = ?",
                    arguments: [try cipher.seal(value, .deviceState(name)), name]
                )
                sealed += 1
            }
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, ?)", arguments: [MetaKey.storeKeyID, Int64(bitPattern: key.id)])
            return sealed
        }
        guard sealed > 0 else { return }
        // The clear pages: rewritten by VACUUM (free space and free pages included), and the WAL
        // that held them emptied.
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "VACUUM")
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
        logger.info("store in clear encrypted in place", metadata: ["store.key_id": "\(key.idText)", "store.sealed_rows": "\(sealed)"])
    }

    // MARK: - Sealing by table

    /// A reading body as stored: sealed when the store is encrypted.
    func storedReadingBody(_ body: [UInt8], seq: Int64) throws -> [UInt8] {
        guard let cipher else { return body }
        return Array(try cipher.seal(body, .reading(seq)))
    }

    /// The encoded reading of a stored body (after its CRC was checked).
    func readingBody(_ stored: [UInt8], seq: Int64) throws(RowAuthenticationFailure) -> [UInt8] {
        guard let cipher else { return stored }
        return Array(try cipher.open(stored, .reading(seq)))
    }

    func storedAlertBody(_ update: AlertUpdate) throws -> Data {
        let body = try WireCodec.encode(update)
        guard let cipher else { return body }
        return try cipher.seal(body, .alertUpdate(alertID: update.alert.id, updateSequence: update.updateSequence))
    }

    /// Alert updates of rows `alert_id, update_seq, body`; rows that fail to open or decode are
    /// left out and noted for `quarantineFailedAlertRows` (after the read), so that one bad
    /// row neither stops the journal nor is offered forever.
    func decodeAlertRows(_ rows: [Row]) -> [AlertUpdate] {
        var out: [AlertUpdate] = []
        out.reserveCapacity(rows.count)
        for row in rows {
            guard let id = row[0] as String?, let number = row[1] as Int? else { continue }
            let key = AlertUpdateKey(alertID: id, updateSequence: number)
            guard let stored = row[2] as Data? else {
                notedFailedAlertRow(key, "alert row with a null body")
                continue
            }
            do {
                let body = try cipher.map { try $0.open(stored, .alertUpdate(alertID: id, updateSequence: number)) } ?? stored
                out.append(try WireCodec.decode(AlertUpdate.self, from: body))
            } catch {
                notedFailedAlertRow(key, "\(error)")
            }
        }
        return out
    }

    func storedDeviceState(_ value: Data, key: String) throws -> Data {
        guard let cipher else { return value }
        return try cipher.seal(value, .deviceState(key))
    }

    func deviceStateValue(_ stored: Data, key: String) throws(StoreError) -> Data {
        guard let cipher else { return stored }
        do {
            return try cipher.open(stored, .deviceState(key))
        } catch {
            logger.info("device state value failed authentication", metadata: ["store.key": "\(key)", "store.reason": "\(error)"])
            throw StoreError(code: .badRecord, message: "\(error)", path: configuration.path)
        }
    }
}
