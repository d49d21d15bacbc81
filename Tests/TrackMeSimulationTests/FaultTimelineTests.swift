import Testing
import TrackMeCore

@testable import TrackMeSimulation

/// The stretches fast mode hands the strap at once must end wherever a fault changes, or the
/// readings of a new window would be sent as the old one had them.
@Suite struct FaultTimelineTests {
    let rows = (0..<100).map { HeartRateTrace.Row(timeMilliseconds: Int64($0) * 1000, bpm: 70, rrMilliseconds: [], contact: true) }

    @Test func stretchesStopAtWindowEdgesAndMoments() {
        let timeline = FaultTimeline(
            faults: [
                .init(type: .networkDown, fromSeconds: 10, toSeconds: 20),
                .init(type: .manualSOS, fromSeconds: 50),
                .init(type: .agentCrash, fromSeconds: 70.5),
            ],
            rows: rows
        )
        #expect(timeline.stretchEnd(from: 0, limit: 32) == 10)
        // Windows are [from, to).
        #expect(timeline.flags[10].networkDown && timeline.flags[19].networkDown && !timeline.flags[20].networkDown)
        #expect(timeline.stretchEnd(from: 10, limit: 32) == 20)
        #expect(timeline.stretchEnd(from: 20, limit: 100) == 50)
        // A moment comes due at the first row at or after it, and only there.
        #expect(timeline.moments[50].map(\.type) == [.manualSOS])
        #expect(timeline.moments[71].map(\.type) == [.agentCrash])
        #expect(timeline.moments.enumerated().filter { !$0.element.isEmpty }.map(\.offset) == [50, 71])
        // The SOS row starts a stretch; the kill stands alone (the restarted agent has a new link).
        #expect(timeline.stretchEnd(from: 50, limit: 100) == 71)
        #expect(timeline.stretchEnd(from: 71, limit: 100) == 72)
        #expect(timeline.stretchEnd(from: 72, limit: 10) == 82)
        #expect(timeline.stretchEnd(from: 95, limit: 32) == 100)
    }

    @Test func contactLossAndFlatLineChangeWhatTheStrapSends() {
        let reading = rows[0].reading
        var flags = FaultFlags()
        #expect(flags.transmitted(reading) == reading)
        flags.contactLoss = true
        #expect(flags.transmitted(reading) == HeartRateReading(bpm: 0, contact: .notDetected))
        flags.flatline = true
        #expect(flags.transmitted(reading) == HeartRateReading(bpm: 0, contact: .detected))
    }
}
