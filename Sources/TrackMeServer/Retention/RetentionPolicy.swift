/// The kinds of personal data the server keeps, each with its own retention period
/// (`RetentionPolicy`). Adding a kind is one case here and its rules in the tables' declarations
/// (`PersonalTables`), or a store method of its own, as readings have.
public enum PersonalDataKind: String, Hashable, Sendable, Codable, CaseIterable {
    /// Heart rate and position readings, by the time they are filed under (`placed_ms`).
    case readings
    /// The updates of a closed alert (its timeline: every position and reading the device sent
    /// with it), the dispatchers' notes on it and its contact notifications, counted from when
    /// they were received. An open alert loses nothing.
    case alertUpdates = "alert_updates"
    /// A closed alert's own row (kind, times, outcome, who acknowledged and resolved it), counted
    /// from when it closed; whatever is left of its updates goes with it.
    case closedAlerts = "closed_alerts"
    /// The dispatcher feed's events (they name the person and carry alert updates).
    case feedEvents = "feed_events"
    /// Everything left of a person whose device is retired (no token left: revoked) and has not
    /// been heard from for the period: the device row with the person's profile, care settings,
    /// batches and epochs; and the wipe orders of erased devices.
    case retiredPeople = "retired_people"
    /// Who read a person's data, when and why (`access_log`, People/).
    case accessLog = "access_log"
    /// The group figures' daily per-person summaries (`person_days`, by their day) and the
    /// answered group queries (by when they were answered).
    case groupFigures = "group_figures"
    /// A runner's entry in a run (name, last public position), counted from the run's end.
    case finishedRuns = "finished_runs"
    /// A taxi terminal's row (name, state, last position), counted from its last report.
    case fleetTerminals = "fleet_terminals"
}

/// One retention policy for every kind of personal data: a period per kind (60 days unless
/// configured), and the cut-off each pass deletes before. Pure: the time comes in, the store
/// acts on the cut-offs.
///
/// ```swift
/// let policy = try RetentionPolicy(periods: [.closedAlerts: .seconds(365 * 86_400)])
/// for cutoff in policy.cutoffs(nowMilliseconds: wall) { try await store.applyRetention(cutoff, nowMilliseconds: wall) }
/// ```
public struct RetentionPolicy: Hashable, Sendable {
    /// 60 days, the period the service promises its users unless the operator sets another.
    public static let defaultPeriod: Duration = .seconds(60 * 86_400)

    /// What a kind not named in `periods` keeps.
    public var defaultPeriod: Duration
    /// Periods that differ from the default.
    public var periods: [PersonalDataKind: Duration]

    /// - Throws: `RetentionPolicyError` for a period under one day, or closed alerts kept for
    ///   less than their updates (deleting an alert deletes its updates, so the shorter period
    ///   would silently win).
    public init(defaultPeriod: Duration = RetentionPolicy.defaultPeriod, periods: [PersonalDataKind: Duration] = [:]) throws(RetentionPolicyError) {
        self.defaultPeriod = defaultPeriod
        self.periods = periods
        for kind in PersonalDataKind.allCases where period(kind) < .seconds(86_400) {
            throw RetentionPolicyError(kind: kind, message: "\(kind.rawValue) must be kept at least one day")
        }
        if period(.closedAlerts) < period(.alertUpdates) {
            throw RetentionPolicyError(
                kind: .closedAlerts,
                message: "closed_alerts must be kept at least as long as alert_updates (an alert's updates go with it)"
            )
        }
    }

    public func period(_ kind: PersonalDataKind) -> Duration {
        periods[kind] ?? defaultPeriod
    }

    /// What a pass at `now` deletes: for every kind, data older than `now - period`.
    public func cutoffs(nowMilliseconds now: Int64) -> [RetentionCutoff] {
        PersonalDataKind.allCases.map { kind in
            let (seconds, attoseconds) = period(kind).components
            return RetentionCutoff(kind: kind, beforeMilliseconds: now - (seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        }
    }

    /// Parses `KIND=DAYS` (the server's `--retain` option).
    public static func parsePeriod(_ text: String) throws(RetentionPolicyError) -> (PersonalDataKind, Duration) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let kind = PersonalDataKind(rawValue: parts[0]) else {
            throw RetentionPolicyError(
                kind: nil,
                message: "expected KIND=DAYS with KIND one of \(PersonalDataKind.allCases.map(\.rawValue).joined(separator: ", ")), got \(text)"
            )
        }
        guard let days = Int(parts[1]), (1...36_500).contains(days) else {
            throw RetentionPolicyError(kind: kind, message: "\(kind.rawValue): days must be a whole number 1-36500, got \(parts[1])")
        }
        return (kind, .seconds(Int64(days) * 86_400))
    }
}

/// Delete data of `kind` older than `beforeMilliseconds` (server wall time).
public struct RetentionCutoff: Hashable, Sendable {
    public var kind: PersonalDataKind
    public var beforeMilliseconds: Int64
}

public struct RetentionPolicyError: Error, Hashable, Sendable, CustomStringConvertible {
    public var kind: PersonalDataKind?
    public var message: String
    public var description: String { message }
}
