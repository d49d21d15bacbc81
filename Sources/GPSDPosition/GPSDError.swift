/// Why the reader could not talk to gpsd. A struct with a code, so codes can be added without
/// breaking callers.
public struct GPSDError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// `gps_open` failed: gpsd is not running or not reachable at host:port.
        public static let cannotConnect = Code("cannot_connect")
        /// gpsd accepted the connection but the WATCH request could not be sent.
        public static let watchFailed = Code("watch_failed")
        /// The connection dropped: gpsd closed it, was killed, or a read failed.
        public static let connectionLost = Code("connection_lost")
    }

    public var code: Code
    /// libgps's own error code (negative `NL_*` values of `gps_open`), when there is one.
    public var gpsdCode: Int32?
    /// libgps's text for `gpsdCode`, or a short explanation.
    public var message: String
    public var host: String
    public var port: Int

    public init(code: Code, gpsdCode: Int32? = nil, message: String, host: String, port: Int) {
        self.code = code
        self.gpsdCode = gpsdCode
        self.message = message
        self.host = host
        self.port = port
    }

    public var description: String {
        let libgps = gpsdCode.map { " (libgps \($0))" } ?? ""
        return "gpsd \(code) at \(host):\(port): \(message)\(libgps)"
    }
}
