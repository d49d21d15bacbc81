/// The one answer to "may this principal read this person's data now". Pure: every fact it
/// needs (the person's devices, their open and recently closed alerts, the consents they gave,
/// the runs they joined) comes in as a value, and time as `now`. Every page and API that shows a
/// person's data asks this, so a new reason to see data (a consent, a race) is added here once.
struct AccessPolicy: Hashable, Sendable {
    /// How long after an alert closed its dispatcher may still read the person's data (to write
    /// up the call). Past this, the history shows the alert but not the person's readings.
    var afterCloseMilliseconds: Int64 = 24 * 3600 * 1000
    /// How far before an alert opened its dispatcher reads the person's data (what led up to it).
    var beforeOpenMilliseconds: Int64 = 10 * 60 * 1000

    /// Facts about one person, gathered by the caller.
    struct Subject: Hashable, Sendable {
        var personID: String
        /// The devices worn by this person.
        var deviceIDs: Set<String> = []
        /// Their alerts: when opened and, if over, when closed.
        var alerts: [AlertSpan] = []
        /// Accounts the person (or their carer) allowed to read, until when (nil: until withdrawn).
        var consents: [Consent] = []
        /// Accounts organising a run this person joined, while it lasts.
        var runs: [RunMembership] = []
        /// The person's own accounts (a wearer signed in reads all of their data).
        var ownerAccountIDs: Set<String> = []
        /// The carers the person linked (`CarerLink`): they read the person's data, and
        /// download it only when the person allowed it.
        var carers: [Carer] = []
    }

    struct Carer: Hashable, Sendable {
        var accountID: String
        var mayExport: Bool
    }

    struct AlertSpan: Hashable, Sendable {
        var openedMilliseconds: Int64
        var closedMilliseconds: Int64?
    }

    struct Consent: Hashable, Sendable {
        var accountID: String
        var fromMilliseconds: Int64
        var untilMilliseconds: Int64?
        var withdrawn: Bool = false
        /// Which kinds of data (`PersonDataKind` raw values); nil: every kind.
        var kinds: Set<String>? = nil
    }

    struct RunMembership: Hashable, Sendable {
        var organiserAccountID: String
        var startMilliseconds: Int64
        var endMilliseconds: Int64
        /// What the runner let the organiser read at enrolment: their position always, their
        /// heart rate only with the runner's consent.
        var kinds: Set<PersonDataKind> = [.position]
    }

    /// The answer, with the reason (for the audit log and for tests).
    enum Decision: Hashable, Sendable {
        case allowed(Reason)
        case denied

        var isAllowed: Bool {
            switch self {
            case .allowed: true
            case .denied: false
            }
        }
    }

    enum Reason: String, Hashable, Sendable {
        case administrator
        case ownDevice = "own_device"
        case openAlert = "open_alert"
        case recentlyClosedAlert = "recently_closed_alert"
        case consent
        case joinedRun = "joined_run"
        case ownData = "own_data"
        /// A carer the person linked.
        case carer
    }

    func decide(_ principal: Principal, subject: Subject, now: Int64) -> Decision {
        switch principal.role {
        case .admin:
            return .allowed(.administrator)
        case .device:
            if let device = principal.deviceID, subject.deviceIDs.contains(device) { return .allowed(.ownDevice) }
            return .denied
        case .dispatcher:
            // Dispatchers see a person while an alert of theirs is being handled, and a while after.
            var recent = false
            for span in subject.alerts where span.openedMilliseconds <= now {
                guard let closed = span.closedMilliseconds else { return .allowed(.openAlert) }
                if now - closed <= afterCloseMilliseconds { recent = true }
            }
            return recent ? .allowed(.recentlyClosedAlert) : .denied
        case .wearer, .carer, .thirdParty:
            if let account = principal.accountID, subject.ownerAccountIDs.contains(account) { return .allowed(.ownData) }
            if principal.role == .carer, let account = principal.accountID, subject.carers.contains(where: { $0.accountID == account }) {
                return .allowed(.carer)
            }
            return consented(principal, subject: subject, now: now) ? .allowed(.consent) : .denied
        case .organiser:
            guard let account = principal.accountID else { return .denied }
            let running = subject.runs.contains {
                $0.organiserAccountID == account && $0.startMilliseconds <= now && now <= $0.endMilliseconds
            }
            return running ? .allowed(.joinedRun) : .denied
        case .fleetOperator:
            return consented(principal, subject: subject, now: now) ? .allowed(.consent) : .denied
        }
    }

    private func consented(_ principal: Principal, subject: Subject, now: Int64) -> Bool {
        guard let account = principal.accountID else { return false }
        return subject.consents.contains { consent in
            consent.accountID == account && !consent.withdrawn && consent.fromMilliseconds <= now
                && (consent.untilMilliseconds.map { now < $0 } ?? true)
        }
    }
}
