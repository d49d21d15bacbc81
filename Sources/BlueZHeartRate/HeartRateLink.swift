public import Logging
public import TrackMeCore

/// What a `HeartRateLink` reports.
public enum HeartRateEvent: Sendable, Hashable {
    /// A decoded Heart Rate Measurement and the bytes it came from.
    case reading(HeartRateReading, raw: [UInt8])
    case linkState(HeartRateLinkState)
    /// Battery level in percent (read on connect, then on each notification if the strap sends them).
    case battery(Int)
    case bodySensorLocation(BodySensorLocation)
    /// A measurement or PDU that did not decode; the link stays up.
    case malformed(raw: [UInt8], error: PayloadDecodingError)
}

/// The link's state. Times are offsets on the link's clock from when `events()` was called.
public enum HeartRateLinkState: Sendable, Hashable {
    /// Looking for / connecting to the strap; `attempt` counts from 1 since the last connection.
    case searching(attempt: Int)
    /// Subscribed to measurements. `gap` is how long the link was down before, nil the first time.
    case connected(address: BluetoothAddress?, gap: Duration?)
    /// An attempt failed (strap not found, refused, discovery failed); the next one follows after
    /// `retryIn`.
    case unreachable(reason: String, notFound: Bool, retryIn: Duration)
    /// The link went down at `since`.
    case lost(since: Duration, reason: String)
}

/// Opens an ATT bearer to a strap: a real L2CAP connection (`L2CAPConnector`) or a simulated strap
/// over a socket pair.
public struct StrapConnector: Sendable {
    public struct Connection: Sendable {
        public var bearer: any ATTBearer
        public var address: BluetoothAddress?
        public init(bearer: any ATTBearer, address: BluetoothAddress?) {
            self.bearer = bearer
            self.address = address
        }
    }

    let connect: @Sendable () async throws -> Connection

    public init(_ connect: @escaping @Sendable () async throws -> Connection) {
        self.connect = connect
    }
}

/// Keeps a heart-rate strap connected: connects, discovers the Heart Rate (and Battery) service,
/// subscribes to 0x2A37, decodes every notification, and on loss reconnects with exponential
/// backoff and jitter on the injected clock.
public struct HeartRateLink: Sendable {
    public struct Configuration: Sendable {
        public var backoff: Backoff
        public var transactionTimeout: Duration
        /// ATT MTU offered in the exchange.
        public var mtu: UInt16

        public init(backoff: Backoff = Backoff(), transactionTimeout: Duration = ATTClient.transactionTimeout, mtu: UInt16 = 185) {
            self.backoff = backoff
            self.transactionTimeout = transactionTimeout
            self.mtu = mtu
        }
    }

    public var configuration: Configuration
    public var connector: StrapConnector
    public var clock: any Clock<Duration>
    public var logger: Logger
    /// A draw in [0, 1) for backoff jitter; injectable for exact tests.
    public var random: @Sendable () -> Double

    public init(
        connector: StrapConnector,
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.connector = connector
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.random = random
    }

    /// Runs the link until the consumer stops iterating (or the task iterating is cancelled).
    public func events() -> AsyncStream<HeartRateEvent> {
        let (stream, continuation) = AsyncStream<HeartRateEvent>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        let task = Task { await run(continuation) }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private func run(_ emit: AsyncStream<HeartRateEvent>.Continuation) async {
        let stopwatch = Stopwatch(clock)
        var machine = HeartRateLinkStateMachine(backoff: configuration.backoff)
        var session: Session?
        var next: HeartRateLinkStateMachine.Event? = .start
        while let event = next, !Task.isCancelled {
            next = nil
            for action in machine.receive(event, now: stopwatch.elapsed, random: random()) {
                switch action {
                case .report(let state):
                    emit.yield(.linkState(state))
                case .connect:
                    do {
                        let opened = try await connectAndSubscribe(emit: emit)
                        session = opened
                        next = .connected(address: opened.address)
                    } catch {
                        if Task.isCancelled { break }
                        logger.info("heart-rate strap unreachable", metadata: ["ble.error": "\(error)"])
                        next = .connectFailed(reason: "\(error)", notFound: (error as? L2CAPConnectError)?.code == .notFound)
                    }
                case .forwardReadings:
                    guard let current = session else { continue }
                    let reason = await withTaskCancellationHandler {
                        await forward(current, emit: emit)
                    } onCancel: {
                        current.bearer.close()
                    }
                    await current.client.close()
                    session = nil
                    logger.info("heart-rate strap link lost", metadata: ["ble.reason": "\(reason)"])
                    next = .linkLost(reason: reason)
                case .wait(let delay):
                    do {
                        try await clock.sleep(for: delay)
                        next = .retryDue
                    } catch {
                        next = nil
                    }
                }
            }
        }
        if let session { await session.client.close() }
        emit.finish()
    }

    private struct Session: Sendable {
        var client: ATTClient
        var bearer: any ATTBearer
        var address: BluetoothAddress?
        var measurementHandle: UInt16
        var batteryHandle: UInt16?
    }

    private func connectAndSubscribe(emit: AsyncStream<HeartRateEvent>.Continuation) async throws -> Session {
        let connection = try await connector.connect()
        let client = ATTClient(bearer: connection.bearer, clock: clock, transactionTimeout: configuration.transactionTimeout, logger: logger)
        await client.start()
        do {
            do {
                try await client.exchangeMTU(configuration.mtu)
            } catch let error as ATTClientError where error.code == .errorResponse {
                // Servers may refuse the exchange; 23 then stays in effect.
            }
            let services = try await client.discoverPrimaryServices()
            guard let heartRate = services.first(where: { $0.uuid == .heartRateService }) else {
                throw ATTClientError(code: .missingAttribute, detail: "no Heart Rate service 0x180D")
            }
            let characteristics = try await client.discoverCharacteristics(in: heartRate.handles)
            guard let measurementIndex = characteristics.firstIndex(where: { $0.uuid == HeartRateMeasurement.uuid }) else {
                throw ATTClientError(code: .missingAttribute, detail: "no Heart Rate Measurement 0x2A37")
            }
            let measurement = characteristics[measurementIndex]
            let measurementCCCD = try await cccd(of: measurementIndex, in: characteristics, serviceEnd: heartRate.endHandle, client: client)
            if let location = characteristics.first(where: { $0.uuid == BodySensorLocation.uuid && $0.properties.contains(.read) }) {
                let bytes = try await client.read(handle: location.valueHandle)
                if let decoded = try? BodySensorLocation.decode(bytes) { emit.yield(.bodySensorLocation(decoded)) }
            }
            var batteryHandle: UInt16?
            if let battery = services.first(where: { $0.uuid == .batteryService }) {
                batteryHandle = try await subscribeBattery(battery, client: client, emit: emit)
            }
            try await client.subscribe(cccdHandle: measurementCCCD, indications: !measurement.properties.contains(.notify))
            return Session(
                client: client,
                bearer: connection.bearer,
                address: connection.address,
                measurementHandle: measurement.valueHandle,
                batteryHandle: batteryHandle
            )
        } catch {
            await client.close()
            throw error
        }
    }

    /// Reads the battery level and subscribes to its notifications when the strap offers them.
    private func subscribeBattery(_ service: GATTService, client: ATTClient, emit: AsyncStream<HeartRateEvent>.Continuation) async throws -> UInt16? {
        let characteristics = try await client.discoverCharacteristics(in: service.handles)
        guard let index = characteristics.firstIndex(where: { $0.uuid == BatteryLevel.uuid }) else { return nil }
        let level = characteristics[index]
        if level.properties.contains(.read), let percent = try? BatteryLevel.decode(try await client.read(handle: level.valueHandle)) {
            emit.yield(.battery(percent))
        }
        if level.properties.contains(.notify),
            let handle = try? await cccd(of: index, in: characteristics, serviceEnd: service.endHandle, client: client)
        {
            try await client.subscribe(cccdHandle: handle)
        }
        return level.valueHandle
    }

    /// The CCCD of `characteristics[index]`: a 0x2902 descriptor between its value and the next
    /// declaration.
    private func cccd(of index: Int, in characteristics: [GATTCharacteristic], serviceEnd: UInt16, client: ATTClient) async throws -> UInt16 {
        let characteristic = characteristics[index]
        let end = index + 1 < characteristics.count ? characteristics[index + 1].declarationHandle - 1 : serviceEnd
        guard characteristic.valueHandle < end else {
            throw ATTClientError(code: .missingAttribute, handle: characteristic.valueHandle, detail: "no descriptors after \(characteristic.uuid)")
        }
        let descriptors = try await client.discoverDescriptors(in: (characteristic.valueHandle + 1)...end)
        guard let cccd = descriptors.first(where: { $0.uuid == .clientCharacteristicConfiguration }) else {
            throw ATTClientError(code: .missingAttribute, handle: characteristic.valueHandle, detail: "no CCCD 0x2902 for \(characteristic.uuid)")
        }
        return cccd.handle
    }

    /// Delivers notifications until the link ends; returns why it ended.
    private func forward(_ session: Session, emit: AsyncStream<HeartRateEvent>.Continuation) async -> String {
        for await message in session.client.messages {
            switch message {
            case .notification(let handle, let value), .indication(let handle, let value):
                if handle == session.measurementHandle {
                    do {
                        emit.yield(.reading(try HeartRateMeasurement.decode(value), raw: value))
                    } catch {
                        emit.yield(.malformed(raw: value, error: error))
                    }
                } else if handle == session.batteryHandle {
                    do {
                        emit.yield(.battery(try BatteryLevel.decode(value)))
                    } catch {
                        emit.yield(.malformed(raw: value, error: error))
                    }
                }
            case .malformed(let bytes, let error):
                emit.yield(.malformed(raw: bytes, error: error))
            }
        }
        return await session.client.closeReason?.description ?? "link closed"
    }
}
