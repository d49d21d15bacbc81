import CoreMetrics
import Prometheus
import Synchronization

/// The server's metrics, recorded through swift-metrics and rendered at `/metrics` by
/// swift-prometheus. One place, one `trackme_server_` prefix.
///
/// Each server has a registry of its own and hands its factory to every metric explicitly, never
/// through the process-wide `MetricsSystem`: tests, the simulation and the benchmarks start several
/// servers in one process, and each one's `/metrics` must count only its own requests.
final class ServerMetrics: Sendable {
    typealias Counter = CoreMetrics.Counter

    private let registry: PrometheusCollectorRegistry
    private let factory: any MetricsFactory

    let batches: Counter
    let batchesReplayed: Counter
    let readingsStored: Counter
    let readingsDuplicate: Counter
    let alertUpdates: Counter
    let alertUpdatesDuplicate: Counter
    let alertsAcknowledged: Counter
    let devicesSilenced: Counter
    let readingsDeletedByRetention: Counter
    let rateLimited: Counter
    let alertRaisesRefused: Counter
    let alertFloods: Counter
    let connectionsRefused: Counter
    let connectionsTimedOut: Counter
    let batchesConflicting: Counter
    let retentionRefusals: Counter
    let erasures: Counter
    let statisticsDaysKept: Counter
    let statisticsDaysSummarised: Counter
    /// Rows deleted by the retention job, per kind; every kind is listed from the start (at 0) so
    /// that a dashboard's rate has a series before the first deletion.
    private let retentionDeleted: [PersonalDataKind: Counter]
    /// Heavy reads stopped because their client went, per route; every watched route is listed
    /// from the start (at 0).
    private let requestsAbandoned: [HangUpWatch.Route: Counter]
    /// Made on a status's first response: the set of statuses is open (Hummingbird's own included).
    private let responses = Mutex<[Int: Counter]>([:])
    /// The gauges read at scrape time that are present now; one lock also keeps two scrapes from
    /// interleaving their values.
    private let scraped = Mutex<[String: Meter]>([:])

    /// `also` receives every value as well (tests pass MetricsTestKit's `TestMetrics`); `/metrics`
    /// renders only this server's registry.
    init(also extra: (any MetricsFactory)? = nil) {
        let registry = PrometheusCollectorRegistry()
        let own = DescribedPrometheusFactory(registry: registry)
        let factory: any MetricsFactory = extra.map { MultiplexMetricsHandler(factories: [own, $0]) } ?? own
        self.registry = registry
        self.factory = factory
        func counter(_ name: Name) -> Counter { Counter(label: name.rawValue, factory: factory) }
        batches = counter(.batches)
        batchesReplayed = counter(.batchesReplayed)
        readingsStored = counter(.readingsStored)
        readingsDuplicate = counter(.readingsDuplicate)
        alertUpdates = counter(.alertUpdates)
        alertUpdatesDuplicate = counter(.alertUpdatesDuplicate)
        alertsAcknowledged = counter(.alertsAcknowledged)
        devicesSilenced = counter(.devicesSilenced)
        readingsDeletedByRetention = counter(.readingsDeletedByRetention)
        rateLimited = counter(.rateLimited)
        alertRaisesRefused = counter(.alertRaisesRefused)
        alertFloods = counter(.alertFloods)
        connectionsRefused = counter(.connectionsRefused)
        connectionsTimedOut = counter(.connectionsTimedOut)
        batchesConflicting = counter(.batchesConflicting)
        retentionRefusals = counter(.retentionRefusals)
        erasures = counter(.erasures)
        statisticsDaysKept = counter(.statisticsDaysKept)
        statisticsDaysSummarised = counter(.statisticsDaysSummarised)
        var deleted: [PersonalDataKind: Counter] = [:]
        for kind in PersonalDataKind.allCases {
            deleted[kind] = Counter(label: Name.retentionDeleted.rawValue, dimensions: [("kind", kind.rawValue)], factory: factory)
        }
        retentionDeleted = deleted
        var abandoned: [HangUpWatch.Route: Counter] = [:]
        for route in HangUpWatch.Route.allCases {
            abandoned[route] = Counter(label: Name.requestsAbandoned.rawValue, dimensions: [("route", route.rawValue)], factory: factory)
        }
        requestsAbandoned = abandoned
    }

    /// Counts a heavy read stopped because its client went (`HangUpWatch`).
    func recordAbandoned(_ route: HangUpWatch.Route) {
        requestsAbandoned[route]?.increment()
    }

    /// Counts rows the retention job deleted; readings also under
    /// `trackme_server_readings_retention_deleted_total`, the name dashboards query for them.
    func recordRetention(_ kind: PersonalDataKind, deleted count: Int) {
        retentionDeleted[kind]?.increment(by: count)
        if kind == .readings { readingsDeletedByRetention.increment(by: count) }
    }

    func recordResponse(status: Int) {
        let counter = responses.withLock { known in
            if let counter = known[status] { return counter }
            let counter = Counter(label: Name.responses.rawValue, dimensions: [("status", String(status))], factory: factory)
            known[status] = counter
            return counter
        }
        counter.increment()
    }

    /// Sets the gauges read at scrape time and renders the Prometheus text. A nil `store` or
    /// `readiness` (the database did not answer in time) leaves their gauges out rather than
    /// repeating values that may no longer hold.
    func render(
        store: StoreCounts?,
        sseClients: Int,
        databaseDamaged: Bool = false,
        retentionRefused: Bool = false,
        readiness: StoreReadiness? = nil
    ) -> String {
        let values: [(Name, Int64?)] = [
            (.databaseDamaged, databaseDamaged ? 1 : 0),
            (.retentionRefusing, retentionRefused ? 1 : 0),
            (.databaseAnswering, readiness.map { $0.answers ? 1 : 0 }),
            (.databaseWritable, readiness.map { $0.writable ? 1 : 0 }),
            (.databaseFreeBytes, readiness?.freeBytes),
            (.sseClients, Int64(sseClients)),
            (.devices, store?.devices),
            (.devicesSilent, store?.silentDevices),
            (.readings, store?.readings),
            (.alerts, store?.alerts),
        ]
        let factory = self.factory
        return scraped.withLock { present in
            for (name, value) in values {
                if let value {
                    let meter = present[name.rawValue] ?? Meter(label: name.rawValue, factory: factory)
                    present[name.rawValue] = meter
                    meter.set(value)
                } else if let meter = present.removeValue(forKey: name.rawValue) {
                    meter.destroy()
                }
            }
            return registry.emitToString()
        }
    }

    /// Every metric the server exposes, with its help text: the names dashboards query.
    enum Name: String, CaseIterable, Sendable {
        case batches = "trackme_server_batches_total"
        case batchesReplayed = "trackme_server_batches_replayed_total"
        case readingsStored = "trackme_server_readings_stored_total"
        case readingsDuplicate = "trackme_server_readings_duplicate_total"
        case alertUpdates = "trackme_server_alert_updates_total"
        case alertUpdatesDuplicate = "trackme_server_alert_updates_duplicate_total"
        case alertsAcknowledged = "trackme_server_alerts_acknowledged_total"
        case devicesSilenced = "trackme_server_devices_silenced_total"
        case readingsDeletedByRetention = "trackme_server_readings_retention_deleted_total"
        case rateLimited = "trackme_server_rate_limited_total"
        case alertRaisesRefused = "trackme_server_alert_raises_refused_total"
        case alertFloods = "trackme_server_alert_floods_total"
        case connectionsRefused = "trackme_server_connections_refused_total"
        case connectionsTimedOut = "trackme_server_connections_timed_out_total"
        case batchesConflicting = "trackme_server_batches_conflict_total"
        case retentionRefusals = "trackme_server_retention_refused_total"
        case erasures = "trackme_server_erasures_total"
        case statisticsDaysKept = "trackme_server_statistics_days_kept_total"
        case statisticsDaysSummarised = "trackme_server_statistics_days_summarised_total"
        case retentionDeleted = "trackme_server_retention_deleted_total"
        case requestsAbandoned = "trackme_server_requests_abandoned_total"
        case responses = "trackme_server_responses_total"
        case databaseDamaged = "trackme_server_database_damaged"
        case retentionRefusing = "trackme_server_retention_refusing"
        case databaseAnswering = "trackme_server_database_answering"
        case databaseWritable = "trackme_server_database_writable"
        case databaseFreeBytes = "trackme_server_database_free_bytes"
        case sseClients = "trackme_server_sse_clients"
        case devices = "trackme_server_devices"
        case devicesSilent = "trackme_server_devices_silent"
        case readings = "trackme_server_readings"
        case alerts = "trackme_server_alerts"

        var help: String {
            switch self {
            case .batches: "Batches accepted, replays included."
            case .batchesReplayed: "Batches answered from an earlier delivery of the same idempotency key."
            case .readingsStored: "Readings newly stored."
            case .readingsDuplicate: "Readings received again and not stored again."
            case .alertUpdates: "Alert messages newly stored."
            case .alertUpdatesDuplicate: "Alert messages received again."
            case .alertsAcknowledged: "Alerts acknowledged by a dispatcher."
            case .devicesSilenced: "Device-silent events raised."
            case .readingsDeletedByRetention: "Readings deleted by the retention job."
            case .rateLimited: "Requests refused with 429 by the per-address or per-token limit."
            case .alertRaisesRefused: "New alerts refused with 429 by the per-device limit."
            case .alertFloods: "Alert floods (one alert_flood feed event each)."
            case .connectionsRefused: "Connections closed at accept: too many from one address."
            case .connectionsTimedOut: "Connections closed for an idle, slow-header or slow-body timeout."
            case .batchesConflicting: "Batches refused with 409: a store epoch to re-base or a key reused with other content."
            case .retentionRefusals: "Retention passes refused because the wall clock jumped ahead."
            case .erasures: "People whose data was erased on request."
            case .statisticsDaysKept: "Device-days a statistics request answered from a kept summary."
            case .statisticsDaysSummarised: "Device-days a statistics request summarised from their readings (and kept)."
            case .retentionDeleted: "Rows of personal data deleted by the retention job, by kind."
            case .requestsAbandoned: "Statistics, views and downloads stopped because their client closed the connection first, by route."
            case .responses: "HTTP responses by status."
            case .databaseDamaged: "1 when the database failed its integrity check at start (ingest refused)."
            case .retentionRefusing: "1 while the retention job refuses to act on a wall clock that jumped."
            case .databaseAnswering: "1 when the database answered /health's probe in time."
            case .databaseWritable: "1 when a write would succeed now (not read-only, a standby, or out of space)."
            case .databaseFreeBytes: "Bytes free on the SQLite database's file system."
            case .sseClients: "Open dispatcher feed streams."
            case .devices: "Enrolled devices."
            case .devicesSilent: "Devices currently silent."
            case .readings: "Stored readings."
            case .alerts: "Stored alerts."
            }
        }
    }
}

/// swift-prometheus's own `PrometheusMetricsFactory` registers every metric with an empty help
/// text (and its registry refuses a second, different help for one name), so the `# HELP` lines
/// operators read would be lost: this factory gives each name its help from `ServerMetrics.Name`.
struct DescribedPrometheusFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry

    /// The label is the whole name (no namespace or unit appended), with its help.
    private func described(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: ServerMetrics.Name(rawValue: label)?.help ?? "")
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: described(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else { return registry.makeGauge(descriptor: described(label), labels: dimensions) }
        return registry.makeValueHistogram(descriptor: described(label), labels: dimensions, buckets: Self.valueBuckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: described(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        registry.makeDurationHistogram(descriptor: described(label), labels: dimensions, buckets: Self.durationBuckets)
    }

    func destroyCounter(_ handler: any CounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        if let counter = handler as? Prometheus.Counter { registry.unregisterCounter(counter) }
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        if let histogram = handler as? DurationHistogram { registry.unregisterDurationHistogram(histogram) }
    }

    // swift-prometheus's defaults, for a histogram someone adds later.
    private static let valueBuckets: [Double] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]
    private static let durationBuckets: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]
}
