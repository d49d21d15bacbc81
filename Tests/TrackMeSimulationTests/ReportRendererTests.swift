import Foundation
import Testing
import TrackMeSimulation

/// The scenario summary counts an alert's way to the server both ways the seeds do.
@Suite struct ReportRendererTests {
    @Test func theSummaryGivesBothTimingFigures() throws {
        let json = """
            {"scenario": "timing", "seed": 1, "mode": "field", "virtual_duration_ms": 60000, "wall_ms": 1,
             "alerts": [{"alert_id": "a-1", "kind": "no_pulse", "state": "delivered", "first_critical_ms": 10000,
                         "raised_ms": 12000, "delivered_ms": 13500}],
             "readings": {"produced": 0, "stored": 0, "synced": 0, "received_by_server": 0, "duplicates_at_server": 0,
                          "dropped_by_budget": 0, "lost": 0, "uncommitted_at_crash": 0, "off_true_time": 0, "corrected_by_device": 0},
             "faults": [], "expectations": []}
            """
        let report = try JSONDecoder().decode(SimulationReport.self, from: Data(json.utf8))
        let summary = ReportRenderer(report: report, heartRate: [], minimumHeartRate: 40, maximumHeartRate: 180).summary()
        #expect(summary.contains("delivered 13.5 s (3.5 s after the first critical reading, 1.5 s after the reading that completed the rule)"))
    }
}
