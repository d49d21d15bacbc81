import Foundation
import GPSDPosition
import GPSDTestSupport
import Testing
import TrackMeCore

/// Every recorded log through the real gpsd and our reader, against the TPVs gpsd itself wrote in
/// the `.chk` files. Each log gets its own gpsd on a free port; Swift Testing runs them in
/// parallel.
@Suite("gpsd traces through the real gpsd", .timeLimit(.minutes(10)))
struct GPSDTraceTests {
    @Test("every log yields exactly the chk file's fixes", arguments: TraceFixtures.logNames)
    func logMatchesCheckFile(name: String) async throws {
        let expected = try TraceFixtures.expectedFixes(name)
        #expect(try TraceFixtures.indexSaysHasFix(name) == !expected.isEmpty, "index.tsv disagrees with \(name).chk")

        let gpsd = try await GPSDFeed.start(log: TraceFixtures.logURL(name))
        defer { gpsd.stop() }
        let reader = GPSDReader(port: gpsd.port, logger: .test)
        var events = reader.events().makeAsyncIterator()
        let log = await events.collectUntilLogEnds()

        let fixes = log.fixes
        #expect(fixes.count == expected.count, "\(name): \(fixes.count) fixes, chk has \(expected.count)")
        for (fix, want) in zip(fixes, expected) {
            #expect(fix.time == want.time, "\(name): time")
            #expect(fix.mode.rawValue == want.mode, "\(name): mode at \(want)")
            let latitude = try #require(fix.latitude)
            let longitude = try #require(fix.longitude)
            #expect(abs(latitude - want.latitude) <= 1e-7, "\(name): lat at \(want)")
            #expect(abs(longitude - want.longitude) <= 1e-7, "\(name): lon at \(want)")
        }
        #expect(!log.states.contains { $0.isDisconnected }, "\(name): no connection error expected")
        if expected.isEmpty {
            #expect(!log.states.contains { if case .fix = $0 { true } else { false } })
        }
    }
}
