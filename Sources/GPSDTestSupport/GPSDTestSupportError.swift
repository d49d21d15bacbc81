/// Why the real gpsd could not be started for a test or a simulation run.
public struct GPSDTestSupportError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// gpsd or gpsfake is not installed (Debian `gpsd`, `gpsd-clients`).
        public static let programMissing = Code("program_missing")
        /// The program exited or failed before it was ready.
        public static let startFailed = Code("start_failed")
        /// A socket call for the feed failed.
        public static let socketFailed = Code("socket_failed")
    }

    public var code: Code
    public var context: String

    public init(code: Code, context: String) {
        self.code = code
        self.context = context
    }

    public var description: String { "\(code): \(context)" }
}
