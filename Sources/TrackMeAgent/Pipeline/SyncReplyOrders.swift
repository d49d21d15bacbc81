import EdgeDispatch
import EdgeStore
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TrackMeCore

/// Carries out what the server orders in its replies to batches (`SyncOrders`, WIRE.md "Orders
/// in the sync reply"); the sync service hands it every reply's orders, once.
///
/// - Care settings: resolved over the configuration (`CareSettingsResolution`), applied to the
///   running rules, kept in the store (`device_state`) so a restart starts from them, and their
///   version (with any local-override conflicts) goes into the next heartbeat and `status`.
///   The AutomatedSOS enrolment they carry reaches the dispatch lane (off: a rule's alert calls
///   nobody from the device) and the wearer's feedback (`not_dispatched`); `discreet_sos`
///   reaches the rules, which raise every alert discreetly (nothing shown, the fallback told).
///   An older version than the one in force is ignored.
/// - Wipe: the person's data was erased on the server. The agent stops (the `WipeService` ends
///   the service group) and `trackme-agent run` then wipes the store, its key and the token
///   (`DeviceWipe`), exactly as `trackme-agent wipe` does, and exits 0. A wiped device does not
///   sync again: it has no token; to serve someone else it is enrolled anew (new token file).
final class SyncReplyOrders: Sendable {
    static let stateKey = "care_settings"

    let person: PersonProfile
    let device: DeviceProfile
    let overrides: SOSRuleOverrides
    let store: ReadingStore
    let pipeline: AgentPipeline
    let lane: DispatchLane?
    let feedback: FeedbackDriver?
    var state: AgentStateCell { pipeline.state }
    let wipe: WipeSignal
    let logger: Logger
    private let inForce: Mutex<Int64?>

    init(
        person: PersonProfile,
        device: DeviceProfile = .wearer,
        overrides: SOSRuleOverrides,
        store: ReadingStore,
        pipeline: AgentPipeline,
        lane: DispatchLane? = nil,
        feedback: FeedbackDriver? = nil,
        wipe: WipeSignal,
        inForce: CareSettingsResolution,
        logger: Logger
    ) {
        self.person = person
        self.device = device
        self.overrides = overrides
        self.store = store
        self.pipeline = pipeline
        self.lane = lane
        self.feedback = feedback
        self.wipe = wipe
        self.logger = logger
        self.inForce = Mutex(inForce.version)
        let care = inForce.status
        state.update { state, _ in state.care = care }
        feedback?.receive(.automatedSOS(active: inForce.automatedSOS.active))
    }

    /// The care settings the store kept from an earlier run, resolved over the configuration.
    static func startingResolution(
        configured person: PersonProfile,
        device: DeviceProfile = .wearer,
        overrides: SOSRuleOverrides,
        store: ReadingStore,
        logger: Logger
    )
        -> CareSettingsResolution
    {
        var server: CareSettings?
        do {
            if let data = try store.deviceState(stateKey) { server = try WireCodec.decode(CareSettings.self, from: data) }
        } catch {
            logger.warning("kept care settings unreadable; the configuration file's values are used", metadata: ["store.error": "\(error)"])
        }
        return CareSettingsResolution(configured: person, device: device, overrides: overrides, server: server)
    }

    func handle(_ orders: SyncOrders) async {
        if let wipeOrder = orders.wipe {
            logger.critical(
                "the server ordered this device wiped (its person's data was erased); stopping to wipe the store",
                metadata: ["server.ordered_ms": "\(wipeOrder.orderedMilliseconds)"]
            )
            wipe.order()
            return
        }
        guard let settings = orders.careSettings else { return }
        if let problem = settings.problem() {
            logger.warning(
                "care settings from the server refused",
                metadata: ["care.field": "\(problem.field)", "care.problem": "\(problem.message)"]
            )
            return
        }
        let newer = inForce.withLock { current -> Bool in
            guard settings.version > (current ?? 0) else { return false }
            current = settings.version
            return true
        }
        guard newer else { return }
        let resolution = CareSettingsResolution(configured: person, device: device, overrides: overrides, server: settings)
        await pipeline.reconfigure(profile: resolution.profile, settings: resolution.settings)
        await lane?.setAutomatedSOS(active: resolution.automatedSOS.active)
        feedback?.receive(.automatedSOS(active: resolution.automatedSOS.active))
        let care = resolution.status
        state.update { state, _ in state.care = care }
        do {
            try store.setDeviceState(try WireCodec.encode(settings), for: Self.stateKey)
        } catch {
            logger.warning(
                "care settings applied but not kept; a restart uses the previous ones until the next sync",
                metadata: ["store.error": "\(error)"]
            )
        }
        logger.notice(
            "care settings from the server applied",
            metadata: [
                "care.version": "\(settings.version)", "care.conflicts": "\(resolution.conflicts.joined(separator: ","))",
                "care.automated_sos": "\(resolution.automatedSOS.active ? "on" : "off")",
            ]
        )
    }
}

/// Set once when the server orders a wipe; `WipeService` waits for it.
public final class WipeSignal: Sendable {
    private let ordered = Mutex(false)
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public var isOrdered: Bool { ordered.withLock { $0 } }

    func order() {
        ordered.withLock { $0 = true }
        continuation.yield()
        continuation.finish()
    }

    /// Returns once ordered, or when the waiting task is cancelled.
    func wait() async {
        for await _ in stream { return }
    }
}

/// Ends when the server orders a wipe, which shuts the agent's service group down gracefully
/// (the store is committed and closed first); `trackme-agent run` then wipes.
struct WipeService: Service {
    let signal: WipeSignal

    func run() async {
        await cancelWhenGracefulShutdown { await signal.wait() }
    }
}
