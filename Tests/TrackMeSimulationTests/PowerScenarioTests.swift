import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeSimulation

/// The device's own battery in a scenario (`power`): the run writes the kernel's supply files and
/// the agent's own power reader and watch read them, so what the wearer is shown, what the
/// heartbeat says and what the server holds come from the agent's code.
@Suite struct PowerScenarioTests {
    static let simulations = FastModeTests.simulations

    func run(_ scenario: Scenario) async throws -> SimulationReport {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        var options = ScenarioRunner.Options(simulationsDirectory: Self.simulations, logger: logger)
        options.io = .inProcess
        return try await ScenarioRunner(options: options).run(scenario).report
    }

    /// battery-running-down, shortened to 15 minutes: 24 % to 0.
    static func shortened() throws -> Scenario {
        var scenario = try Scenario.load(from: simulations.appendingPathComponent("scenarios/battery-running-down.json"))
        scenario.heartRate.repeatUntilSeconds = 900
        scenario.power = Scenario.PowerSource(
            points: [.init(atSeconds: 0, capacity: 24), .init(atSeconds: 900, capacity: 0)],
            pollSeconds: 30
        )
        scenario.expectations = [
            // 1 % every 37.5 s, read every 30 s from 2 s (a gauge rounds down): 20 % (low) first read at
            // 122 s, 5 % (critical) at 692 s.
            .init(type: .wearerToldBatteryLow, fromSeconds: 120, toSeconds: 125),
            .init(type: .serverDeviceBattery, fromSeconds: 120, toSeconds: 185, level: .low),
            .init(type: .serverDeviceBattery, fromSeconds: 690, toSeconds: 695, level: .critical),
            .init(type: .lastHeartbeatSent, fromSeconds: 690, toSeconds: 695),
            .init(type: .noOtherAlerts),
            .init(type: .noReadingsLost),
        ]
        return scenario
    }

    @Test("the battery runs down: the wearer is warned, the server shows low then critical with how long, the last heartbeat goes alone")
    func batteryRunsDown() async throws {
        let report = try await run(try Self.shortened())
        #expect(report.passed, "\(report.expectations.filter { !$0.passed }.map { "\($0.expectation): \($0.message)" })")
        let power = try #require(report.power)
        #expect(power.changes.map(\.level) == [.normal, .low, .critical])
        #expect(power.changes.map(\.wearerShown) == ["idle", "battery_low", "battery_low"])
        #expect(power.changes.allSatisfy { $0.source == .battery })
        #expect(power.lastHeartbeatMilliseconds.count == 1, "one last heartbeat per discharge")
        #expect(power.atServer.map(\.level) == [nil, .low, .critical])
        let critical = try #require(power.atServer.last)
        let low = try #require(power.atServer.dropFirst().first)
        #expect(critical.percent == 5)
        #expect(
            critical.lowForSeconds == (critical.atMilliseconds - low.atMilliseconds) / 1000,
            "the critical heartbeat says how long the battery has been low"
        )
        let summary = ReportRenderer(report: report, heartRate: [], minimumHeartRate: 40, maximumHeartRate: 150, originMilliseconds: 0).summary()
        #expect(summary.contains("last heartbeat sent alone at 692 s"), "\(summary)")
    }

    @Test("a scenario without power reports none; a power timeline out of range is refused, naming the field")
    func noPowerAndBadPower() async throws {
        var scenario = try Self.shortened()
        scenario.power = nil
        scenario.expectations = [.init(type: .wearerToldBatteryLow)]
        let report = try await run(scenario)
        #expect(report.power == nil)
        #expect(report.expectations.first?.passed == false && report.expectations.first?.message == "never")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-power-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        var text = try String(contentsOf: Self.simulations.appendingPathComponent("scenarios/battery-running-down.json"), encoding: .utf8)
        text = text.replacingOccurrences(of: #""capacity": 40"#, with: #""capacity": 140"#)
        try text.write(to: file, atomically: true, encoding: .utf8)
        #expect {
            try Scenario.load(from: file)
        } throws: { error in
            "\(error)".contains("power.points[0].capacity: 140.0 is not within 0...100")
        }
    }
}
