// Data path, step 1 in the simulation (step 6): the strap's side of the BLE link, playing a recorded trace.

public import BlueZHeartRate
public import TrackMeCore

/// A heart-rate strap simulated at the ATT level: a GATT server (Heart Rate 0x180D with 0x2A37 +
/// CCCD and 0x2A38, Battery 0x180F/0x2A19) that answers real ATT PDUs over a
/// `socketpair(AF_UNIX, SOCK_SEQPACKET)`, and plays a `HeartRateTrace` as notifications on an
/// injected clock. The agent's own ATT client and decoder run unchanged against it.
///
/// Faults: `dropLink()`, `setNotifying(false)`, `overrideContact(_:)`, `sendMalformed(_:)`.
public actor SimulatedStrap {
    /// A broken PDU for `sendMalformed`.
    public enum Malformation: Sendable, Hashable {
        /// A 0x2A37 notification whose payload ends inside the RR field.
        case truncatedMeasurement
        /// A PDU with an opcode ATT does not define.
        case unknownOpcode
        /// A notification PDU too short to carry a handle.
        case truncatedPDU
        /// Exactly these bytes.
        case raw([UInt8])

        var bytes: [UInt8] {
            switch self {
            case .truncatedMeasurement: [0x1B, UInt8(StrapAttributeServer.measurementHandle), 0x00, 0x16, 0x48, 0x11]
            case .unknownOpcode: [0xEE, 0x01, 0x02]
            case .truncatedPDU: [0x1B, 0x03]
            case .raw(let bytes): bytes
            }
        }
    }

    public nonisolated let trace: HeartRateTrace
    public nonisolated let address: BluetoothAddress?
    private let pace: Double
    private let clock: any Clock<Duration>

    private var server: StrapAttributeServer
    private var link: (any ATTBearer)?
    private var generation = 0
    private var notifying = true
    private var contactOverride: SensorContact?
    /// Connections accepted so far.
    public private(set) var connections = 0
    /// Trace rows sent as notifications, and rows that passed while nobody listened.
    public private(set) var rowsSent = 0
    public private(set) var rowsMissed = 0

    /// - Parameters:
    ///   - pace: trace time per clock time; 10 plays a 1 s row interval every 100 ms.
    public init(
        trace: HeartRateTrace,
        pace: Double = 1,
        clock: any Clock<Duration>,
        address: BluetoothAddress? = BluetoothAddress("C0:FF:EE:00:00:0D"),
        location: BodySensorLocation = .chest,
        batteryPercent: Int = 87
    ) {
        self.trace = trace
        self.pace = pace > 0 ? pace : 1
        self.clock = clock
        self.address = address
        self.server = StrapAttributeServer(location: location, batteryPercent: batteryPercent)
    }

    /// A connector for `HeartRateLink`: each call is a new connection to this strap.
    public nonisolated var connector: StrapConnector {
        StrapConnector { [self] in try await self.accept() }
    }

    /// Accepts a new connection (dropping any previous one, as a strap serves one central).
    public func accept() throws -> StrapConnector.Connection {
        let (central, peripheral) = try SeqPacketBearer.pair()
        link?.close()
        generation += 1
        connections += 1
        link = peripheral
        server = StrapAttributeServer(location: server.location, batteryPercent: server.batteryPercent)
        let generation = self.generation
        Task { [weak self] in
            do {
                for try await bytes in peripheral.incoming {
                    guard let self else { return }
                    await self.serve(bytes, generation: generation)
                }
            } catch {}
            await self?.linkEnded(generation: generation)
        }
        return StrapConnector.Connection(bearer: central, address: address)
    }

    /// Plays the trace: row `i` goes out at (t_i - t_0) / pace after the call, as a notification if
    /// a central is connected and subscribed. Returns after the last row; throws on cancellation.
    public func play() async throws {
        guard let first = trace.rows.first else { return }
        let origin = Self.now(clock)
        for row in trace.rows {
            let offset = Duration.milliseconds(row.timeMilliseconds - first.timeMilliseconds) / pace
            try await Self.sleep(clock, origin: origin, offset: offset)
            emit(row)
        }
    }

    private func emit(_ row: HeartRateTrace.Row) {
        guard let link, notifying, server.notifyingMeasurements else {
            rowsMissed += 1
            return
        }
        var reading = row.reading
        if let contactOverride { reading.contact = contactOverride }
        let payload = HeartRateMeasurement.encode(reading, maximumLength: Int(server.mtu) - 3)
        do {
            try link.send(ATTPDU.handleValueNotification(handle: StrapAttributeServer.measurementHandle, value: payload).encoded)
            rowsSent += 1
        } catch {
            rowsMissed += 1
        }
    }

    /// Sends one measurement now, for an event loop that decides the time itself (the
    /// simulation's fast mode). Returns false when no central is subscribed or the strap is
    /// not notifying.
    @discardableResult
    public func notify(_ reading: HeartRateReading) -> Bool {
        guard let link, notifying, server.notifyingMeasurements else { return false }
        var reading = reading
        if let contactOverride { reading.contact = contactOverride }
        let payload = HeartRateMeasurement.encode(reading, maximumLength: Int(server.mtu) - 3)
        do {
            try link.send(ATTPDU.handleValueNotification(handle: StrapAttributeServer.measurementHandle, value: payload).encoded)
            rowsSent += 1
            return true
        } catch {
            return false
        }
    }

    /// Sends several measurements back to back, as a strap's notifications queue up in the
    /// controller, and returns when each went out (empty from the first one that could not be
    /// sent: no central subscribed, or the strap not notifying). For an event loop that hands
    /// a stretch of trace to the link at once instead of one notification per wake-up.
    public func notify(contentsOf readings: [HeartRateReading]) -> [ContinuousClock.Instant] {
        var sent: [ContinuousClock.Instant] = []
        sent.reserveCapacity(readings.count)
        for reading in readings {
            let at = ContinuousClock.now
            guard notify(reading) else { break }
            sent.append(at)
        }
        return sent
    }

    // MARK: Faults

    /// Closes the current link from the strap's side, as when it goes out of range.
    public func dropLink() {
        link?.close()
        link = nil
    }

    /// Stops (or resumes) sending measurements while staying connected.
    public func setNotifying(_ on: Bool) { notifying = on }

    /// Sends every later measurement with this contact state instead of the trace's (nil: the
    /// trace's own).
    public func overrideContact(_ contact: SensorContact?) { contactOverride = contact }

    /// Sends one malformed PDU on the current link.
    public func sendMalformed(_ malformation: Malformation) throws {
        try link?.send(malformation.bytes)
    }

    /// Changes the battery level, notifying it if the central subscribed.
    public func setBattery(_ percent: Int) throws {
        server.batteryPercent = percent
        if let link, server.notifyingBattery {
            try link.send(ATTPDU.handleValueNotification(handle: StrapAttributeServer.batteryHandle, value: BatteryLevel.encode(percent)).encoded)
        }
    }

    /// Whether the current central has enabled measurement notifications.
    public var subscribed: Bool { link != nil && server.notifyingMeasurements }

    // MARK: Serving

    private func serve(_ bytes: [UInt8], generation: Int) {
        guard generation == self.generation, let link else { return }
        let response: ATTPDU?
        do {
            response = server.respond(to: try ATTPDU(bytes: bytes))
        } catch {
            response = .errorResponse(requestOpcode: bytes.first ?? 0, handle: 0, error: .invalidPDU)
        }
        if let response { try? link.send(response.encoded) }
    }

    private func linkEnded(generation: Int) {
        guard generation == self.generation else { return }
        link = nil
    }

    private static func now<C: Clock<Duration>>(_ clock: C) -> any InstantProtocol<Duration> { clock.now }

    private static func sleep<C: Clock<Duration>>(_ clock: C, origin: any InstantProtocol<Duration>, offset: Duration) async throws {
        guard let start = origin as? C.Instant else { return }
        try await clock.sleep(until: start.advanced(by: offset), tolerance: nil)
    }
}
