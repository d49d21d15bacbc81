import GRDB

extension SQLiteServerStore {
    func linkCarer(_ link: CarerLink) async throws -> CarerLinkOutcome {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE carer_links SET may_export = ? WHERE person_id = ? AND carer_id = ?",
                arguments: [link.mayExport ? 1 : 0, link.personID, link.carerID]
            )
            if db.changesCount == 1 { return .updated }
            try db.execute(
                sql: "INSERT INTO carer_links (person_id, carer_id, may_export, granted_ms, granted_by) VALUES (?, ?, ?, ?, ?)",
                arguments: [link.personID, link.carerID, link.mayExport ? 1 : 0, link.grantedMilliseconds, link.grantedBy]
            )
            return .linked
        }
    }

    func carerLinks(personID: String) async throws -> [CarerLink] {
        try await carerLinks(where: "person_id = ?", personID)
    }

    func carerLinks(carerID: String) async throws -> [CarerLink] {
        try await carerLinks(where: "carer_id = ?", carerID)
    }

    private func carerLinks(where condition: String, _ value: String) async throws -> [CarerLink] {
        try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT person_id, carer_id, may_export, granted_ms, granted_by FROM carer_links WHERE \(condition)
                    ORDER BY granted_ms, person_id, carer_id
                    """,
                arguments: [value]
            ).map { row in
                let mayExport: Int64 = try row.decode(forColumn: "may_export")
                return CarerLink(
                    personID: try row.decode(forColumn: "person_id"),
                    carerID: try row.decode(forColumn: "carer_id"),
                    mayExport: mayExport != 0,
                    grantedMilliseconds: try row.decode(forColumn: "granted_ms"),
                    grantedBy: try row.decode(forColumn: "granted_by")
                )
            }
        }
    }

    func unlinkCarer(personID: String, carerID: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM carer_links WHERE person_id = ? AND carer_id = ?", arguments: [personID, carerID])
            return db.changesCount == 1
        }
    }
}
