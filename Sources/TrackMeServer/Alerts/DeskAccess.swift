/// What a dispatcher may see of a person: only around an alert it handles (`AccessPolicy`:
/// from a little before the alert opened until it closed, and for a day after to write it up).
/// The desk's routes (`/v1/devices/:id/readings`, `/v1/alerts`, `/v1/alerts/:id`,
/// `/v1/devices`) narrow their answers with this and log every read.
struct DeskAccess: Sendable {
    let store: any AlertDeskStore
    let wallClock: @Sendable () -> Int64
    var policy = AccessPolicy()

    var now: Int64 { wallClock() }

    /// Records a read in the access log of `subject` (`device:ID`) unless it is the person's own.
    func log(_ principal: Principal, subject: String, grants: [AccessPolicy.Grant], what: String) async throws {
        try await AccessLog(store: store, wallClock: wallClock).record(principal, subject: subject, grants: grants, what: what)
    }

    /// The facts of one device's wearer as far as the desk is concerned: its alerts.
    func deviceSubject(_ deviceID: String) async throws -> AccessPolicy.Subject {
        var spans: [AccessPolicy.AlertSpan] = []
        for alertID in try await store.alertIDs(deviceIDs: [deviceID]) {
            if let row = try await store.alertRow(id: alertID) { spans.append(PersonData.span(row)) }
        }
        return AccessPolicy.Subject(personID: "device:\(deviceID)", deviceIDs: [deviceID], alerts: spans)
    }

    /// A page of readings narrowed to what the principal may read; 403 when nothing at all. Admins
    /// get the page as it is. The read is logged.
    func narrowReadings(_ rows: [StoredReadingRow], deviceID: String, principal: Principal) async throws -> [StoredReadingRow] {
        let grants = policy.grants(principal, subject: try await deviceSubject(deviceID), now: now)
        guard !grants.isEmpty else {
            throw APIError.forbidden("a dispatcher reads a person's data only around an alert being handled")
        }
        try await log(principal, subject: "device:\(deviceID)", grants: grants, what: "readings of \(deviceID)")
        return rows.filter { row in
            grants.contains {
                ($0.fromMilliseconds.map { row.placedMilliseconds >= $0 } ?? true)
                    && ($0.untilMilliseconds.map { row.placedMilliseconds < $0 } ?? true)
            }
        }
    }

    /// The heart rate an alert's page shows: the last 10 minutes, within the grants' window.
    static func alertWindow(_ grants: [AccessPolicy.Grant], now: Int64) -> (from: Int64, to: Int64?) {
        let recent: Int64 = now - 10 * 60 * 1000
        let starts: [Int64] = grants.compactMap { $0.fromMilliseconds }
        let from: Int64 = starts.min().map { max($0, recent) } ?? recent
        if grants.contains(where: { $0.untilMilliseconds == nil }) { return (from, nil) }
        let ends: [Int64] = grants.compactMap { $0.untilMilliseconds }
        return (from, ends.max())
    }

    /// A closed alert of the desk's history whose person the principal may no longer read keeps
    /// what happened (kind, times, outcome) and loses the person and the record (readings, position).
    func redactHistory(_ summary: AlertSummary, principal: Principal) -> AlertSummary {
        guard principal.role == .dispatcher, !summary.open else { return summary }
        let closed = summary.resolvedMilliseconds ?? summary.updatedMilliseconds
        let subject = AccessPolicy.Subject(
            personID: "device:\(summary.deviceID)",
            deviceIDs: [summary.deviceID],
            alerts: [AccessPolicy.AlertSpan(openedMilliseconds: summary.createdMilliseconds, closedMilliseconds: closed)]
        )
        guard !policy.decide(principal, subject: subject, now: now).isAllowed else { return summary }
        var redacted = summary
        redacted.record = nil
        redacted.person = nil
        return redacted
    }
}
