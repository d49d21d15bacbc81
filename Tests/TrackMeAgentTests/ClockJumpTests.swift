import Foundation
import Testing
import TrackMeAgent
import TrackMeCore
import TrackMeServer
import TrackMeSystem

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 16: the device's wall clock jumps a year ahead and then a year back in the middle of a
/// run, in the real `trackme-agent` process: its wall clock is injected
/// (`run --wall-clock-offset-file`, a file of seconds the test rewrites while the agent runs;
/// Debian's libfaketime was tried first, but under its LD_PRELOAD a Swift binary's
/// `CommandLine.arguments` come out empty). Only the wall clock moves: the agent's decisions run
/// on the monotonic clock and must not notice; the readings stamped meanwhile must reach the
/// server and be filed at a time the server can vouch for, never a year away.
@Suite("the device's wall clock jumps a year, for real", .serialized)
struct ClockJumpTests {
    struct Page: Decodable {
        struct Row: Decodable {
            struct Stamp: Decodable {
                var wall_ms: Int64?
            }
            var seq: Int64
            var placed_ms: Int64
            var time_flag: String?
            var t: Stamp
            var wall_ms: Int64? { t.wall_ms }
        }
        var readings: [Row]
        var next_after_seq: Int64?
    }

    @Test("a year ahead, then a year back, mid-run: nothing deleted or filed a year away, the flat line still raises within 0.5 s")
    func yearJumps() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-jump-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // 30 s of a normal rate, then a flat line with skin contact (no pulse), at 10x.
        let trace = directory.appendingPathComponent("jump.csv").path
        var csv = "t_ms,bpm,rr_ms,contact\n"
        for second in 1..<900 { csv += second < 30 ? "\(second * 1000),72,833,yes\n" : "\(second * 1000),0,,yes\n" }
        try csv.write(toFile: trace, atomically: true, encoding: .utf8)
        let clockFile = directory.appendingPathComponent("wall-offset").path
        try "0\n".write(toFile: clockFile, atomically: true, encoding: .utf8)
        let year = 365 * 24 * 3600

        let rig = try await EndToEndTests.Rig(trace: trace)
        let started = Int64(Date().timeIntervalSince1970 * 1000)
        let (agent, log) = try rig.startAgent(log: "agent-jump.log", arguments: ["--wall-clock-offset-file", clockFile])
        defer { agent.killAndWait() }

        // Some readings out with the true clock, then a year ahead.
        _ = try #require(
            try await rig.poll(agent) { $0.sync.lastSuccessAgeMilliseconds != nil },
            "the agent never synced (running \(agent.isRunning), ended: \(agent.termination.map(String.init(describing:)) ?? "no")): \((try? String(contentsOfFile: log, encoding: .utf8))?.suffix(3000) ?? "")"
        )
        try "\(year)\n".write(toFile: clockFile, atomically: true, encoding: .utf8)
        let jumpedAhead = ContinuousClock.now
        // The flat line raises its alert, and batches stamped a year ahead go out.
        let raised = try #require(
            try await rig.poll(agent) { s in
                guard let age = s.sync.lastSuccessAgeMilliseconds, s.alert?.state.isOpen == true else { return false }
                return .milliseconds(age) + .seconds(6) < ContinuousClock.now - jumpedAhead
            },
            "the flat line raised nothing, or nothing went out after the jump"
        )
        let alertID = try #require(raised.alert?.id)
        // A year back, behind the true time; wait until batches stamped so went out.
        try "-\(year)\n".write(toFile: clockFile, atomically: true, encoding: .utf8)
        let jumpedBack = ContinuousClock.now
        _ = try #require(
            try await rig.poll(agent) { s in
                guard let age = s.sync.lastSuccessAgeMilliseconds, s.alert?.state == .delivered || s.alert?.state == .acknowledged else {
                    return false
                }
                return .milliseconds(age) + .seconds(6) < ContinuousClock.now - jumpedBack
            },
            "no batch went out after the jump back"
        )
        let stopped = await rig.terminate(agent, log: log)
        #expect(stopped.termination == .exited(0), "\(stopped.stderr.suffix(2000))")
        let finished = Int64(Date().timeIntervalSince1970 * 1000)

        // The alert: raised on the monotonic clock within 0.5 s of the reading that completed it.
        let updates = try await rig.server.alertUpdates(alertID: alertID)
        let raise = try #require(updates.first { $0.type == .raised })
        let raisedAt = try #require(raise.alert.raised)
        let completing = try #require(raise.alert.triggeringReadings.map(\.timestamp).max { $0.monotonicNanoseconds < $1.monotonicNanoseconds })
        let decision = Int64(raisedAt.monotonicNanoseconds) - Int64(completing.monotonicNanoseconds)
        #expect(decision >= 0 && decision < 500_000_000, "raised \(Double(decision) / 1e6) ms after its reading")
        #expect(raise.alert.kind == .noPulse)

        // Every reading at the server, none filed outside the run's true time; readings stamped
        // a year ahead and a year back are there, flagged.
        let port = try await rig.server.boundPort()
        var rows: [Page.Row] = []
        var after: Int64 = 0
        while true {
            let url = try #require(
                URL(string: "http://127.0.0.1:\(port)/v1/devices/\(EndToEndTests.deviceID)/readings?limit=1000&after_seq=\(after)")
            )
            var request = URLRequest(url: url)
            request.setValue("Bearer e2e-admin", forHTTPHeaderField: "Authorization")
            let (data, _) = try await URLSession.shared.data(for: request)
            let page = try JSONDecoder().decode(Page.self, from: data)
            rows += page.readings
            guard let next = page.next_after_seq else { break }
            after = next
        }
        #expect(!rows.isEmpty)
        let nearlyAYear: Int64 = 300 * 24 * 3600 * 1000
        for row in rows {
            #expect(
                row.placed_ms >= started - 60_000 && row.placed_ms <= finished + 60_000,
                "reading \(row.seq) filed at \(row.placed_ms), the run was \(started)-\(finished)"
            )
        }
        let ahead = rows.filter { ($0.wall_ms ?? 0) > started + nearlyAYear }
        let behind = rows.filter { ($0.wall_ms ?? .max) < started - nearlyAYear }
        #expect(!ahead.isEmpty, "no reading was stamped a year ahead: the jump did not reach the agent")
        #expect(!behind.isEmpty, "no reading was stamped a year back")
        #expect((ahead + behind).allSatisfy { $0.time_flag != nil })
        let sequences = rows.map(\.seq).sorted()
        #expect(sequences == Array(1...Int64(sequences.count)), "a gap: readings lost between the jumps")
    }
}
