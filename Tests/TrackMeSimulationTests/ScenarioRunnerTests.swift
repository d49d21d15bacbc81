import Foundation
import Logging
import Testing
import TrackMeCore
import TrackMeSimulation

/// Fast mode's promise: the same scenario and seed give the same report, apart from what is
/// measured on the real clock, however fast the machine is and however the overlapped sync
/// round trips fall.
@Suite struct ScenarioRunnerTests {
    static let simulations = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("simulations")

    /// The report as JSON without the fields measured on the real clock.
    func comparable(_ report: SimulationReport) throws -> String {
        var report = report
        report.wallMilliseconds = 0
        for index in report.alerts.indices { report.alerts[index].decisionLatencyMilliseconds = nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }

    @Test func sameScenarioSameReport() async throws {
        // Kills (one with an alert open and unsent), a network window and a flat line: every
        // place where the overlapped batch is settled.
        let scenario = try Scenario.load(from: Self.simulations.appendingPathComponent("scenarios/crash-mid-write.json"))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let runner = ScenarioRunner(options: .init(simulationsDirectory: Self.simulations, logger: logger))
        let first = try await runner.run(scenario).report
        let second = try await runner.run(scenario).report
        #expect(first.passed)
        #expect(try comparable(first) == comparable(second))
        #expect(first.alerts.count == 1 && first.alerts.allSatisfy { $0.decisionLatencyMilliseconds != nil })
    }
}
