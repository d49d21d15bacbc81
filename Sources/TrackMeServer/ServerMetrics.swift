import Synchronization

/// The server's counters, rendered at `/metrics` in the Prometheus text format. One place, one
/// `trackme_server_` prefix.
final class ServerMetrics: Sendable {
    struct Counters: Sendable {
        var batches = 0
        var batchesReplayed = 0
        var readingsStored = 0
        var readingsDuplicate = 0
        var alertUpdates = 0
        var alertUpdatesDuplicate = 0
        var alertsAcknowledged = 0
        var devicesSilenced = 0
        var readingsDeletedByRetention = 0
        var batchesConflicting = 0
        var retentionRefusals = 0
        var responsesByStatus: [Int: Int] = [:]
        var rateLimited = 0
        var alertRaisesRefused = 0
        var alertFloods = 0
        var connectionsRefused = 0
        var connectionsTimedOut = 0
        /// Rows deleted by the retention job, per `PersonalDataKind`.
        var retentionDeleted: [String: Int] = [:]
        var erasures = 0
    }

    private let counters = Mutex(Counters())

    func update(_ body: (inout Counters) -> Void) {
        counters.withLock { body(&$0) }
    }

    var snapshot: Counters { counters.withLock { $0 } }

    func render(
        store: StoreCounts?, sseClients: Int, databaseDamaged: Bool = false, retentionRefused: Bool = false, readiness: StoreReadiness? = nil
    ) -> String {
        let c = snapshot
        var out = ""
        func counter(_ name: String, _ help: String, _ value: Int) {
            out += "# HELP trackme_server_\(name) \(help)\n# TYPE trackme_server_\(name) counter\ntrackme_server_\(name) \(value)\n"
        }
        func gauge(_ name: String, _ help: String, _ value: Int64) {
            out += "# HELP trackme_server_\(name) \(help)\n# TYPE trackme_server_\(name) gauge\ntrackme_server_\(name) \(value)\n"
        }
        counter("batches_total", "Batches accepted, replays included.", c.batches)
        counter("batches_replayed_total", "Batches answered from an earlier delivery of the same idempotency key.", c.batchesReplayed)
        counter("readings_stored_total", "Readings newly stored.", c.readingsStored)
        counter("readings_duplicate_total", "Readings received again and not stored again.", c.readingsDuplicate)
        counter("alert_updates_total", "Alert messages newly stored.", c.alertUpdates)
        counter("alert_updates_duplicate_total", "Alert messages received again.", c.alertUpdatesDuplicate)
        counter("alerts_acknowledged_total", "Alerts acknowledged by a dispatcher.", c.alertsAcknowledged)
        counter("devices_silenced_total", "Device-silent events raised.", c.devicesSilenced)
        counter("readings_retention_deleted_total", "Readings deleted by the retention job.", c.readingsDeletedByRetention)
        counter("rate_limited_total", "Requests refused with 429 by the per-address or per-token limit.", c.rateLimited)
        counter("alert_raises_refused_total", "New alerts refused with 429 by the per-device limit.", c.alertRaisesRefused)
        counter("alert_floods_total", "Alert floods (one alert_flood feed event each).", c.alertFloods)
        counter("connections_refused_total", "Connections closed at accept: too many from one address.", c.connectionsRefused)
        counter("connections_timed_out_total", "Connections closed for an idle, slow-header or slow-body timeout.", c.connectionsTimedOut)
        counter("batches_conflict_total", "Batches refused with 409: a store epoch to re-base or a key reused with other content.", c.batchesConflicting)
        counter("retention_refused_total", "Retention passes refused because the wall clock jumped ahead.", c.retentionRefusals)
        gauge("database_damaged", "1 when the database failed its integrity check at start (ingest refused).", databaseDamaged ? 1 : 0)
        gauge("retention_refusing", "1 while the retention job refuses to act on a wall clock that jumped.", retentionRefused ? 1 : 0)
        if let readiness {
            gauge("database_answering", "1 when the database answered /health's probe in time.", readiness.answers ? 1 : 0)
            gauge("database_writable", "1 when a write would succeed now (not read-only, a standby, or out of space).", readiness.writable ? 1 : 0)
            if let free = readiness.freeBytes { gauge("database_free_bytes", "Bytes free on the SQLite database's file system.", free) }
        }
        counter("erasures_total", "People whose data was erased on request.", c.erasures)
        out += "# HELP trackme_server_retention_deleted_total Rows of personal data deleted by the retention job, by kind.\n"
        out += "# TYPE trackme_server_retention_deleted_total counter\n"
        for kind in PersonalDataKind.allCases {
            out += "trackme_server_retention_deleted_total{kind=\"\(kind.rawValue)\"} \(c.retentionDeleted[kind.rawValue, default: 0])\n"
        }
        out += "# HELP trackme_server_responses_total HTTP responses by status.\n# TYPE trackme_server_responses_total counter\n"
        for (status, count) in c.responsesByStatus.sorted(by: { $0.key < $1.key }) {
            out += "trackme_server_responses_total{status=\"\(status)\"} \(count)\n"
        }
        gauge("sse_clients", "Open dispatcher feed streams.", Int64(sseClients))
        if let store {
            gauge("devices", "Enrolled devices.", store.devices)
            gauge("devices_silent", "Devices currently silent.", store.silentDevices)
            gauge("readings", "Stored readings.", store.readings)
            gauge("alerts", "Stored alerts.", store.alerts)
        }
        return out
    }
}
