import Foundation
import GRDB
import Logging
import Synchronization
import TrackMeCore

/// Salvage of stores moved aside as corrupt (`PATH.corrupt-N`): what can still be read of
/// their unsynced readings and undelivered alert updates is copied into the current store, in
/// one transaction with a `salvage` row naming the file, so that a crash during salvage leaves
/// nothing half done and the next start does it again. Readings keep their numbers (the new
/// file adopted the old epoch, see `init`), so any the server already has count as duplicates.
/// What could not be read is counted and logged.
extension ReadingStore {
    /// Moved-aside files next to the store not yet salvaged, oldest first.
    func salvageMovedAsideStores() {
        let path = configuration.path
        let directory = (path as NSString).deletingLastPathComponent
        let base = (path as NSString).lastPathComponent + ".corrupt-"
        let names =
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? [])
            .filter { $0.hasPrefix(base) && Int64($0.dropFirst(base.count)) != nil }
            .sorted { (Int64($0.dropFirst(base.count)) ?? 0) < (Int64($1.dropFirst(base.count)) ?? 0) }
        for name in names {
            let file = directory.isEmpty ? name : directory + "/" + name
            let done =
                (try? readStatement { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM salvage WHERE path = ?)", arguments: [file]) })
                ?? nil
            if done == true { continue }
            salvage(file)
        }
    }

    struct SalvagedRow {
        var seq: Int64
        var bootID: String
        var mono: Int64
        var wall: Int64?
        var body: [UInt8]
    }

    /// Everything readable of one moved-aside file, and how many rows (or runs of rows behind an
    /// unreadable page) could not be read.
    struct SalvageHarvest {
        var readings: [SalvagedRow] = []
        var alerts: [AlertUpdate] = []
        var unreadable: Int64 = 0
        var dropped: Int64 = 0
        var notes: [String] = []
    }

    static func readEpoch(ofMovedAside file: String) -> Int64? {
        guard let queue = try? DatabaseQueue(path: file) else { return nil }
        defer { try? queue.close() }
        return (try? queue.read { db in try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'store_epoch'") }) ?? nil
    }

    static func harvest(_ file: String, cipher: RowCipher?) -> SalvageHarvest {
        let queue: DatabaseQueue
        do {
            queue = try DatabaseQueue(path: file)
        } catch {
            var harvest = SalvageHarvest()
            harvest.unreadable += 1
            harvest.notes.append("cannot open: \(error)")
            return harvest
        }
        defer { try? queue.close() }
        return harvest(cipher: cipher) { body in try queue.read(body) }
    }

    /// What can be read of a store's unsynced readings, undelivered alert updates and
    /// unreported drop count. `access` runs a block on the database (a read of a queue, or a
    /// connection already held). `cipher`: this store's; a file sealed under another key has
    /// every sealed row counted unreadable.
    static func harvest(cipher given: RowCipher?, _ access: ((Database) throws -> Void) throws -> Void) -> SalvageHarvest {
        var harvest = SalvageHarvest()
        var boots: [Int64: String] = [:]
        var storedKeyID: Int64?
        try? access { db in
            storedKeyID = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [MetaKey.storeKeyID])
        }
        // nil with a key id stored: sealed under a key not given, nothing of it opens.
        let cipher: RowCipher?
        let opens: Bool
        if let storedKeyID {
            cipher = given.flatMap { $0.key.id == UInt64(bitPattern: storedKeyID) ? $0 : nil }
            opens = cipher != nil
            if !opens { harvest.notes.append("sealed under key \(StoreKey.idText(UInt64(bitPattern: storedKeyID))), not the one given") }
        } else {
            cipher = nil
            opens = true
        }
        do {
            try access { db in
                for row in try Row.fetchAll(db, sql: "SELECT id, boot_id FROM boots") {
                    if let id = row[0] as Int64?, let boot = row[1] as String? { boots[id] = boot }
                }
            }
        } catch {
            harvest.notes.append("boots unreadable: \(error)")
        }
        var hasChecksum = false
        try? access { db in hasChecksum = try db.columns(in: "readings").contains { $0.name == "crc" } }
        let columns = hasChecksum ? "seq, synced, boot, mono_ns, wall_ms, body, crc" : "seq, synced, boot, mono_ns, wall_ms, body, NULL"
        var after = Int64.min
        var attempts = 0
        scan: while attempts < 10_000 {
            attempts += 1
            do {
                try access { db in
                    let cursor = try Row.fetchCursor(db, sql: "SELECT \(columns) FROM readings WHERE seq > ? ORDER BY seq", arguments: [after])
                    while let row = try cursor.next() {
                        guard let seq = row[0] as Int64? else { continue }
                        after = seq
                        guard (row[1] as Int64?) != 1 else { continue }
                        guard let boot = row[2] as Int64?, let bootID = boots[boot], let mono = row[3] as Int64?, let blob = row[5] as Data?
                        else {
                            harvest.unreadable += 1
                            continue
                        }
                        let body = Array(blob)
                        let wall = row[4] as Int64?
                        if let stored = row[6] as Int64?,
                            stored != ReadingChecksum.compute(boot: boot, monotonicNanoseconds: mono, wallMilliseconds: wall, body: body)
                        {
                            harvest.unreadable += 1
                            continue
                        }
                        guard opens, let plain = try? cipher.map({ Array(try $0.open(body, .reading(seq))) }) ?? body,
                            (try? ReadingBodyCodec.decode(plain)) != nil
                        else {
                            harvest.unreadable += 1
                            continue
                        }
                        harvest.readings.append(SalvagedRow(seq: seq, bootID: bootID, mono: mono, wall: wall, body: plain))
                    }
                }
                break scan
            } catch {
                // An unreadable page: step past it, further each time, and count the run.
                harvest.unreadable += 1
                harvest.notes.append("readings after \(after): \(error)")
                var jump: Int64 = 1
                while jump < (1 << 50) {
                    let probe = after == Int64.min ? jump : after &+ jump
                    var next: Int64?
                    if (try? access { db in next = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM readings WHERE seq > ?", arguments: [probe]) })
                        != nil
                    {
                        guard let next else { break scan }
                        after = next - 1
                        continue scan
                    }
                    jump *= 2
                }
                break scan
            }
        }
        do {
            try access { db in
                for row in try Row.fetchAll(db, sql: "SELECT alert_id, update_seq, body FROM alert_updates WHERE delivered = 0 ORDER BY rowid") {
                    guard opens, let id = row[0] as String?, let number = row[1] as Int?, let stored = row[2] as Data?,
                        let blob = try? cipher.map({ try $0.open(stored, .alertUpdate(alertID: id, updateSequence: number)) }) ?? stored
                    else {
                        harvest.unreadable += 1
                        continue
                    }
                    if let update = try? WireCodec.decode(AlertUpdate.self, from: blob) {
                        harvest.alerts.append(update)
                    } else {
                        harvest.unreadable += 1
                    }
                }
            }
        } catch {
            harvest.unreadable += 1
            harvest.notes.append("alert journal: \(error)")
        }
        try? access { db in harvest.dropped = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'dropped_unreported'") ?? 0 }
        return harvest
    }

    private func salvage(_ file: String) {
        let harvest = Self.harvest(file, cipher: cipher)
        do {
            let inserted = try salvageWrite(file: file, harvest: harvest)
            let metadata: Logger.Metadata = [
                "store.salvaged_from": "\(file)", "store.salvaged": "\(inserted)", "store.salvaged_alerts": "\(harvest.alerts.count)",
                "store.unreadable": "\(harvest.unreadable)", "store.notes": "\(harvest.notes.prefix(5).joined(separator: "; "))",
            ]
            // Readings that never reached the server are gone for good: an operator must hear
            // of it (and `status` shows the count), not find it among routine lines.
            if harvest.unreadable > 0 {
                logger.error("readings lost beyond salvage from a store moved aside as corrupt", metadata: metadata)
            } else {
                logger.info("salvaged a store moved aside as corrupt", metadata: metadata)
            }
        } catch {
            logger.info("salvage failed, tried again at the next start", metadata: ["store.salvaged_from": "\(file)", "store.error": "\(error)"])
        }
    }

    /// Writes what `harvest` read from a moved-aside file, with the `salvage` row naming the
    /// file, in one transaction; returns how many readings were new here.
    func salvageWrite(file: String, harvest: SalvageHarvest) throws -> Int {
        let (inserted, unsynced) = try write { db -> (Int, Int) in
            let insert = try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO readings (seq, boot, mono_ns, wall_ms, body, crc) VALUES (?, ?, ?, ?, ?, ?)"
            )
            var inserted = 0
            for row in harvest.readings {
                let boot = try bootRef(row.bootID, db)
                let body = try storedReadingBody(row.body, seq: row.seq)
                let crc = ReadingChecksum.compute(boot: boot, monotonicNanoseconds: row.mono, wallMilliseconds: row.wall, body: body)
                try insert.execute(arguments: [row.seq, boot, row.mono, row.wall, Data(body), crc])
                inserted += db.changesCount
            }
            for update in harvest.alerts {
                let boot = try bootRef(update.alert.firstCritical.bootID, db)
                try db.execute(
                    sql: "INSERT OR IGNORE INTO alert_updates (alert_id, update_seq, boot, mono_ns, body, delivered) VALUES (?, ?, ?, ?, ?, 0)",
                    arguments: [
                        update.alert.id, update.updateSequence, boot, Int64(bitPattern: update.alert.firstCritical.monotonicNanoseconds),
                        try storedAlertBody(update),
                    ]
                )
            }
            if harvest.dropped > 0 { try addDropped(harvest.dropped, db) }
            let bump = "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = value + excluded.value"
            try db.execute(sql: bump, arguments: [MetaKey.salvagedTotal, inserted])
            try db.execute(sql: bump, arguments: [MetaKey.unsalvageableTotal, harvest.unreadable])
            try db.execute(
                sql: "INSERT OR REPLACE INTO salvage (path, salvaged, unreadable, note) VALUES (?, ?, ?, ?)",
                arguments: [file, inserted, harvest.unreadable, harvest.notes.prefix(5).joined(separator: "; ")]
            )
            return (inserted, inserted)
        }
        state.withLock { s in
            s.rowCount += inserted
            s.unsyncedCount += unsynced
            s.unsyncedFloor = 0
        }
        return inserted
    }

    /// Moved-aside files salvaged into this store: the file, readings salvaged, rows unreadable.
    public func salvageRecords() throws(StoreError) -> [(path: String, salvaged: Int64, unreadable: Int64)] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT path, salvaged, unreadable FROM salvage ORDER BY rowid").map {
                ($0[0] as String? ?? "", $0[1] as Int64? ?? 0, $0[2] as Int64? ?? 0)
            }
        }
    }
}
