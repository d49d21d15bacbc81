import Foundation
import Logging
import Testing
import TrackMeCore
import TrackMeSimulation

/// Fast mode's promise: the same scenario and seed give the same report, apart from what is
/// measured on the real clock, however fast the machine is: the agent's lanes run on the virtual
/// clock the event loop advances, and each of their steps is awaited by the loop.
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
        // Kills (one with an alert open and unsent), a network window and a flat line: the
        // readings lane's backoff, the dispatch lane's retries and a restored alert.
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
