/// What to do, step by step, while an alert is not yet acknowledged.
public enum EscalationAction: String, Hashable, Sendable, Codable, CaseIterable {
    /// Send the alert to the server again (a new `raised` update), so that the dispatch desk
    /// is alerted again.
    case resend
    /// Run the local fallback again (siren, SMS modem, phone call: whatever the site wired).
    case runFallback = "run_fallback"
    /// Notify the next emergency contact (through the local fallback), while the server does
    /// not have the alert; once it does, the server's contact escalation tells them.
    case notifyNextContact = "notify_next_contact"
}

/// One step of the escalation schedule, `after` the alert was raised.
public struct EscalationStep: Hashable, Sendable {
    public var after: Duration
    public var action: EscalationAction

    public init(after: Duration, action: EscalationAction) {
        self.after = after
        self.action = action
    }
}

/// How alerts travel to the server. `DispatchSettings()` gives the defaults.
public struct DispatchSettings: Hashable, Sendable {
    /// A failed send is retried this long after it failed.
    public var retryInterval: Duration = .seconds(1)
    /// While an alert is open, a new position goes out at most this often.
    public var positionInterval: Duration = .seconds(1)
    /// A send that has not answered within this time counts as failed (and starts the fallback).
    public var sendTimeout: Duration = .seconds(3)
    /// Until acknowledged, these steps run at their times after the raise, in order.
    public var escalation: [EscalationStep] = [
        EscalationStep(after: .seconds(60), action: .resend),
        EscalationStep(after: .seconds(120), action: .runFallback),
        EscalationStep(after: .seconds(180), action: .notifyNextContact),
    ]
    /// After the last step, it repeats this often until acknowledged; zero: no repeat.
    public var escalationRepeat: Duration = .seconds(120)
    /// The local fallback runs (once, reason `server_unreachable`) when a raised alert is still
    /// undelivered this long after it was raised and a send of it has failed: the agent's
    /// `fallback.after_seconds`. Zero runs it at the first failed send.
    public var fallbackAfter: Duration = .zero
    /// Whether the person is enrolled in AutomatedSOS (`AutomatedSOSService.active`) at start;
    /// the server's care settings switch it while running (`DispatchPolicy.Event.automatedSOS`).
    /// Off, a rule's alert still goes to the server (which reads the enrolment afresh and keeps it
    /// from dispatchers) and is shown to the wearer, but nothing on the device calls for help
    /// for it: no local fallback, no resend, no contact told. The SOS button is not
    /// AutomatedSOS: its alerts escalate either way.
    public var automatedSOS = true

    public init() {}
}

/// Why the local fallback runs.
public enum FallbackReason: String, Hashable, Sendable, Codable {
    /// The server could not be reached when the alert was sent.
    case serverUnreachable = "server_unreachable"
    /// An escalation step asked for it: the alert is still unacknowledged.
    case escalation
    /// An escalation step asked to notify the next contact.
    case notifyContact = "notify_contact"
}

/// The pure policy of the dispatch lane: which alert updates to send when, retries, position
/// updates, the local fallback and escalation. The lane (EdgeDispatch) performs its actions;
/// time is the lane clock's offset `now`, and `timestamp` stamps the updates it makes.
public struct DispatchPolicy: Sendable {
    public enum Event: Hashable, Sendable {
        /// An action of the SOS engine: `raise`, `positionUpdate`, `update` (acknowledged,
        /// resolved) and `cancelled` (of a raised alert) matter; the others are ignored.
        case engine(SOSAction)
        /// The server accepted an update. (That a dispatcher acknowledged comes back with the
        /// readings lane's batch acknowledgements, through the SOS engine: `.engine(.update)`.)
        case sendSucceeded(alertID: String, updateSequence: Int)
        /// The update could not be delivered (no network, error, timeout).
        case sendFailed(alertID: String, updateSequence: Int)
        /// The person's AutomatedSOS enrolment changed (the server's care settings).
        case automatedSOS(active: Bool)
        /// The local fallback ran for the alert and exited 0. For `notify_contact` the contact is
        /// told: every update of the alert sent from now on says so (`AlertUpdate.contactsTold`),
        /// so that the server does not tell them again.
        case fallbackSucceeded(alertID: String, reason: FallbackReason, contactIndex: Int?)
        /// Time passed.
        case tick
    }

    public enum Action: Hashable, Sendable {
        /// Send this update now (one at a time, in order).
        case send(AlertUpdate)
        /// Run the local fallback with this alert.
        case runFallback(AlertRecord, reason: FallbackReason, contactIndex: Int?)
        /// The server accepted the alert: tell the SOS engine (`.delivered`).
        case delivered(alertID: String)
        /// Show on the device that this alert is still unacknowledged (at the raise and at
        /// every escalation step), or that it is now acknowledged.
        case showAcknowledgement(alertID: String, acknowledged: Bool)
    }

    private struct Outgoing: Hashable, Sendable {
        var update: AlertUpdate
        var notBefore: Duration
        var attempted = false
    }

    private struct Tracked: Hashable, Sendable {
        var record: AlertRecord
        var nextSequence = 1
        var raisedAt: Duration
        var acknowledged = false
        var closed = false
        var fallbackRan = false
        /// The server has the raise (its send succeeded, or the engine says delivered).
        var delivered = false
        var sendFailed = false
        var nextStep = 0
        var nextStepAt: Duration?
        var contactsNotified = 0
        /// The contacts the fallback told, for the updates still to go.
        var contactsTold: [ContactTold] = []
        var lastPositionAt: Duration?
        var newPosition: AlertRecord?
    }

    public let settings: DispatchSettings
    /// AutomatedSOS as now in force: off, the rules' alerts escalate nowhere on the device.
    public private(set) var automatedSOS: Bool
    private var queue: [Outgoing] = []
    private var inFlight = false
    private var tracked: [String: Tracked] = [:]
    private let steps: [EscalationStep]
    // The work an event can cause must not grow with the alerts seen: a device that has been
    // worn for a year has many tracked alerts, and the decision path runs on every reading.
    // So escalation is scanned only once a step may be due (the earliest `nextStepAt`, kept
    // as a lower bound: a stale one only costs one extra scan), and position updates look only
    // at the alerts that have a new position waiting.
    private var earliestStepAt: Duration?
    /// The earliest time a `server_unreachable` fallback can be due (nil: none can be).
    private var earliestFallbackAt: Duration?
    private var positionsWaiting: Set<String> = []

    public init(settings: DispatchSettings = DispatchSettings()) {
        self.settings = settings
        automatedSOS = settings.automatedSOS
        steps = settings.escalation.sorted { $0.after < $1.after }
    }

    /// Tracks an alert that was open before a restart (read back from the journal), so that
    /// its position updates and escalation go on. `nextUpdateSequence` continues the numbering
    /// the server has seen. Its raise, if not yet delivered, is still in the journal and comes
    /// back through `adopt(undelivered:now:)`. Escalation starts over from `now`: after a
    /// restart the agent cannot tell which steps already ran, and a contact told twice is
    /// better than none. `contactsTold` are the contacts the fallback told of it before the
    /// restart (kept in the store): every update sent from now on names them, as before.
    public mutating func adopt(_ record: AlertRecord, nextUpdateSequence: Int, contactsTold: [ContactTold] = [], now: Duration) {
        guard tracked[record.id] == nil, record.state.isOpen, record.state != .pending else { return }
        var entry = Tracked(record: record, nextSequence: max(1, nextUpdateSequence), raisedAt: now, nextStepAt: steps.first.map { now + $0.after })
        entry.acknowledged = record.state == .acknowledged
        entry.delivered = record.state != .raised
        entry.contactsTold = contactsTold
        tracked[record.id] = entry
        scheduleStep(at: entry.nextStepAt)
    }

    /// Takes over the updates the journal holds and the server was never seen to accept (a
    /// raise made before a restart, offline): they go first, in the order given, so the policy
    /// is the one sender of every alert update. Call after `adopt(_:nextUpdateSequence:now:)`.
    public mutating func adopt(undelivered updates: [AlertUpdate], now: Duration) {
        for update in updates
        where !queue.contains(where: { $0.update.alert.id == update.alert.id && $0.update.updateSequence == update.updateSequence }) {
            queue.append(Outgoing(update: update, notBefore: now))
            if var entry = tracked[update.alert.id], entry.nextSequence <= update.updateSequence {
                entry.nextSequence = update.updateSequence + 1
                tracked[update.alert.id] = entry
            }
        }
    }

    /// Whether an update is in flight or due to go at `now`: while so, the readings lane waits
    /// (alerts first). An update waiting out its retry interval does not hold readings back.
    public func hasWorkDue(now: Duration) -> Bool {
        inFlight || (queue.first.map { $0.notBefore <= now } ?? false)
    }

    private mutating func scheduleStep(at due: Duration?) {
        guard let due else { return }
        earliestStepAt = min(earliestStepAt ?? due, due)
    }

    /// The contacts the fallback told of an alert still held (empty for one it no longer holds).
    public func contactsTold(alertID: String) -> [ContactTold] {
        tracked[alertID]?.contactsTold ?? []
    }

    /// Updates waiting to be sent (including the one in flight).
    public var queuedUpdates: [AlertUpdate] { queue.map(\.update) }

    /// How many alerts the policy holds (open, or closed with their last update unsent): what
    /// its work per event could grow with. A year of alerts that went out and closed leaves none.
    public var heldAlerts: Int { tracked.count }

    public mutating func receive(_ event: Event, now: Duration, timestamp: ReadingTimestamp) -> [Action] {
        var actions: [Action] = []
        switch event {
        case .engine(let action):
            receive(engine: action, now: now, timestamp: timestamp, into: &actions)
        case .sendSucceeded(let id, let sequence):
            inFlight = false
            if let index = queue.firstIndex(where: { $0.update.alert.id == id && $0.update.updateSequence == sequence }) {
                let sent = queue.remove(at: index)
                if sent.update.updateSequence == 0 {
                    tracked[id]?.delivered = true
                    actions.append(.delivered(alertID: id))
                }
                if sent.update.type == .cancelled || sent.update.type == .resolved { tracked[id] = nil }
            }
        case .sendFailed(let id, let sequence):
            inFlight = false
            if let index = queue.firstIndex(where: { $0.update.alert.id == id && $0.update.updateSequence == sequence }) {
                queue[index].notBefore = now + settings.retryInterval
                if var entry = tracked[id], !entry.fallbackRan, !entry.closed, !entry.delivered {
                    entry.sendFailed = true
                    tracked[id] = entry
                    let due = entry.raisedAt + settings.fallbackAfter
                    earliestFallbackAt = min(earliestFallbackAt ?? due, due)
                }
            }
        case .automatedSOS(let active):
            automatedSOS = active
        case .fallbackSucceeded(let id, let reason, let index):
            if reason == .notifyContact, let index { noteContactTold(id, index: index, now: now, timestamp: timestamp) }
        case .tick:
            break
        }
        fallBackIfDue(now: now, into: &actions)
        escalate(now: now, timestamp: timestamp, into: &actions)
        queuePositions(now: now, timestamp: timestamp)
        if !inFlight, let head = queue.first, head.notBefore <= now {
            inFlight = true
            queue[0].attempted = true
            // A retry may carry more told contacts than its first try: the server takes them
            // from a repeat too.
            if let told = tracked[head.update.alert.id]?.contactsTold, !told.isEmpty { queue[0].update.contactsTold = told }
            actions.append(.send(queue[0].update))
        }
        return actions
    }

    /// Remembers that the fallback told contact `index` of the alert. An update of it still
    /// waiting carries that when it goes; with none waiting (the server had the alert before the
    /// fallback finished) a position update goes to say so.
    private mutating func noteContactTold(_ id: String, index: Int, now: Duration, timestamp: ReadingTimestamp) {
        guard var entry = tracked[id], !entry.contactsTold.contains(where: { $0.contactIndex == index }) else { return }
        entry.contactsTold.append(ContactTold(contactIndex: index, at: timestamp, path: .localFallback))
        let waiting = queue.indices.contains { queue[$0].update.alert.id == id && !(inFlight && $0 == 0) }
        if !waiting, !entry.closed {
            queue.append(
                Outgoing(
                    update: AlertUpdate(alert: entry.record, updateSequence: entry.nextSequence, type: .position, sent: timestamp),
                    notBefore: now
                )
            )
            entry.nextSequence += 1
        }
        tracked[id] = entry
    }

    private mutating func receive(engine action: SOSAction, now: Duration, timestamp: ReadingTimestamp, into actions: inout [Action]) {
        switch action {
        case .raise(let record):
            guard tracked[record.id] == nil else { return }
            let firstStep = steps.first.map { now + $0.after }
            tracked[record.id] = Tracked(record: record, raisedAt: now, nextStepAt: firstStep)
            scheduleStep(at: firstStep)
            // An alert goes ahead of any other update still waiting (not the one in flight).
            let at = queue.isEmpty ? 0 : (inFlight ? 1 : 0)
            queue.insert(
                Outgoing(update: AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: timestamp), notBefore: now),
                at: at
            )
            actions.append(.showAcknowledgement(alertID: record.id, acknowledged: false))
        case .positionUpdate(let record):
            guard var entry = tracked[record.id], !entry.closed else { return }
            entry.record.position = record.position
            entry.newPosition = record
            tracked[record.id] = entry
            positionsWaiting.insert(record.id)
        case .kindChanged(let record):
            guard var entry = tracked[record.id], !entry.closed else { return }
            entry.record.kind = record.kind
            // A graver condition goes out at once, ahead of waiting positions (not of the one in flight).
            let at = queue.isEmpty ? 0 : (inFlight ? 1 : 0)
            queue.insert(
                Outgoing(
                    update: AlertUpdate(alert: entry.record, updateSequence: entry.nextSequence, type: .kindChanged, sent: timestamp),
                    notBefore: now
                ),
                at: at
            )
            entry.nextSequence += 1
            tracked[record.id] = entry
        case .update(let record):
            guard var entry = tracked[record.id] else { return }
            entry.record.state = record.state
            if record.state != .raised && record.state != .pending { entry.delivered = true }
            switch record.state {
            case .acknowledged:
                if !entry.acknowledged {
                    entry.acknowledged = true
                    actions.append(.showAcknowledgement(alertID: record.id, acknowledged: true))
                }
                tracked[record.id] = entry
            case .resolved:
                close(&entry, record: record, type: .resolved, now: now, timestamp: timestamp)
            case .pending, .raised, .delivered, .cancelled:
                tracked[record.id] = entry
            }
        case .cancelled(let record):
            guard var entry = tracked[record.id] else { return }
            close(&entry, record: record, type: .cancelled, now: now, timestamp: timestamp)
        case .startCountdown, .withdrawn, .logMonitoringPaused, .logMonitoringResumed:
            break
        }
    }

    private mutating func close(
        _ entry: inout Tracked,
        record: AlertRecord,
        type: AlertUpdate.UpdateType,
        now: Duration,
        timestamp: ReadingTimestamp
    ) {
        guard !entry.closed else { return }
        entry.closed = true
        entry.record = record
        entry.newPosition = nil
        // Position updates not yet tried are moot once the alert is over.
        queue.removeAll { $0.update.alert.id == record.id && $0.update.type == .position && !$0.attempted }
        queue.append(
            Outgoing(
                update: AlertUpdate(alert: record, updateSequence: entry.nextSequence, type: type, sent: timestamp),
                notBefore: now
            )
        )
        entry.nextSequence += 1
        tracked[record.id] = entry
    }

    /// The `server_unreachable` fallback, once per alert: undelivered for `fallbackAfter` since
    /// the raise, and a send of it failed. The alerts are scanned only once one can be due.
    private mutating func fallBackIfDue(now: Duration, into actions: inout [Action]) {
        guard let earliest = earliestFallbackAt, earliest <= now else { return }
        var next: Duration?
        for id in tracked.keys.sorted() {
            guard var entry = tracked[id], !entry.fallbackRan, !entry.closed, !entry.delivered, entry.sendFailed else { continue }
            let due = entry.raisedAt + settings.fallbackAfter
            guard due <= now else {
                next = min(next ?? due, due)
                continue
            }
            entry.fallbackRan = true
            tracked[id] = entry
            guard callsForHelp(entry.record) else { continue }
            actions.append(.runFallback(entry.record, reason: .serverUnreachable, contactIndex: nil))
        }
        earliestFallbackAt = next
    }

    private mutating func escalate(now: Duration, timestamp: ReadingTimestamp, into actions: inout [Action]) {
        guard !steps.isEmpty, let earliest = earliestStepAt, earliest <= now else { return }
        var nextEarliest: Duration?
        defer { earliestStepAt = nextEarliest }
        for id in tracked.keys.sorted() {
            guard var entry = tracked[id], !entry.acknowledged, !entry.closed else { continue }
            defer { if let next = entry.nextStepAt { nextEarliest = min(nextEarliest ?? next, next) } }
            // Off, a rule's alert passes its steps doing nothing (switched on again, it does not
            // run every missed step at once).
            let calls = callsForHelp(entry.record)
            while let due = entry.nextStepAt, due <= now {
                let step = steps[min(entry.nextStep, steps.count - 1)]
                switch calls ? step.action : nil {
                case nil:
                    break
                case .resend?:
                    queue.append(
                        Outgoing(
                            update: AlertUpdate(alert: entry.record, updateSequence: entry.nextSequence, type: .raised, sent: timestamp),
                            notBefore: now
                        )
                    )
                    entry.nextSequence += 1
                case .runFallback?:
                    actions.append(.runFallback(entry.record, reason: .escalation, contactIndex: nil))
                case .notifyNextContact?:
                    // Once the server has the alert its contact escalation tells the contacts (with
                    // a link that acknowledges): the device does so only while the server lacks it,
                    // so that no contact hears from both.
                    if !entry.delivered {
                        actions.append(.runFallback(entry.record, reason: .notifyContact, contactIndex: entry.contactsNotified))
                        entry.contactsNotified += 1
                    }
                }
                if calls { actions.append(.showAcknowledgement(alertID: id, acknowledged: false)) }
                entry.nextStep += 1
                if entry.nextStep < steps.count {
                    entry.nextStepAt = entry.raisedAt + steps[entry.nextStep].after
                } else if settings.escalationRepeat > .zero {
                    entry.nextStepAt = due + settings.escalationRepeat
                } else {
                    entry.nextStepAt = nil
                }
            }
            tracked[id] = entry
        }
    }

    /// Whether the device calls for help for this alert itself: always for the SOS button,
    /// for a rule's alert only while the person is enrolled in AutomatedSOS.
    private func callsForHelp(_ record: AlertRecord) -> Bool {
        record.kind == .manual || automatedSOS
    }

    private mutating func queuePositions(now: Duration, timestamp: ReadingTimestamp) {
        guard !positionsWaiting.isEmpty else { return }
        for id in positionsWaiting.sorted() {
            guard var entry = tracked[id], !entry.closed, let record = entry.newPosition else {
                positionsWaiting.remove(id)
                continue
            }
            if let last = entry.lastPositionAt, now - last < settings.positionInterval { continue }
            positionsWaiting.remove(id)
            if let index = queue.firstIndex(where: { $0.update.alert.id == id && $0.update.type == .position && !$0.attempted }) {
                // Offline: keep one waiting position, the newest, instead of a growing backlog.
                queue[index].update.alert = record
                queue[index].update.sent = timestamp
            } else {
                queue.append(
                    Outgoing(
                        update: AlertUpdate(alert: record, updateSequence: entry.nextSequence, type: .position, sent: timestamp),
                        notBefore: now
                    )
                )
                entry.nextSequence += 1
            }
            entry.lastPositionAt = now
            entry.newPosition = nil
            tracked[id] = entry
        }
    }
}
