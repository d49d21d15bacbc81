import Foundation
import Testing
import TrackMeCore

/// The acceptance test of issue 5: every shared heart-rate trace, replayed through the default
/// rules, raises alerts exactly where `simulations/traces/hr/SOURCES.md` puts an episode that
/// calls for help, and nowhere else. The table and its reasons are in `simulations/SOS-RULES.md`.
@Suite struct SOSTraceAcceptanceTests {
    /// One expected alert: its kind, when its first critical reading was, when the countdown
    /// started (nil if raised at once) and when it was raised, in trace seconds.
    struct Expected: Hashable, CustomStringConvertible {
        var kind: AlertKind
        var firstCritical: Int64
        var countdownStarted: Int64?
        var raised: Int64

        var description: String {
            "\(kind.rawValue) first \(firstCritical) s countdown \(countdownStarted.map(String.init) ?? "-") raised \(raised) s"
        }
    }

    struct Case: Sendable, CustomStringConvertible {
        var file: String
        /// The profile used for this record: the age from the record's header where SOURCES.md
        /// or the header gives it, otherwise the default profile (age 60, resting rate unknown).
        var age: Int
        var expected: [Expected]

        var description: String { file }
    }

    static let cases: [Case] = [
        Case(file: "mitdb100_normal_sinus.csv", age: 69, expected: []),
        Case(file: "mitdb106_multiform_pvc.csv", age: 60, expected: []),
        Case(file: "mitdb113_sinus_arrhythmia.csv", age: 60, expected: []),
        Case(file: "mitdb208_scipy_pvc_couplets.csv", age: 60, expected: []),
        Case(
            file: "mitdb232_sinus_brady_long_pauses.csv",
            age: 60,
            expected: [Expected(kind: .heartRateLow, firstCritical: 1282, countdownStarted: 1288, raised: 1298)]
        ),
        Case(file: "mimicdb037_icu_10min.csv", age: 60, expected: []),
        Case(file: "cinc2015_a103l_false_asystole_artifact.csv", age: 60, expected: []),
        Case(file: "prcp12726_tilt_contact_loss.csv", age: 28, expected: []),
        // Derived (MIT-BIH 100 slowed 1.85x, a sleeping athlete): the default 40 bpm minimum
        // raises a false alarm here; a learned resting rate prevents it (scenario night-baseline).
        Case(
            file: "derived_mitdb100_slowed_1_85.csv",
            age: 28,
            expected: [Expected(kind: .heartRateLow, firstCritical: 2509, countdownStarted: 2515, raised: 2525)]
        ),
    ]

    static func load(_ file: String) throws -> HeartRateTrace {
        let url = HeartRateTraceTests.sharedTraces.appendingPathComponent(file)
        return try HeartRateTrace(csv: String(contentsOf: url, encoding: .utf8))
    }

    @Test func everyTraceHasACase() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: HeartRateTraceTests.sharedTraces.path)
            .filter { $0.hasSuffix(".csv") }
        #expect(Set(files) == Set(Self.cases.map(\.file)))
    }

    @Test(arguments: cases)
    func replayRaisesAlertsExactlyAtTheEpisodes(_ testCase: Case) throws {
        let trace = try Self.load(testCase.file)
        var replay = SOSTraceReplay(profile: PersonProfile(name: testCase.file, age: testCase.age))
        replay.run(trace)

        var countdowns: [String: Int64] = [:]
        var observed: [Expected] = []
        var other: [String] = []
        for step in replay.steps {
            switch step.action {
            case .startCountdown(let record, _):
                countdowns[record.id] = countdowns[record.id] ?? step.timeMilliseconds / 1000
            case .raise(let record):
                observed.append(
                    Expected(
                        kind: record.kind,
                        firstCritical: Int64(record.firstCritical.monotonicNanoseconds / 1_000_000_000),
                        countdownStarted: countdowns[record.id],
                        raised: step.timeMilliseconds / 1000
                    )
                )
                #expect(!record.triggeringReadings.isEmpty, "an alert carries the readings that made the rule true")
            case .withdrawn(let record), .cancelled(let record):
                other.append("\(record.kind.rawValue) countdown stopped at \(step.timeMilliseconds) ms")
            case .update, .positionUpdate, .kindChanged, .logMonitoringPaused, .logMonitoringResumed:
                break
            }
        }
        #expect(observed == testCase.expected, "\(testCase.file): raised \(observed)")
        #expect(other.isEmpty, "\(testCase.file): \(other)")
        // No countdown may start outside an expected alert either.
        #expect(countdowns.count == testCase.expected.count(where: { $0.countdownStarted != nil }), "\(countdowns)")
    }

    /// The same verdicts when the ticks come at another rate and the notifications arrive with
    /// BLE jitter (a deterministic ±300 ms pattern): the same alerts, within 2 s of the table.
    @Test(arguments: cases, [Duration.milliseconds(100), .seconds(1)])
    func verdictsHoldWithJitterAndOtherTickRates(_ testCase: Case, tick: Duration) throws {
        let original = try Self.load(testCase.file)
        var rows = original.rows
        for index in rows.indices {
            let jitter = Int64((index * 7919) % 601) - 300
            let earliest = index == 0 ? 0 : rows[index - 1].timeMilliseconds + 1
            rows[index].timeMilliseconds = max(earliest, rows[index].timeMilliseconds + jitter)
        }
        var replay = SOSTraceReplay(profile: PersonProfile(name: testCase.file, age: testCase.age), tickInterval: tick)
        replay.run(HeartRateTrace(rows: rows))
        let raised = replay.steps.compactMap { step -> (AlertKind, Int64)? in
            if case .raise(let r) = step.action { (r.kind, step.timeMilliseconds) } else { nil }
        }
        #expect(raised.map(\.0) == testCase.expected.map(\.kind), "\(testCase.file): \(raised)")
        for (got, expected) in zip(raised, testCase.expected) {
            #expect(abs(got.1 - expected.raised * 1000) <= 2000, "\(testCase.file): raised at \(got.1) ms")
        }
        let stopped = replay.steps.filter { if case .withdrawn = $0.action { true } else { false } }
        #expect(stopped.isEmpty)
    }
}
