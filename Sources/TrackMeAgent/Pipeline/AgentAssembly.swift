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
        /// What the agent knows now; the heartbeat is derived from it.
        var state: AgentStateCell
        var dispatchSettings: DispatchSettings
        /// Ordered by the server (the person's data was erased): wipe after the services stop.
        public var wipe: WipeSignal
    }

    /// Start-up failures, naming what and where.
    public struct StartError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// - timestamps: the daemon's clock source (a wall-clock offset file for a rehearsal of a
    ///   clock jump, `trackme-agent run --wall-clock-offset-file`).
    /// - environment: the process environment (nil: this process's); `CREDENTIALS_DIRECTORY`
    ///   (systemd) is where the store key credential is looked for.
    public static func make(
        configuration: AgentConfiguration,
        timestamps: AgentTimestamps = AgentTimestamps(),
        logger: Logger,
        environment: [String: String]? = nil
    ) throws -> Parts {
        let deviceID = configuration.server.deviceID
        let key = try storeKey(configuration.store, environment: environment ?? ProcessInfo.processInfo.environment)
        guard let baseURL = URL(string: configuration.server.url) else {
            throw StartError(description: "server.url: not a URL: \(configuration.server.url)")
        }
        let simulated = try simulatedStrap(configuration.strap)

        let store: ReadingStore
        do {
            // systemd's StateDirectory= makes it on a Pi; elsewhere (tests, demos) the agent does.
            try FileManager.default.createDirectory(
                atPath: (configuration.store.path as NSString).deletingLastPathComponent,
                withIntermediateDirectories: true
            )
            store = try ReadingStore(
                configuration: EdgeStore.StoreConfiguration(
                    path: configuration.store.path,
                    diskBudgetBytes: Int64(configuration.store.diskBudgetBytes),
                    encryptionKey: key
                ),
                logger: logger
            )
        } catch {
            throw StartError(description: "store.path: cannot open \(configuration.store.path): \(error)")
        }
        if let problem = store.openReport.memoryFallback, problem.code == .wrongKey || problem.code == .keyMissing {
            // The encrypted file is kept as it is; monitoring and alerts go on from memory, and
            // `status` shows the store as memory_only with this reason.
            logger.error(
                "store key missing or wrong; the encrypted store is kept untouched and the agent runs from memory",
                metadata: ["store.path": "\(configuration.store.path)", "store.error": "\(problem)"]
            )
        } else if let keyID = store.encryptionKeyID {
            logger.info("store encrypted at rest", metadata: ["store.path": "\(configuration.store.path)", "store.key_id": "\(keyID)"])
        }
        let token = try deviceToken(configuration.server.tokenFile, store: store, logger: logger)
        let deviceState = AgentPipeline.deviceState(in: store, logger: logger)
        timestamps.restoreAnchors(from: store, deviceID: deviceID, logger: logger)
        let committed = Counter(label: AgentMetricNames.readingsCommitted)

        // The one HTTP client, libcurl with kept-alive connections: the system trust store
        // unless a CA file is configured, and the key pins if any.
        let trust = ServerTrust(caFile: configuration.server.caFile, publicKeySHA256: configuration.server.pinSHA256)
        func transport(_ url: URL) -> any HTTPTransport {
            CurlTransport(baseURL: url, trust: trust)
        }
        // Several instances (`server.urls`): fail over on no answer or a 5xx.
        let fallbacks = configuration.server.fallbackURLs.compactMap(URL.init(string:)).filter { $0 != baseURL }
        let started = ContinuousClock.now
        let http: any HTTPTransport =
            fallbacks.isEmpty
            ? transport(baseURL)
            : FailoverTransport(transports: ([baseURL] + fallbacks).map(transport), now: { ContinuousClock.now - started })
        let (syncEvents, syncEventSink) = AsyncStream.makeStream(of: SyncEvent.self, bufferingPolicy: .bufferingNewest(256))
        // What dispatchers decided (acknowledged, resolved), in the order the server said it.
        let (fromDispatchers, dispatcherSink) = AsyncStream.makeStream(of: SOSEvent.self, bufferingPolicy: .bufferingNewest(256))
        var dispatchSettings = dispatchSettings(configuration.fallback)
        // The server's care settings kept from an earlier run, over the device profile's
        // settings and the configuration file's; the file's own rule overrides on top.
        let care = SyncReplyOrders.startingResolution(
            configured: configuration.person,
            device: configuration.profile,
            overrides: configuration.sos,
            store: store,
            logger: logger
        )
        let (settings, profile) = (care.settings, care.profile)
        dispatchSettings.automatedSOS = care.automatedSOS.active
        // The one composition root, on the real clock; the simulation builds the same on its
        // virtual clock.
        var inputs = AgentCore.Inputs(
            store: store,
            sync: SyncConfiguration(
                deviceID: deviceID,
                token: token,
                heartbeatInterval: configuration.profile.heartbeatInterval,
                sendInterval: configuration.profile.sendInterval
            ),
            profile: profile,
            settings: settings,
            positionSampling: PositionSamplingPolicy(configuration: configuration.profile.sampling),
            dispatch: dispatchSettings,
            clock: ContinuousClock(),
            transport: http,
            fallback: fallback(configuration.fallback),
            ids: RandomAlertIDs(),
            timestamp: { timestamps.now() },
            deviceState: deviceState,
            logger: logger
        )
        inputs.onCommit = { committed.increment(by: $0.count) }
        inputs.batteryWarningPercent = configuration.strap.batteryWarningPercent
        let feedback = FeedbackDriver(
            machine: FeedbackMachine(resolvedShownFor: .milliseconds(Int64(configuration.feedback.resolvedShownSeconds * 1000))),
            clock: ContinuousClock()
        )
        inputs.feedback = feedback
        inputs.onAlertsAcknowledged = { ids in for id in ids { dispatcherSink.yield(.acknowledged(alertID: id)) } }
        inputs.onAlertsResolved = { ids in for id in ids { dispatcherSink.yield(.resolved(alertID: id)) } }
        inputs.onSyncEvent = { syncEventSink.yield($0) }
        inputs.correctTimes = { timestamps.corrected($1, batchSequence: $0) }
        inputs.onDispatch = { action in
            if case .raise(let record) = action {
                Counter(label: AgentMetricNames.alertsRaised, dimensions: [("kind", record.kind.rawValue)]).increment()
            }
        }
        let core = AgentCore(inputs)
        let (committer, sync, lane, pipeline, restored) = (core.committer, core.sync, core.lane, core.pipeline, core.restored)
        if let restored {
            logger.notice("open alert restored from the journal", metadata: ["sos.alert_id": "\(restored.id)", "sos.state": "\(restored.state)"])
        }
        // An alert still open from before the restart shows again.
        if let restored { feedback.receive(.engine(.update(restored))) }
        let control = PipelineControl(
            pipeline: pipeline,
            timestamps: timestamps,
            feedback: feedback,
            profile: configuration.profile,
            run: configuration.run.map { RunParticipation(code: $0.code, showToSpectators: $0.showToSpectators, shareHealth: $0.shareHealth) },
            rideAnswers: RideAnswerSender(transport: http, token: token)
        )
        let wipe = WipeSignal()
        let replyOrders = SyncReplyOrders(
            person: configuration.person,
            device: configuration.profile,
            overrides: configuration.sos,
            store: store,
            pipeline: pipeline,
            lane: lane,
            feedback: feedback,
            wipe: wipe,
            inForce: care,
            logger: logger
        )

        let connector: StrapConnector
        if let simulated {
            connector = simulated.connector
        } else {
            connector = try l2capConnector(configuration.strap)
        }
        let link = HeartRateLink(connector: connector, clock: ContinuousClock(), logger: logger)
        let reader = GPSDReader(host: configuration.gpsd.host, port: configuration.gpsd.port, clock: ContinuousClock(), logger: logger)

        var services: [any Service] = [
            StoreService(committer: committer, store: store, pipeline: pipeline, logger: logger),
            feedbackService(configuration.feedback, driver: feedback, logger: logger),
            DispatchService(lane: lane, pipeline: pipeline, control: control, timestamps: timestamps, logger: logger),
            SyncService(
                engine: sync,
                events: syncEvents,
                fromDispatchers: fromDispatchers,
                pipeline: pipeline,
                control: control,
                timestamps: timestamps,
                replyOrders: replyOrders
            ),
            WipeService(signal: wipe),
            TickerService(pipeline: pipeline, control: control, timestamps: timestamps, logger: logger),
            HeartRateService(
                link: link,
                simulated: simulated,
                pipeline: pipeline,
                control: control,
                timestamps: timestamps,
                logger: logger
            ),
            GPSService(reader: reader, pipeline: pipeline, timestamps: timestamps, logger: logger),
        ]
        let power = configuration.power
        services.append(
            PowerService(
                directory: PowerSupplyDirectory(path: power.supplyDirectory),
                interval: .milliseconds(Int64(power.pollSeconds * 1000)),
                monitor: PowerMonitor(
                    settings: PowerWatch.Settings(lowPercent: power.lowPercent, criticalPercent: power.criticalPercent),
                    state: core.state,
                    feedback: feedback,
                    sendHeartbeat: { await sync.sendHeartbeatAlone() },
                    logger: logger
                ),
                clock: ContinuousClock()
            )
        )
        if let device = configuration.button.device {
            let reader = ButtonReader(path: device, keyCode: configuration.button.keyCode, logger: logger)
            services.append(
                ButtonService(
                    reader: reader,
                    machine: ButtonMachine(
                        longPress: .milliseconds(Int64(configuration.button.longPressSeconds * 1000)),
                        discreetPresses: configuration.button.discreetPresses,
                        discreetLongPress: configuration.button.discreetLongPress
                    ),
                    control: control,
                    clock: ContinuousClock(),
                    logger: logger
                )
            )
        }
        return Parts(services: services, control: control, state: core.state, dispatchSettings: dispatchSettings, wipe: wipe)
    }

    /// `fallback.after_seconds` becomes the lane's fallback delay.
    static func dispatchSettings(_ fallback: FallbackConfiguration) -> DispatchSettings {
        var settings = DispatchSettings()
        settings.fallbackAfter = .milliseconds(Int64((fallback.afterSeconds * 1000).rounded()))
        return settings
    }

    static func feedbackService(_ configuration: FeedbackConfiguration, driver: FeedbackDriver, logger: Logger) -> FeedbackService {
        var patterns = LEDPattern.defaults
        patterns.merge(configuration.patterns) { _, configured in configured }
        return FeedbackService(
            driver: driver,
            led: configuration.led.map(LEDClassDevice.init),
            patterns: patterns,
            hook: configuration.command.map {
                FeedbackHook(command: $0, timeLimit: .milliseconds(Int64(configuration.commandTimeoutSeconds * 1000)))
            },
            clock: ContinuousClock(),
            logger: logger
        )
    }

    /// The files `make` opens before anything starts, opened the same way (`config check`): the
    /// store key, the device token, the simulated strap's trace. `problems` are what `run` would
    /// refuse; `notes` what cannot be decided outside the service (a systemd credential, a token
    /// already sealed in an encrypted store).
    public static func checkFiles(_ configuration: AgentConfiguration, environment: [String: String]) -> (problems: [String], notes: [String]) {
        var problems: [String] = []
        var notes: [String] = []
        let store = configuration.store
        let credentials = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        if store.encryption == .required, credentials == nil, store.keyFile == nil {
            notes.append(
                "store.key: expected from the systemd credential \(store.keyCredential) ($CREDENTIALS_DIRECTORY is set only inside the service): not checked here"
            )
        } else {
            do {
                _ = try storeKey(store, environment: environment)
            } catch {
                problems.append("\(error)")
            }
        }
        let tokenFile = configuration.server.tokenFile
        if FileManager.default.fileExists(atPath: tokenFile) || store.encryption == .off {
            do {
                _ = try readToken(tokenFile)
            } catch {
                problems.append("\(error)")
            }
        } else {
            notes.append("server.token_file: \(tokenFile) does not exist: run starts only if an earlier run sealed the token in the encrypted store")
        }
        do {
            _ = try simulatedStrap(configuration.strap)
        } catch {
            problems.append("\(error)")
        }
        return (problems, notes)
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

    /// The device token: from the token file when there is one; an encrypted store keeps it
    /// sealed (replacing an older one: a rotated token is simply a new file), so that after the
    /// first start the file can be removed and the token lives only in the store
    /// (hardware/STORE-KEY.md). A store in clear never holds it.
    static func deviceToken(_ path: String, store: ReadingStore, logger: Logger) throws -> String {
        let key = ReadingStore.DeviceStateKey.deviceToken
        let stored: String? =
            store.isEncrypted && store.openReport.memoryFallback == nil
            ? (try? store.deviceState(key)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) } : nil
        if !FileManager.default.fileExists(atPath: path), let stored, !stored.isEmpty {
            logger.info("device token taken from the encrypted store", metadata: ["server.token_file": "\(path)"])
            return stored
        }
        if !FileManager.default.fileExists(atPath: path), let problem = store.openReport.memoryFallback,
            problem.code == .wrongKey || problem.code == .keyMissing
        {
            // The token is sealed in a store we cannot open: the agent still starts, so that the
            // wearer keeps local SOS and the fallback; the server refuses the empty token (401 in
            // `status`) until the right key is back.
            logger.error(
                "device token sealed in a store whose key is missing or wrong; syncing is refused until the key is fixed",
                metadata: ["server.token_file": "\(path)", "store.error": "\(problem)"]
            )
            return ""
        }
        let token = try readToken(path)
        if store.isEncrypted, store.openReport.memoryFallback == nil, token != stored {
            do {
                try store.setDeviceState(Data(token.utf8), for: key)
                logger.notice(
                    "device token sealed in the encrypted store; the token file can now be removed",
                    metadata: ["server.token_file": "\(path)"]
                )
            } catch {
                logger.warning("device token not sealed in the store; the token file is still needed", metadata: ["store.error": "\(error)"])
            }
        }
        return token
    }

    /// The store key per `store.encryption`: the systemd credential first
    /// (`$CREDENTIALS_DIRECTORY/<key_credential>`), then `store.key_file`. A key_file that is
    /// configured must be readable; `required` with neither is a start error.
    static func storeKey(_ store: StoreConfiguration, environment: [String: String]) throws -> StoreKey? {
        switch store.encryption {
        case .off:
            return nil
        case .auto, .required:
            var path: String?
            if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
                let candidate = (directory as NSString).appendingPathComponent(store.keyCredential)
                if FileManager.default.fileExists(atPath: candidate) { path = candidate }
            }
            if path == nil { path = store.keyFile }
            guard let path else {
                if store.encryption == .required {
                    throw StartError(
                        description:
                            "store.encryption: required, but there is no key: no credential \(store.keyCredential) in $CREDENTIALS_DIRECTORY (LoadCredentialEncrypted=) and no store.key_file"
                    )
                }
                return nil
            }
            do {
                return try StoreKey.load(path: path)
            } catch {
                throw StartError(description: "store.key: \(error)")
            }
        }
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
                adapter: strap.adapter,
                address: address,
                addressType: strap.addressType == .random ? .random : .public
            )
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
