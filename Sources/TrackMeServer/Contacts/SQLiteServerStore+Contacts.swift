import GRDB

extension SQLiteServerStore {
    func insertContactNotification(_ notification: ContactNotification, createdMilliseconds: Int64) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO contact_notifications (alert_id, contact_index, nonce, created_ms, expires_ms)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    notification.alertID, notification.contactIndex, notification.nonce, createdMilliseconds, notification.expiresMilliseconds,
                ]
            )
            return db.changesCount == 1
        }
    }

    func contactNotification(alertID: String, contactIndex: Int) async throws -> ContactNotification? {
        try await pool.read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT nonce, expires_ms, confirmed_ms FROM contact_notifications WHERE alert_id = ? AND contact_index = ?",
                arguments: [alertID, contactIndex]
            ).map {
                ContactNotification(
                    alertID: alertID,
                    contactIndex: contactIndex,
                    nonce: try $0.decode(forColumn: "nonce"),
                    expiresMilliseconds: try $0.decode(forColumn: "expires_ms"),
                    confirmedMilliseconds: try $0.decode(forColumn: "confirmed_ms")
                )
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
                arguments: [atMilliseconds, alertID, contactIndex, nonce]
            )
            return db.changesCount == 1
        }
    }

    func contactAttempts(alertID: String) async throws -> [ContactAttempt] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT contact_index, purpose, attempt, started_ms, finished_ms, result, exit_status, detail FROM contact_attempts
                    WHERE alert_id = ? ORDER BY contact_index, purpose, attempt
                    """,
                arguments: [alertID]
            ).map { row in
                ContactAttempt(
                    alertID: alertID,
                    contactIndex: try row.decode(forColumn: "contact_index"),
                    purpose: ContactPurpose(rawValue: try row.decode(forColumn: "purpose")) ?? .escalation,
                    attempt: try row.decode(forColumn: "attempt"),
                    startedMilliseconds: try row.decode(forColumn: "started_ms"),
                    finishedMilliseconds: try row.decode(forColumn: "finished_ms"),
                    result: (try row.decode(forColumn: "result") as String?).flatMap(ContactAttemptResult.init(rawValue:)),
                    exitStatus: (try row.decode(forColumn: "exit_status") as Int64?).map { Int32(truncatingIfNeeded: $0) },
                    detail: try row.decode(forColumn: "detail")
                )
            }
        }
    }

    func claimContactAttempt(_ attempt: ContactAttempt) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO contact_attempts (alert_id, contact_index, purpose, attempt, started_ms)
                    VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [attempt.alertID, attempt.contactIndex, attempt.purpose.rawValue, attempt.attempt, attempt.startedMilliseconds]
            )
            return db.changesCount == 1
        }
    }

    func finishContactAttempt(_ attempt: ContactAttempt) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE contact_attempts SET finished_ms = ?, result = ?, exit_status = ?, detail = ?
                    WHERE alert_id = ? AND contact_index = ? AND purpose = ? AND attempt = ?
                    """,
                arguments: [
                    attempt.finishedMilliseconds, attempt.result?.rawValue, attempt.exitStatus.map { Int64($0) }, attempt.detail, attempt.alertID,
                    attempt.contactIndex, attempt.purpose.rawValue, attempt.attempt,
                ]
            )
        }
    }
}
