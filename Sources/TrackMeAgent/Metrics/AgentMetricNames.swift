/// Every metric the agent exports, in one place, all with the `trackme_` prefix.
///
/// The shell records the first group itself; the rest are the names the pipeline services
/// use when the lead wires them in (kept here so the Prometheus surface is reviewed in one file).
public enum AgentMetricNames {
    // Recorded by the shell.
    /// Counter, dimensions `command` (status, sos, safe, pause, resume, invalid) and `result` (ok, error).
    public static let controlRequests = "trackme_control_requests_total"
    /// Gauge: Unix time the agent started, seconds.
    public static let startTime = "trackme_agent_start_time_seconds"
    /// Counter: WATCHDOG=1 messages sent to systemd.
    public static let watchdogPings = "trackme_systemd_watchdog_pings_total"
    /// Counter: scrapes of the metrics endpoint.
    public static let metricsScrapes = "trackme_metrics_scrapes_total"

    // For the pipeline services.
    /// Gauge: 1 while the strap is connected and notifying, else 0.
    public static let strapConnected = "trackme_strap_connected"
    /// Gauge: last heart rate, bpm.
    public static let heartRate = "trackme_heart_rate_bpm"
    /// Counter: Heart Rate Measurement notifications decoded.
    public static let heartRateReadings = "trackme_heart_rate_readings_total"
    /// Gauge: strap battery level, percent.
    public static let strapBattery = "trackme_strap_battery_percent"
    /// Gauge: gpsd fix mode (1 none, 2 2D, 3 3D).
    public static let gpsFixMode = "trackme_gps_fix_mode"
    /// Gauge: readings and updates waiting in the store.
    public static let storeDepth = "trackme_store_depth"
    /// Gauge: store size on disk, bytes.
    public static let storeBytes = "trackme_store_bytes"
    /// Gauge: 1 while the store runs from memory (the disk refused it at start), else 0.
    public static let storeMemoryOnly = "trackme_store_memory_only"
    /// Gauge: readings that failed their integrity check and were quarantined, over the store's life.
    public static let storeQuarantined = "trackme_store_quarantined_readings"
    /// Counter: batches the server acknowledged; dimension `result` for failures too.
    public static let syncBatches = "trackme_sync_batches_total"
    /// Counter: alerts raised, dimension `kind` (`AlertKind` raw value).
    public static let alertsRaised = "trackme_alerts_raised_total"
    /// Counter: gpsd fixes (2D/3D TPV reports) received.
    public static let gpsFixes = "trackme_gps_fixes_total"
    /// Counter: readings (heart rate and sampled positions) committed durably to the store.
    public static let readingsCommitted = "trackme_readings_committed_total"
}
