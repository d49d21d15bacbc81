public import Logging
public import TrackMeCore

/// What the lane reports to the agent: the first two feed back into the `SOSEngine` and the
/// display; the rest are for logs, metrics and tests.
public enum DispatchLaneEvent: Hashable, Sendable {
    /// The server accepted the alert: send `.delivered(alertID:)` to the SOS engine.
    case delivered(alertID: String)
    /// Show on the device whether the alert is acknowledged yet.
    case showAcknowledgement(alertID: String, acknowledged: Bool)
    case sent(AlertUpdate)
    case sendFailed(AlertUpdate, error: String)
    case fallbackSucceeded(alertID: String, reason: FallbackReason)
    case fallbackFailed(alertID: String, reason: FallbackReason, error: String)
}

/// The dispatch lane: takes the SOS engine's actions, sends alerts and their updates through
/// the transport, retries every second until accepted, sends a position every second while an
/// alert is open, runs the local fallback at once when the server cannot be reached and
/// escalates until acknowledged (all decided by `DispatchPolicy`; this actor only performs it).
/// It is the only way an alert update leaves the device: updates journaled and not delivered
/// before a restart are handed to it at start (`undelivered:`), and each accepted update is
/// recorded in the journal (`delivered:`) so a restart does not send it again. The readings
/// lane waits on `alertsFirst()` before each batch.
///
/// Call `run()` in a task (the agent's service group); it returns when that task is cancelled.
/// A slow send or fallback never holds up the others: each runs in its own child task.
///
/// Wiring in the agent:
///
///     for action in engine.receive(event, now: t) {
///         journal(action)                      // durably first: raise, update, cancelled
///         await lane.submit(action)
///     }
///     for await event in lane.events {
///         switch event {
///         case .delivered(let id): feed(.delivered(alertID: id))      // back into the engine
///         case .showAcknowledgement(let id, let done): display(id, done)
///         default: break                       // logs, metrics
///         }
///     }
public actor DispatchLane {
    private enum Job: Sendable {
        case send(AlertUpdate)
        case fallback(AlertRecord, FallbackReason, Int?)
    }

    public nonisolated let events: AsyncStream<DispatchLaneEvent>
    private let eventSink: AsyncStream<DispatchLaneEvent>.Continuation
    /// Work the policy asked for, not yet started: `run()` starts each in a task of its own as
    /// it is woken; `step()` performs them in order.
    private var queued: [Job] = []
    private let wake: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation
    private let observe: (@Sendable (DispatchLaneEvent) -> Void)?
    private let recordDelivered: (@Sendable (AlertUpdate) -> Void)?
    private let recordContactsTold: (@Sendable (String, [ContactTold]) -> Void)?
    /// Set while `run()` runs: only then can work be due with no one performing it yet, which
    /// `alertsFirst()` waits for.
    private var running = false
    /// Callers of `alertsFirst()` waiting for the lane to have nothing due.
    private var alertsFirstWaiters: [CheckedContinuation<Void, Never>] = []

    private var policy: DispatchPolicy
    private let transport: any AlertTransport
    private let fallback: (any LocalFallback)?
    private let clock: any Clock<Duration>
    private let stopwatch: Stopwatch
    private let timestamp: @Sendable () -> ReadingTimestamp
    private let tickInterval: Duration
    private let sendTimeout: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - fallback: the site's local fallback, or nil if none is configured.
    ///   - clock: schedules retries, position updates, escalation and send timeouts.
    ///   - timestamp: stamps each update's `sent` (the agent's monotonic time with its boot id).
    ///   - tickInterval: how often the lane checks for due work; a quarter of the retry interval.
    ///   - restored: an alert that was open before a restart, taken over (see
    ///     `DispatchPolicy.adopt`), with the number for its next update and the contacts the
    ///     fallback had told of it.
    ///   - undelivered: updates the journal holds that the server was never seen to accept, in
    ///     the order they were made: sent first.
    ///   - delivered: records in the journal that the server has an update, before anyone
    ///     hears of it (so a restart does not send it again).
    ///   - contactsTold: keeps, before any update says so, the whole list of contacts the
    ///     fallback told of an alert each time it grows (so a restart does not forget them).
    ///   - observe: sees every event as it happens, besides `events` (for an owner that steps
    ///     the lane itself and reads what it did right after).
    public init(
        transport: any AlertTransport,
        fallback: (any LocalFallback)?,
        clock: any Clock<Duration>,
        settings: DispatchSettings = DispatchSettings(),
        tickInterval: Duration = .milliseconds(250),
        timestamp: @escaping @Sendable () -> ReadingTimestamp,
        restored: (alert: AlertRecord, nextUpdateSequence: Int, contactsTold: [ContactTold])? = nil,
        undelivered: [AlertUpdate] = [],
        delivered: (@Sendable (AlertUpdate) -> Void)? = nil,
        contactsTold: (@Sendable (_ alertID: String, [ContactTold]) -> Void)? = nil,
        observe: (@Sendable (DispatchLaneEvent) -> Void)? = nil,
        logger: Logger
    ) {
        policy = DispatchPolicy(settings: settings)
        if let restored {
            policy.adopt(restored.alert, nextUpdateSequence: restored.nextUpdateSequence, contactsTold: restored.contactsTold, now: .zero)
        }
        policy.adopt(undelivered: undelivered, now: .zero)
        self.recordDelivered = delivered
        self.recordContactsTold = contactsTold
        self.transport = transport
        self.fallback = fallback
        self.clock = clock
        self.stopwatch = Stopwatch(clock)
        self.timestamp = timestamp
        self.tickInterval = tickInterval
        self.sendTimeout = settings.sendTimeout
        self.logger = logger
        self.observe = observe
        (events, eventSink) = AsyncStream.makeStream(of: DispatchLaneEvent.self, bufferingPolicy: .bufferingNewest(1024))
        (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Hands the lane an action of the SOS engine (`raise`, `positionUpdate`, `update`,
    /// `cancelled`; the others are ignored). Returns once the first send, if any, is queued.
    public func submit(_ action: SOSAction) {
        apply(.engine(action))
    }

    /// The person's AutomatedSOS enrolment as the server's care settings now say: off, the
    /// rules' alerts get no fallback, resend or contact from the device (`DispatchSettings.automatedSOS`).
    public func setAutomatedSOS(active: Bool) {
        apply(.automatedSOS(active: active))
    }

    /// Whether the person is enrolled in AutomatedSOS as the lane now acts on it.
    public var automatedSOS: Bool { policy.automatedSOS }

    /// Performs the lane's work until the calling task is cancelled: the policy's clock ticks
    /// every `tickInterval`, and each send or fallback runs in a task of its own.
    public func run() async {
        let wake = self.wake
        running = true
        defer {
            running = false
            releaseAlertsFirst()
        }
        // Work adopted at start (or submitted before the run) goes at once.
        apply(.tick)
        await withDiscardingTaskGroup { group in
            group.addTask { await self.tickLoop() }
            for await _ in wake {
                for job in await self.takeQueued() {
                    group.addTask { await self.perform(job) }
                }
            }
            group.cancelAll()
        }
    }

    /// The lane's work due now, performed in order and awaited, each answer going back to the
    /// policy at once (the next update goes when the previous is answered): for an owner whose
    /// event loop is the scheduler instead of `run()` (the simulation, on the virtual clock it
    /// advances). The same policy, sends, timeouts and fallback as `run()`.
    public func step() async {
        apply(.tick)
        while !queued.isEmpty {
            for job in await takeQueued() {
                await perform(job)
            }
        }
    }

    /// Updates waiting to be sent (including the one in flight).
    public var queuedUpdates: [AlertUpdate] { policy.queuedUpdates }

    /// Returns once the lane has no alert update in flight or due now: the readings lane calls
    /// it before each batch, so an alert never waits behind readings (an update waiting out its
    /// retry interval, the server unreachable for it too, holds nothing back). A lane that is
    /// stepped (`step()` performs all that is due before it returns) or not running holds no one.
    public func alertsFirst() async {
        while isSendingAlerts {
            await withCheckedContinuation { alertsFirstWaiters.append($0) }
        }
    }

    private var isSendingAlerts: Bool { running && policy.hasWorkDue(now: stopwatch.elapsed) }

    private func releaseAlertsFirst() {
        guard !alertsFirstWaiters.isEmpty, !isSendingAlerts else { return }
        let waiters = alertsFirstWaiters
        alertsFirstWaiters.removeAll()
        for waiter in waiters { waiter.resume() }
    }

    private func takeQueued() async -> [Job] {
        defer { queued.removeAll() }
        return queued
    }

    private func tickLoop() async {
        await Self.ticks(on: clock, every: tickInterval) { await self.apply(.tick) }
        // Cancelled: stop taking jobs too.
        wakeSink.finish()
    }

    private func enqueue(_ job: Job) {
        queued.append(job)
        wakeSink.yield()
    }

    private nonisolated func emit(_ event: DispatchLaneEvent) {
        observe?(event)
        eventSink.yield(event)
    }

    /// Calls `tick` at fixed deadlines (start + k * interval), so that late wake-ups do not
    /// shift the schedule; returns when cancelled.
    private static func ticks<C: Clock<Duration>>(
        on clock: C,
        every interval: Duration,
        _ tick: @Sendable () async -> Void
    ) async {
        var deadline = clock.now.advanced(by: interval)
        while true {
            do {
                try await clock.sleep(until: deadline, tolerance: nil)
            } catch {
                return
            }
            await tick()
            deadline = deadline.advanced(by: interval)
        }
    }

    private func apply(_ event: DispatchPolicy.Event) {
        for action in policy.receive(event, now: stopwatch.elapsed, timestamp: timestamp()) {
            switch action {
            case .send(let update):
                enqueue(.send(update))
            case .runFallback(let record, let reason, let index):
                enqueue(.fallback(record, reason, index))
            case .delivered(let id):
                emit(.delivered(alertID: id))
            case .showAcknowledgement(let id, let acknowledged):
                emit(.showAcknowledgement(alertID: id, acknowledged: acknowledged))
            }
        }
        releaseAlertsFirst()
    }

    private nonisolated func perform(_ job: Job) async {
        switch job {
        case .send(let update):
            let outcome = await sendWithTimeout(update)
            await finished(update, outcome)
        case .fallback(let record, let reason, let index):
            guard let fallback else {
                logger.warning("alert needs the local fallback but none is configured", metadata: ["sos.alert_id": "\(record.id)"])
                return
            }
            do {
                try await fallback.run(record, reason: reason, contactIndex: index)
                logger.info(
                    "local fallback ran",
                    metadata: ["sos.alert_id": "\(record.id)", "sos.fallback_reason": "\(reason.rawValue)"]
                )
                // The policy first: an update sent from now on says whom the fallback told.
                await fallbackSucceeded(record.id, reason: reason, contactIndex: index)
                emit(.fallbackSucceeded(alertID: record.id, reason: reason))
            } catch {
                // Logged, and nothing else: the retries to the server go on regardless.
                logger.error(
                    "local fallback failed",
                    metadata: [
                        "sos.alert_id": "\(record.id)", "sos.fallback_reason": "\(reason.rawValue)", "error": "\(error)",
                    ]
                )
                emit(.fallbackFailed(alertID: record.id, reason: reason, error: "\(error)"))
            }
        }
    }

    private func fallbackSucceeded(_ id: String, reason: FallbackReason, contactIndex: Int?) {
        let before = policy.contactsTold(alertID: id).count
        apply(.fallbackSucceeded(alertID: id, reason: reason, contactIndex: contactIndex))
        let told = policy.contactsTold(alertID: id)
        if told.count > before { recordContactsTold?(id, told) }
    }

    private enum Outcome: Sendable {
        case accepted
        case failed(String)
    }

    /// The send's outcome, or a failure once `sendTimeout` has passed on the lane's clock,
    /// without waiting for the send to end: a transport may not end when cancelled (libcurl on
    /// a blocking thread, to a server that took the connection and never answers, ends at its own
    /// timeout), and the fallback must not wait for it.
    private nonisolated func sendWithTimeout(_ update: AlertUpdate) async -> Outcome {
        let transport = self.transport
        let timeout = sendTimeout
        let outcome = await Task.value(within: timeout, on: clock) { () -> Outcome in
            do {
                try await transport.send(update)
                return .accepted
            } catch {
                return .failed("\(error)")
            }
        }
        return outcome ?? .failed("no answer within \(timeout)")
    }

    private func finished(_ update: AlertUpdate, _ outcome: Outcome) {
        switch outcome {
        case .accepted:
            // The journal and the policy learn first, so whoever sees the event sees the lane
            // already past it.
            recordDelivered?(update)
            apply(.sendSucceeded(alertID: update.alert.id, updateSequence: update.updateSequence))
            emit(.sent(update))
        case .failed(let message):
            logger.info(
                "alert update not delivered, will retry",
                metadata: ["sos.alert_id": "\(update.alert.id)", "sos.update_seq": "\(update.updateSequence)", "error": "\(message)"]
            )
            apply(.sendFailed(alertID: update.alert.id, updateSequence: update.updateSequence))
            emit(.sendFailed(update, error: message))
        }
    }
}
