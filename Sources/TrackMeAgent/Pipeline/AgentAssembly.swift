import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
import Foundation
import GPSDPosition
public import Logging
import Metrics
public import ServiceLifecycle
import SimulatedStrap
import TrackMeCore

/// Builds the daemon's pipeline from its configuration: the store and group commit, the
/// heart-rate link (real L2CAP or the in-process simulated strap), the gpsd reader, the SOS
/// ticker, the dispatch lane and the sync engine, all around one `AgentPipeline`, and the
/// `PipelineControl` that answers the control socket.
///
/// Everything that can fail at start (the store cannot open, the token file is unreadable, the
/// trace does not parse) fails here, before any service runs.
public enum AgentAssembly {
    public struct Parts: Sendable {
        /// In start order: the store first (it stops last), then the consumers.
        public var services: [any Service]
        public var control: PipelineControl
    }

    /// Start-up failures, naming what and where.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public static func make(configuration: AgentConfiguration, logger: Logger) throws -> Parts {
        let timestamps = AgentTimestamps()
        let deviceID = configuration.server.deviceID
        let token = try readToken(configuration.server.tokenFile)
        guard let baseURL = URL(string: configuration.server.url) else {
            throw StartError(description: "server.url: not a URL: \(configuration.server.url)")
        }
        let simulated = try simulatedStrap(configuration.strap)

        let store: ReadingStore
        do {
            // systemd's StateDirectory= makes it on a Pi; elsewhere (tests, demos) the agent does.
            try FileManager.default.createDirectory(
                atPath: (configuration.store.path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            store = try ReadingStore(
                configuration: EdgeStore.StoreConfiguration(path: configuration.store.path, diskBudgetBytes: Int64(configuration.store.diskBudgetBytes)),
                logger: logger)
        } catch {
            throw StartError(description: "store.path: cannot open \(configuration.store.path): \(error)")
        }
        let restored = AgentPipeline.openAlert(in: store, logger: logger)
        if let restored {
            logger.notice("open alert restored from the journal", metadata: ["sos.alert_id": "\(restored.id)", "sos.state": "\(restored.state)"])
        }
        let committed = Counter(label: AgentMetricNames.readingsCommitted)
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), onCommit: { committed.increment(by: $0.count) })

        let http = URLSessionTransport(baseURL: baseURL)
        let heartbeat = HeartbeatState()
        let (syncEvents, syncEventSink) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .bufferingNewest(256))
        let (acknowledged, acknowledgedSink) = AsyncStream.makeStream(of: [String].self, bufferingPolicy: .bufferingNewest(256))
        let sync = SyncEngine(
            store: store, transport: http, configuration: SyncConfiguration(deviceID: deviceID, token: token), clock: ContinuousClock(),
            heartbeat: { heartbeat.heartbeat() }, onAlertsAcknowledged: { acknowledgedSink.yield($0) },
            onEvent: { syncEventSink.yield($0) }, logger: logger)
        // The restored alert's position updates go on, numbered above what the server has.
        var adopted: (alert: AlertRecord, nextUpdateSequence: Int)?
        if let restored {
            do {
                adopted = (restored, try store.nextAlertUpdateSequence(alertID: restored.id))
            } catch {
                logger.error("alert journal unreadable; the restored alert gets no position updates", metadata: ["store.error": "\(error)"])
            }
        }
        let lane = DispatchLane(
            transport: HTTPAlertTransport(transport: http, token: token, store: store), fallback: fallback(configuration.fallback),
            clock: ContinuousClock(), timestamp: { timestamps.now() }, restored: adopted, logger: logger)

        let (settings, profile) = configuration.sos.applied(to: SOSSettings(), profile: configuration.person)
        let pipeline = AgentPipeline(
            configuration: AgentPipeline.Configuration(deviceID: deviceID, profile: profile, settings: settings),
            store: store, committer: committer, ids: RandomAlertIDs(), now: timestamps.now(), restoring: restored,
            dispatch: { action in
                if case .raise(let record) = action {
                    Counter(label: AgentMetricNames.alertsRaised, dimensions: [("kind", record.kind.rawValue)]).increment()
                }
                await lane.submit(action)
                sync.alertJournaled()
            },
            logger: logger)
        let control = PipelineControl(
            pipeline: pipeline, deviceID: deviceID, storeBudgetBytes: configuration.store.diskBudgetBytes, timestamps: timestamps)

        let connector: StrapConnector
        if let simulated {
            connector = simulated.connector
        } else {
            connector = try l2capConnector(configuration.strap)
        }
        let link = HeartRateLink(connector: connector, clock: ContinuousClock(), logger: logger)
        let reader = GPSDReader(host: configuration.gpsd.host, port: configuration.gpsd.port, clock: ContinuousClock(), logger: logger)

        let services: [any Service] = [
            StoreService(committer: committer, store: store, logger: logger),
            DispatchService(lane: lane, pipeline: pipeline, control: control, timestamps: timestamps, logger: logger),
            SyncService(
                engine: sync, events: syncEvents, acknowledged: acknowledged, pipeline: pipeline, control: control, timestamps: timestamps),
            TickerService(pipeline: pipeline, control: control, timestamps: timestamps),
            HeartRateService(
                link: link, simulated: simulated, pipeline: pipeline, control: control, heartbeat: heartbeat, timestamps: timestamps,
                logger: logger),
            GPSService(reader: reader, pipeline: pipeline, control: control, heartbeat: heartbeat, timestamps: timestamps, logger: logger),
        ]
        return Parts(services: services, control: control)
    }

    static func readToken(_ path: String) throws -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw StartError(description: "server.token_file: cannot read \(path): \(error.localizedDescription)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw StartError(description: "server.token_file: \(path) is empty") }
        return token
    }

    static func simulatedStrap(_ strap: StrapConfiguration) throws -> SimulatedStrap? {
        guard case .socketPair(let settings) = strap.transport else { return nil }
        let trace: HeartRateTrace
        do {
            trace = try HeartRateTrace(csv: String(contentsOfFile: settings.tracePath, encoding: .utf8))
        } catch {
            throw StartError(description: "strap.trace: cannot load \(settings.tracePath): \(error)")
        }
        guard !trace.rows.isEmpty else { throw StartError(description: "strap.trace: \(settings.tracePath) has no rows") }
        return SimulatedStrap(trace: trace, pace: settings.pace, clock: ContinuousClock())
    }

    static func l2capConnector(_ strap: StrapConfiguration) throws -> StrapConnector {
        switch strap.selection {
        case .nearest:
            return L2CAPConnector.strongestNearby(adapter: strap.adapter)
        case .address(let text):
            guard let address = BluetoothAddress(text) else { throw StartError(description: "strap.address: not a Bluetooth address: \(text)") }
            return L2CAPConnector.connector(
                adapter: strap.adapter, address: address, addressType: strap.addressType == .random ? .random : .public)
        }
    }

    static func fallback(_ configuration: FallbackConfiguration) -> (any LocalFallback)? {
        guard let command = configuration.command, let program = command.first else { return nil }
        return ExecutableFallback(executable: URL(fileURLWithPath: program), arguments: Array(command.dropFirst()))
    }
}

/// Random UUIDs: alert ids never repeat across restarts.
struct RandomAlertIDs: AlertIDGenerator {
    mutating func next() -> String { UUID().uuidString.lowercased() }
}
