public import Logging
public import TrackMeCore

/// `trackme-agent hrm watch`: connect to one strap through the link supervisor and print each
/// reading as a JSON line, and link events as JSON lines on the error stream.
public struct HeartRateWatch: Sendable {
    public struct Configuration: Sendable {
        public var adapter: String?
        /// Nil: connect to the strongest strap nearby.
        public var address: BluetoothAddress?
        public var addressType: BluetoothAddressType
        /// Stop after this many readings; nil runs until cancelled.
        public var count: Int?
        public var connectTimeout: Duration
        public var backoff: Backoff

        public init(
            adapter: String?,
            address: BluetoothAddress?,
            addressType: BluetoothAddressType = .public,
            count: Int? = nil,
            connectTimeout: Duration = .seconds(10),
            backoff: Backoff = Backoff()
        ) {
            self.adapter = adapter
            self.address = address
            self.addressType = addressType
            self.count = count
            self.connectTimeout = connectTimeout
            self.backoff = backoff
        }
    }

    public var configuration: Configuration
    public var logger: Logger

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs until `count` readings were printed (or forever). `output` gets reading lines,
    /// `diagnostics` event lines.
    public func run(connector: StrapConnector? = nil, output: @Sendable (String) -> Void, diagnostics: @Sendable (String) -> Void) async {
        let clock = ContinuousClock()
        let connector = connector ?? defaultConnector(clock: clock)
        let link = HeartRateLink(
            connector: connector,
            configuration: .init(backoff: configuration.backoff),
            clock: clock,
            logger: logger
        )
        var printed = 0
        var lastReading: ContinuousClock.Instant?
        var connectedOnce = false
        for await event in link.events() {
            switch event {
            case .reading(let reading, _):
                lastReading = clock.now
                output(JSONLines.reading(reading))
                printed += 1
                if let count = configuration.count, printed >= count { return }
            case .linkState(.searching(let attempt)):
                if connectedOnce || attempt > 1 {
                    diagnostics(JSONLines.event("reconnecting", [("attempt", String(attempt))]))
                } else {
                    diagnostics(JSONLines.event("searching", target))
                }
            case .linkState(.connected(let address, let gap)):
                connectedOnce = true
                var fields: [(String, String)] = [("address", address.map { JSONLines.string($0.description) } ?? "null")]
                fields.append(("down_ms", gap.map(JSONLines.milliseconds) ?? "null"))
                diagnostics(JSONLines.event("connected", fields))
            case .linkState(.unreachable(let reason, let notFound, let retryIn)):
                diagnostics(
                    JSONLines.event(
                        notFound ? "not_found" : "connect_failed",
                        target + [("reason", JSONLines.string(reason)), ("retry_in_ms", JSONLines.milliseconds(retryIn))]
                    )
                )
            case .linkState(.lost(_, let reason)):
                let gap = lastReading.map { JSONLines.milliseconds($0.duration(to: clock.now)) } ?? "null"
                diagnostics(JSONLines.event("link_lost", [("gap_ms", gap), ("reason", JSONLines.string(reason))]))
            case .battery(let percent):
                diagnostics(JSONLines.event("battery", [("percent", String(percent))]))
            case .bodySensorLocation(let location):
                diagnostics(JSONLines.event("body_sensor_location", [("location", JSONLines.string("\(location)"))]))
            case .malformed(let raw, let error):
                diagnostics(
                    JSONLines.event(
                        "malformed",
                        [("raw", JSONLines.string(Hex.encode(raw, separator: " "))), ("error", JSONLines.string(error.description))]
                    )
                )
            }
        }
    }

    private var target: [(String, String)] {
        [("address", configuration.address.map { JSONLines.string($0.description) } ?? "null")]
    }

    private func defaultConnector(clock: ContinuousClock) -> StrapConnector {
        if let address = configuration.address {
            return L2CAPConnector.connector(
                adapter: configuration.adapter,
                address: address,
                addressType: configuration.addressType,
                timeout: configuration.connectTimeout
            )
        }
        return L2CAPConnector.strongestNearby(adapter: configuration.adapter, timeout: configuration.connectTimeout, clock: clock)
    }
}
