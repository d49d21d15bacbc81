#if PostgreSQL
import PostgresNIO

extension PostgresServerStore {
    func linkCarer(_ link: CarerLink) async throws -> CarerLinkOutcome {
        let logger = self.logger
        let mayExport: Int32 = link.mayExport ? 1 : 0
        return try await client.withTransaction(logger: logger) { connection in
            let inserted = try await connection.query(
                """
                INSERT INTO carer_links (person_id, carer_id, may_export, granted_ms, granted_by)
                VALUES (\(link.personID), \(link.carerID), \(mayExport), \(link.grantedMilliseconds), \(link.grantedBy))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).collect().count
            if inserted == 1 { return .linked }
            try await connection.query(
                "UPDATE carer_links SET may_export = \(mayExport) WHERE person_id = \(link.personID) AND carer_id = \(link.carerID)",
                logger: logger
            )
            return .updated
        }
    }

    func carerLinks(personID: String) async throws -> [CarerLink] {
        let rows = try await client.query(
            """
            SELECT person_id, carer_id, may_export, granted_ms, granted_by FROM carer_links WHERE person_id = \(personID)
            ORDER BY granted_ms, person_id, carer_id
            """,
            logger: logger
        )
        return try await Self.carerLinks(rows)
    }

    func carerLinks(carerID: String) async throws -> [CarerLink] {
        let rows = try await client.query(
            """
            SELECT person_id, carer_id, may_export, granted_ms, granted_by FROM carer_links WHERE carer_id = \(carerID)
            ORDER BY granted_ms, person_id, carer_id
            """,
            logger: logger
        )
        return try await Self.carerLinks(rows)
    }

    private static func carerLinks(_ rows: PostgresRowSequence) async throws -> [CarerLink] {
        try await collect(rows.decode((String, String, Int32, Int64, String).self)).map {
            CarerLink(personID: $0.0, carerID: $0.1, mayExport: $0.2 != 0, grantedMilliseconds: $0.3, grantedBy: $0.4)
        }
    }

    func unlinkCarer(personID: String, carerID: String) async throws -> Bool {
        let deleted = try await client.query(
            "DELETE FROM carer_links WHERE person_id = \(personID) AND carer_id = \(carerID) RETURNING 1",
            logger: logger
        ).collect().count
        return deleted == 1
    }
}
#endif
