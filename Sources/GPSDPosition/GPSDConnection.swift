// Data path, step 2 (position): gpsd through libgps on its own thread, as an AsyncSequence of fixes.

import CGPSShim
import TrackMeCore

/// One libgps connection, through the C shim. Owns the shim's session and closes it exactly once.
/// Not Sendable: libgps state belongs to the one thread that reads it.
final class GPSDConnection {
    private let session: OpaquePointer
    private let host: String
    private let port: Int

    /// Connects to gpsd (`gps_open`). Blocks for the TCP connect.
    init(host: String, port: Int) throws(GPSDError) {
        var opened: OpaquePointer?
        let code = tm_gps_open(host, String(port), &opened)
        guard code == 0, let opened else {
            throw GPSDError(
                code: .cannotConnect,
                gpsdCode: code,
                message: String(cString: tm_gps_errstr(code)),
                host: host,
                port: port
            )
        }
        session = opened
        self.host = host
        self.port = port
    }

    deinit {
        tm_gps_close(session)
    }

    /// Asks gpsd for JSON reports (`gps_stream(WATCH_ENABLE | WATCH_JSON)`).
    func watch() throws(GPSDError) {
        guard tm_gps_watch(session) == 0 else {
            throw GPSDError(code: .watchFailed, message: "could not send WATCH", host: host, port: port)
        }
    }

    /// Waits up to `timeout` for data (`gps_waiting`); true when a read would not block.
    func waitForData(timeout: Duration) throws(GPSDError) -> Bool {
        let microseconds = Int32(
            clamping: timeout.components.seconds * 1_000_000
                + timeout.components.attoseconds / 1_000_000_000_000
        )
        switch tm_gps_waiting(session, microseconds) {
        case 1: return true
        case 0: return false
        default:
            throw GPSDError(code: .connectionLost, message: "waiting for gpsd failed", host: host, port: port)
        }
    }

    /// Reads one report (`gps_read`); nil when no complete report was available.
    func read() throws(GPSDError) -> GPSDReport? {
        var raw = tm_gps_report()
        switch tm_gps_read(session, &raw) {
        case 1: return Self.report(from: raw)
        case 0: return nil
        default:
            throw GPSDError(code: .connectionLost, message: "gpsd closed the connection", host: host, port: port)
        }
    }

    /// The report one line from gpsd makes, through libgps's parser and the shim's copy as in
    /// `read()`, without a connection (tests, the fuzzer). nil only when memory ran out.
    static func report(line: [UInt8]) -> GPSDReport? {
        var raw = tm_gps_report()
        let status = line.withUnsafeBytes { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return tm_gps_unpack("", 0, &raw) }
            return tm_gps_unpack(base.assumingMemoryBound(to: CChar.self), bytes.count, &raw)
        }
        return status == 0 ? report(from: raw) : nil
    }

    static func report(from raw: tm_gps_report) -> GPSDReport {
        switch raw.kind {
        case TM_GPS_REPORT_TPV: return .tpv(fix(from: raw))
        case TM_GPS_REPORT_DEVICE: return .device(activated: raw.device_activated)
        case TM_GPS_REPORT_DEVICES: return .devices(count: Int(raw.device_count))
        default: return .other
        }
    }

    private static func fix(from raw: tm_gps_report) -> PositionFix {
        func value(_ present: Bool, _ value: Double) -> Double? { present ? value : nil }
        // gpsd's mode 0 ("not seen") and 1 both mean no fix.
        let mode = FixMode(rawValue: Int(raw.mode)) ?? .none
        return PositionFix(
            time: raw.has_time ? timeText(raw) : nil,
            mode: mode,
            latitude: value(raw.has_position, raw.latitude),
            longitude: value(raw.has_position, raw.longitude),
            altitudeHAE: value(raw.has_altitude_hae, raw.altitude_hae),
            altitudeMSL: value(raw.has_altitude_msl, raw.altitude_msl),
            speed: value(raw.has_speed, raw.speed),
            track: value(raw.has_track, raw.track),
            horizontalError: value(raw.has_eph, raw.eph)
        )
    }

    private static func timeText(_ raw: tm_gps_report) -> String {
        withUnsafeBytes(of: raw.time) { bytes in
            let text = bytes.prefix { $0 != 0 }
            return String(decoding: text, as: UTF8.self)
        }
    }
}
