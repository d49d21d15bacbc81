import Foundation
import GPSDPosition
import GPSDTestSupport
import Testing
import TrackMeCore

/// The field-trial way of running gpsd: gpsd's own gpsfake paces the log like a receiver, then
/// exits. gpsfake may miss leading fixes under load (GPSD-NOTES.md), so this checks that what
/// arrives is the chk file's fixes in order, and that the reader sees the receiver go away at the end.
@Suite("GPSDReader under gpsfake", .timeLimit(.minutes(10)))
struct GPSFakeTests {
    @Test("gpsfake replay: fixes match the chk file in order and the log end is seen")
    func gpsfakeReplay() async throws {
        let name = "bu353s4.log"
        let expected = try TraceFixtures.expectedFixes(name)
        let gpsfake = try GPSFakeProcess.start(log: TraceFixtures.logURL(name))
        defer { gpsfake.stop() }
        // gpsfake listens a moment after it starts; the reader's own backoff covers that, on the
        // real clock with short delays (nothing here waits on time: the loop waits on events).
        var configuration = GPSDReader.Configuration()
        configuration.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(200))
        let reader = GPSDReader(port: gpsfake.port, logger: .test, configuration: configuration)
        var events = reader.events().makeAsyncIterator()
        // gpsd may have no receiver when we connect (gpsfake adds it through the control socket),
        // and gpsfake closes the receiver's pseudo-terminal at the end of the log.
        let log = await events.collectUntilLogEnds()
        let connected = log.states.contains(.connected)
        let fixes = log.fixes
        #expect(connected)
        #expect(!fixes.isEmpty)
        // What arrived is a tail of the chk file's fixes (leading ones may be missed).
        let tail = expected.suffix(fixes.count)
        #expect(fixes.map(\.time) == tail.map(\.time))
        for (fix, want) in zip(fixes, tail) {
            #expect(abs((fix.latitude ?? .nan) - want.latitude) <= 1e-7)
            #expect(abs((fix.longitude ?? .nan) - want.longitude) <= 1e-7)
        }
    }
}
