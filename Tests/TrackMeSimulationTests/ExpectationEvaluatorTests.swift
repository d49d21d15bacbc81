import Foundation
import Testing
import TrackMeCore
import TrackMeSimulation

@Suite struct ExpectationEvaluatorTests {
    func report(alerts: [(AlertKind, Int64, Int64?)], lost: Int = 0, offTrueTime: Int = 0) throws -> SimulationReport {
        let json = """
            {"scenario":"t","seed":1,"mode":"fast","virtual_duration_ms":1000000,"wall_ms":5,"faults":[],"expectations":[],
             "readings":{"produced":10,"stored":10,"synced":10,"received_by_server":\(10 - lost),"duplicates_at_server":0,
                         "dropped_by_budget":0,"lost":\(lost),"uncommitted_at_crash":0,"off_true_time":\(offTrueTime),"corrected_by_device":0},
             "alerts":[\(alerts.enumerated().map { i, a in
                "{\"alert_id\":\"a\(i)\",\"kind\":\"\(a.0.rawValue)\",\"state\":\"delivered\",\"first_critical_ms\":\(a.1),\"delivered_ms\":\(a.2.map(String.init) ?? "null")}"
            }.joined(separator: ","))]}
            """
        return try WireCodec.decode(SimulationReport.self, from: Data(json.utf8))
    }

    @Test func alertInsideItsWindowPasses() throws {
        let results = ExpectationEvaluator.evaluate(
            [.init(type: .alert, alertKind: .noPulse, fromSeconds: 600, toSeconds: 650), .init(type: .noOtherAlerts)],
            report: try report(alerts: [(.noPulse, 636_000, 637_000)])
        )
        #expect(results.allSatisfy { $0.passed })
    }

    @Test func lateAlertSaysByHowMuch() throws {
        let results = ExpectationEvaluator.evaluate(
            [.init(type: .alert, alertKind: .noPulse, fromSeconds: 600, toSeconds: 650)],
            report: try report(alerts: [(.noPulse, 700_000, 701_000)])
        )
        let result = try #require(results.first)
        #expect(!result.passed)
        #expect(result.message == "nearest no_pulse alert at 700 s, 50 s late")
    }

    @Test func unexpectedAlertIsNamed() throws {
        let results = ExpectationEvaluator.evaluate(
            [.init(type: .noOtherAlerts)],
            report: try report(alerts: [(.heartRateHigh, 12_500, 13_000)])
        )
        let result = try #require(results.first)
        #expect(!result.passed)
        #expect(result.message == "1 unexpected: heart_rate_high at 12.5 s")
    }

    @Test func slowDeliveryFailsWithTheExcess() throws {
        let results = ExpectationEvaluator.evaluate(
            [.init(type: .alertDeliveredWithin, seconds: 5)],
            report: try report(alerts: [(.noPulse, 10_000, 18_000)])
        )
        let result = try #require(results.first)
        #expect(!result.passed)
        #expect(result.message == "no_pulse took 8 s, 3 s over")
    }

    @Test func lostReadingsFail() throws {
        let result = try #require(ExpectationEvaluator.evaluate([.init(type: .noReadingsLost)], report: try report(alerts: [], lost: 2)).first)
        #expect(!result.passed)
        #expect(result.message == "2 of 10 stored readings never reached the server")
    }

    @Test func readingsOffTheirTrueTimeFail() throws {
        let expectation = Scenario.Expectation(type: .readingsAtTrueTime)
        let right = ExpectationEvaluator.evaluate([expectation], report: try report(alerts: []))
        #expect(right.allSatisfy { $0.passed })
        let wrongReport = try report(alerts: [], offTrueTime: 3)
        let wrong = ExpectationEvaluator.evaluate([expectation], report: wrongReport)
        #expect(wrong.first?.passed == false)
        #expect(wrong.first?.message == "3 of 10 filed away from their true time")
    }
}
