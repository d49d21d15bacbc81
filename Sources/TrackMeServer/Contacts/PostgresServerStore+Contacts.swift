#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    func insertContactNotification(_ notification: ContactNotification, createdMilliseconds: Int64) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO contact_notifications (alert_id, contact_index, nonce, created_ms, expires_ms)
            VALUES (\(notification.alertID), \(notification.contactIndex), \(notification.nonce), \(createdMilliseconds),
                \(notification.expiresMilliseconds))
            ON CONFLICT DO NOTHING RETURNING 1
            """, logger: logger
        ).collect().count == 1
    }

    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification? {
        let rows = try await client.query(
            """
            SELECT nonce, expires_ms, confirmed_ms FROM contact_notifications WHERE alert_id = \(alertID) AND contact_index = \(contactIndex)
            """, logger: logger)
        return try await collect(rows.decode((String, Int64, Int64?).self)).first.map {
            ContactNotification(alertID: alertID, contactIndex: contactIndex, nonce: $0.0, expiresMilliseconds: $0.1, confirmedMilliseconds: $0.2)
        }
    }

    func confirmContactNotification(alertID: String, contactIndex: Int, nonce: String, atMilliseconds: Int64) async throws -> Bool {
        try await client.query(
            """
            UPDATE contact_notifications SET confirmed_ms = \(atMilliseconds)
            WHERE alert_id = \(alertID) AND contact_index = \(contactIndex) AND nonce = \(nonce) AND confirmed_ms IS NULL RETURNING 1
            """, logger: logger
        ).collect().count == 1
    }
}
#endif
