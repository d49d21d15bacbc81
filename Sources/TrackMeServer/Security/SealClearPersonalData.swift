import GRDB

#if PostgreSQL
import PostgresNIO
#endif

extension SQLiteServerStore {
    /// Seals what is still in clear (stored before the master key was configured): each profile's
    /// contacts and notes, each undispatched alert's update, and every reading body, a thousand
    /// at a time. Each value is replaced only if it is still the one read, so a change made
    /// meanwhile is not overwritten.
    func sealClearPersonalData() async throws -> Int {
        guard personKeys.isOn else { return 0 }
        var sealed = 0
        let profiles = try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT device_id, person FROM devices WHERE substr(person, 1, 10) <> '{\"sealed\":'").map {
                (try $0.decode(String.self, forColumn: "device_id"), try $0.decode(String.self, forColumn: "person"))
            }
        }
        for (deviceID, person) in profiles {
            let value = try await personKeys.sealProfile(person, owner: deviceID)
            try await pool.write { db in
                try db.execute(sql: "UPDATE devices SET person = ? WHERE device_id = ? AND person = ?", arguments: [value, deviceID, person])
            }
            sealed += 1
        }
        let kept = try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT alert_id, device_id, body FROM undispatched_alerts WHERE substr(body, 1, 3) <> 's1.'").map {
                (
                    try $0.decode(String.self, forColumn: "alert_id"), try $0.decode(String.self, forColumn: "device_id"),
                    try $0.decode(String.self, forColumn: "body")
                )
            }
        }
        for (alertID, deviceID, body) in kept {
            let value = try await personKeys.sealAlertBody(body, owner: deviceID, alertID: alertID)
            try await pool.write { db in
                try db.execute(sql: "UPDATE undispatched_alerts SET body = ? WHERE alert_id = ? AND body = ?", arguments: [value, alertID, body])
            }
            sealed += 1
        }
        while true {
            let rows = try await pool.read { db in
                try Row.fetchAll(db, sql: "SELECT device_id, seq, body FROM readings WHERE substr(body, 1, 3) <> 's1.' LIMIT 1000").map {
                    (
                        try $0.decode(String.self, forColumn: "device_id"), try $0.decode(Int64.self, forColumn: "seq"),
                        try $0.decode(String.self, forColumn: "body")
                    )
                }
            }
            if rows.isEmpty { return sealed }
            var values: [String] = []
            for (deviceID, seq, body) in rows { values.append(try await personKeys.sealBody(body, owner: deviceID, sequence: seq)) }
            let sealedValues = values
            try await pool.write { db in
                let update = try db.makeStatement(sql: "UPDATE readings SET body = ? WHERE device_id = ? AND seq = ? AND body = ?")
                for (index, row) in rows.enumerated() { try update.execute(arguments: [sealedValues[index], row.0, row.1, row.2]) }
            }
            sealed += rows.count
        }
    }
}

#if PostgreSQL
extension PostgresServerStore {
    /// As `SQLiteServerStore.sealClearPersonalData`.
    func sealClearPersonalData() async throws -> Int {
        guard personKeys.isOn else { return 0 }
        var sealed = 0
        let profiles = try await collect(
            client.query("SELECT device_id, person FROM devices WHERE substr(person, 1, 10) <> '{\"sealed\":'", logger: logger).decode(
                (String, String).self
            )
        )
        for (deviceID, person) in profiles {
            let value = try await personKeys.sealProfile(person, owner: deviceID)
            try await client.query("UPDATE devices SET person = \(value) WHERE device_id = \(deviceID) AND person = \(person)", logger: logger)
            sealed += 1
        }
        let kept = try await collect(
            client.query("SELECT alert_id, device_id, body FROM undispatched_alerts WHERE substr(body, 1, 3) <> 's1.'", logger: logger).decode(
                (String, String, String).self
            )
        )
        for (alertID, deviceID, body) in kept {
            let value = try await personKeys.sealAlertBody(body, owner: deviceID, alertID: alertID)
            try await client.query("UPDATE undispatched_alerts SET body = \(value) WHERE alert_id = \(alertID) AND body = \(body)", logger: logger)
            sealed += 1
        }
        while true {
            let rows = try await collect(
                client.query("SELECT device_id, seq, body FROM readings WHERE substr(body, 1, 3) <> 's1.' LIMIT 1000", logger: logger).decode(
                    (String, Int64, String).self
                )
            )
            if rows.isEmpty { return sealed }
            var devices: [String] = []
            var sequences: [Int64] = []
            var olds: [String] = []
            var news: [String] = []
            for (deviceID, seq, body) in rows {
                devices.append(deviceID)
                sequences.append(seq)
                olds.append(body)
                news.append(try await personKeys.sealBody(body, owner: deviceID, sequence: seq))
            }
            try await client.query(
                """
                UPDATE readings r SET body = u.sealed
                FROM unnest(\(devices)::TEXT[], \(sequences)::BIGINT[], \(olds)::TEXT[], \(news)::TEXT[]) AS u(device_id, seq, body, sealed)
                WHERE r.device_id = u.device_id AND r.seq = u.seq AND r.body = u.body
                """,
                logger: logger
            )
            sealed += rows.count
        }
    }
}
#endif
