/// The kinds of a person's data that can be asked for and granted separately.
enum PersonDataKind: String, Codable, Hashable, Sendable, CaseIterable {
    case heartRate = "heart_rate"
    case position
    case alerts
}

extension AccessPolicy {
    /// What a principal may read of a person now: the spans of data time and the kinds.
    struct Grant: Hashable, Sendable {
        var reason: Reason
        /// Data placed at or after this; nil: from the start.
        var fromMilliseconds: Int64?
        /// Data placed before this; nil: up to now.
        var untilMilliseconds: Int64?
        /// Nil: every kind.
        var kinds: Set<PersonDataKind>?
        /// Whether it covers downloads (export JSON/CSV, track GPX): a carer's only when the
        /// person allowed them.
        var export: Bool = true

        func covers(_ kind: PersonDataKind) -> Bool { kinds?.contains(kind) ?? true }

        func covers(_ kind: PersonDataKind, at milliseconds: Int64) -> Bool {
            covers(kind) && (fromMilliseconds.map { milliseconds >= $0 } ?? true) && (untilMilliseconds.map { milliseconds < $0 } ?? true)
        }
    }

    /// The grants behind `decide`: empty when it denies. The owner and admins read everything; a
    /// dispatcher reads from a little before each alert it may see opened until it closed; a
    /// third party reads the kinds and the window of each consent in force.
    func grants(_ principal: Principal, subject: Subject, now: Int64) -> [Grant] {
        switch decide(principal, subject: subject, now: now) {
        case .denied:
            return []
        case .allowed(let reason):
            switch reason {
            case .administrator, .ownData, .ownDevice:
                return [Grant(reason: reason)]
            case .carer:
                guard let account = principal.accountID else { return [] }
                return subject.carers.filter { $0.accountID == account }.map { Grant(reason: .carer, export: $0.mayExport) }
            case .openAlert, .recentlyClosedAlert:
                return subject.alerts.compactMap { span in
                    guard span.openedMilliseconds <= now else { return nil }
                    if let closed = span.closedMilliseconds, now - closed > afterCloseMilliseconds { return nil }
                    let reason: Reason = span.closedMilliseconds == nil ? .openAlert : .recentlyClosedAlert
                    return Grant(
                        reason: reason,
                        fromMilliseconds: span.openedMilliseconds - beforeOpenMilliseconds,
                        untilMilliseconds: span.closedMilliseconds.map { $0 + 1 }
                    )
                }
            case .consent:
                guard let account = principal.accountID else { return [] }
                return subject.consents.compactMap { consent in
                    guard consent.accountID == account, !consent.withdrawn, consent.fromMilliseconds <= now,
                        consent.untilMilliseconds.map({ now < $0 }) ?? true
                    else { return nil }
                    return Grant(
                        reason: .consent,
                        fromMilliseconds: consent.fromMilliseconds,
                        untilMilliseconds: consent.untilMilliseconds,
                        kinds: consent.kinds.map { Set($0.compactMap(PersonDataKind.init(rawValue:))) }
                    )
                }
            case .joinedRun:
                guard let account = principal.accountID else { return [] }
                return subject.runs.filter { $0.organiserAccountID == account && $0.startMilliseconds <= now && now <= $0.endMilliseconds }
                    .map {
                        Grant(reason: .joinedRun, fromMilliseconds: $0.startMilliseconds, untilMilliseconds: $0.endMilliseconds + 1, kinds: $0.kinds)
                    }
            }
        }
    }
}
