import Foundation
import Testing
import TrackMeCore

@Suite struct HeartRateTraceTests {
    /// The repository's copy of the shared traces (with their SOURCES notice beside them).
    static let sharedTraces = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("simulations/traces/hr")

    @Test func parsesRowsWithRRAndContact() throws {
        let trace = try HeartRateTrace(csv: "t_ms,bpm,rr_ms,contact\n2000,74,814 811,yes\n3000,0,,no\n")
        #expect(trace.rows.count == 2)
        #expect(trace.rows[0] == .init(timeMilliseconds: 2000, bpm: 74, rrMilliseconds: [814, 811], contact: true))
        #expect(trace.rows[1].reading.contact == .notDetected)
        #expect(trace.rows[0].reading.rrMilliseconds == [814, 811])
        #expect(trace.duration == .seconds(1))
    }

    @Test(arguments: [
        ("t_ms,bpm,rr_ms,contact\n1000,70,,maybe\n", 2),
        ("t_ms,bpm,rr_ms,contact\n1000,70\n", 2),
        ("t_ms,bpm,rr_ms,contact\n1000,70,,yes\n900,70,,yes\n", 3),
        ("t_ms,bpm,rr_ms,contact\n1000,-1,,yes\n", 2),
        ("t_ms,bpm,rr_ms,contact\n1000,70,800 x,yes\n", 2),
        ("time,hr\n", 1),
    ])
    func badLinesAreNamed(csv: String, line: Int) {
        #expect(throws: HeartRateTrace.ParseError.self) { try HeartRateTrace(csv: csv) }
        do { _ = try HeartRateTrace(csv: csv) } catch { #expect(error.line == line) }
    }

    @Test func everySharedTraceParses() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sharedTraces.path).filter { $0.hasSuffix(".csv") }
        #expect(files.count >= 8)
        for file in files {
            let text = try String(contentsOf: Self.sharedTraces.appendingPathComponent(file), encoding: .utf8)
            let trace = try HeartRateTrace(csv: text)
            #expect(trace.rows.count > 200, "\(file)")
        }
    }
}
