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
            """,
            logger: logger
        ).collect().count == 1
    }

    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification? {
        let rows = try await client.query(
            """
            SELECT nonce, expires_ms, confirmed_ms FROM contact_notifications WHERE alert_id = \(alertID) AND contact_index = \(contactIndex)
            """,
            logger: logger
        )
        return try await collect(rows.decode((String, Int64, Int64?).self)).first.map {
            ContactNotification(alertID: alertID, contactIndex: contactIndex, nonce: $0.0, expiresMilliseconds: $0.1, confirmedMilliseconds: $0.2)
        }
    }

    func confirmContactNotification(alertID: String, contactIndex: Int, nonce: String, atMilliseconds: Int64) async throws -> Bool {
        try await client.query(
            """
            UPDATE contact_notifications SET confirmed_ms = \(atMilliseconds)
            WHERE alert_id = \(alertID) AND contact_index = \(contactIndex) AND nonce = \(nonce) AND confirmed_ms IS NULL RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func contactAttempts(alertID: String) async throws -> [ContactAttempt] {
        let rows = try await client.query(
            """
            SELECT contact_index, purpose, attempt, started_ms, finished_ms, result, exit_status, detail FROM contact_attempts
            WHERE alert_id = \(alertID) ORDER BY contact_index, purpose, attempt
            """,
            logger: logger
        )
        return try await collect(rows.decode((Int, String, Int, Int64, Int64?, String?, Int32?, String?).self)).map {
            ContactAttempt(
                alertID: alertID,
                contactIndex: $0.0,
                purpose: ContactPurpose(rawValue: $0.1) ?? .escalation,
                attempt: $0.2,
                startedMilliseconds: $0.3,
                finishedMilliseconds: $0.4,
                result: $0.5.flatMap(ContactAttemptResult.init(rawValue:)),
                exitStatus: $0.6,
                detail: $0.7
            )
        }
    }

    func claimContactAttempt(_ attempt: ContactAttempt) async throws -> Bool {
        try await client.query(
            """
            INSERT INTO contact_attempts (alert_id, contact_index, purpose, attempt, started_ms)
            VALUES (\(attempt.alertID), \(attempt.contactIndex), \(attempt.purpose.rawValue), \(attempt.attempt), \(attempt.startedMilliseconds))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            logger: logger
        ).collect().count == 1
    }

    func finishContactAttempt(_ attempt: ContactAttempt) async throws {
        _ = try await client.query(
            """
            UPDATE contact_attempts SET finished_ms = \(attempt.finishedMilliseconds), result = \(attempt.result?.rawValue),
                exit_status = \(attempt.exitStatus), detail = \(attempt.detail)
            WHERE alert_id = \(attempt.alertID) AND contact_index = \(attempt.contactIndex) AND purpose = \(attempt.purpose.rawValue)
                AND attempt = \(attempt.attempt)
            """,
            logger: logger
        ).collect()
    }
}
#endif
