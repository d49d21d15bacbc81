import GRDB

extension SQLiteServerStore {
    func insertContactNotification(_ notification: ContactNotification, createdMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO contact_notifications (alert_id, contact_index, nonce, created_ms, expires_ms)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [notification.alertID, notification.contactIndex, notification.nonce, createdMilliseconds, notification.expiresMilliseconds])
            return db.changesCount == 1
        }
    }

    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT nonce, expires_ms, confirmed_ms FROM contact_notifications WHERE alert_id = ? AND contact_index = ?",
                arguments: [alertID, contactIndex]
            ).map {
                ContactNotification(
                    alertID: alertID, contactIndex: contactIndex, nonce: try $0.decode(forColumn: "nonce"),
                    expiresMilliseconds: try $0.decode(forColumn: "expires_ms"),
                    confirmedMilliseconds: try $0.decode(forColumn: "confirmed_ms"))
            }
        }
    }

    func confirmContactNotification(alertID: String, contactIndex: Int, nonce: String, atMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE contact_notifications SET confirmed_ms = ?
                    WHERE alert_id = ? AND contact_index = ? AND nonce = ? AND confirmed_ms IS NULL
                    """,
                arguments: [atMilliseconds, alertID, contactIndex, nonce])
            return db.changesCount == 1
        }
    }
}
