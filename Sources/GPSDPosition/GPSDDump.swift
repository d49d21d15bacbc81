public import Logging
public import TrackMeCore

/// `trackme-agent gps dump`: prints each 2D/3D fix from gpsd as one JSON line.
public enum GPSDDump {
    public struct Configuration: Sendable {
        public var host: String
        public var port: Int
        /// Stop after this many fixes; nil runs until gpsd closes the connection.
        public var count: Int?

        public init(host: String = "127.0.0.1", port: Int = 2947, count: Int? = nil) {
            self.host = host
            self.port = port
            self.count = count
        }
    }

    /// Connects once (no reconnect), writes one line per fix with mode >= 2 through `write`, and
    /// returns after `count` fixes or when gpsd closes. Throws if gpsd cannot be reached at all.
    public static func run(
        _ configuration: Configuration,
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger,
        write: (String) -> Void
    ) async throws(GPSDError) {
        if let count = configuration.count, count <= 0 { return }
        var readerConfiguration = GPSDReader.Configuration()
        readerConfiguration.reconnects = false
        let reader = GPSDReader(
            host: configuration.host,
            port: configuration.port,
            clock: clock,
            logger: logger,
            configuration: readerConfiguration
        )
        var written = 0
        var connected = false
        for await event in reader.events() {
            switch event {
            case .fix(let fix):
                write(line(for: fix))
                written += 1
                if let count = configuration.count, written >= count { return }
            case .state(.disconnected(let error, _)):
                // Refused before anything was read is an error; gpsd closing later is the end.
                if !connected { throw error }
                return
            case .state(.connected), .state(.noDevice), .state(.noFix), .state(.fix):
                connected = true
            }
        }
    }

    /// `{"time": ..., "mode": 2|3, "lat": ..., "lon": ..., "alt_hae": ..., "speed": ...,
    /// "track": ..., "eph": ...}` with null for what gpsd did not send; time as gpsd gave it.
    public static func line(for fix: PositionFix) -> String {
        func number(_ value: Double?) -> String {
            guard let value, value.isFinite else { return "null" }
            return "\(value)"
        }
        let time = fix.time.map { "\"\(jsonEscaped($0))\"" } ?? "null"
        return "{\"time\": \(time), \"mode\": \(fix.mode.rawValue), \"lat\": \(number(fix.latitude)), "
            + "\"lon\": \(number(fix.longitude)), \"alt_hae\": \(number(fix.altitudeHAE)), "
            + "\"speed\": \(number(fix.speed)), \"track\": \(number(fix.track)), "
            + "\"eph\": \(number(fix.horizontalError))}"
    }

    private static func hex4(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    private static func jsonEscaped(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case _ where scalar.value < 0x20: output += "\\u" + hex4(scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
