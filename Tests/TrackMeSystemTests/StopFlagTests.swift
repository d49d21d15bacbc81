import Testing
import TrackMeSystem

/// A reader thread's stop: lowered until raised, raised for good, and seen by the thread that
/// polls it after another raised it.
@Suite struct StopFlagTests {
    @Test("a flag starts lowered and stays raised; only the first raise reports raising it")
    func raisedForGood() {
        let stop = StopFlag()
        #expect(!stop.isRaised)
        #expect(stop.raise())
        #expect(!stop.raise())
        #expect(stop.isRaised)
    }

    @Test("a loop on a blocking thread ends once another task raises the flag")
    func endsAPollingLoop() async {
        let stop = StopFlag()
        let threads = BlockingThreads(keptIdle: 0)
        async let ended = threads.run { () -> Bool in
            while !stop.isRaised {}
            return true
        }
        stop.raise()
        #expect(await ended)
    }
}
