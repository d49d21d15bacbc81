import Testing
import TrackMeCore

@Suite struct TaskWithinTests {
    @Test("a task that ended gives its result; one that never ends gives nil at the limit and goes on")
    func resultWithin() async {
        let done = Task { 42 }
        _ = await done.value
        #expect(await done.result(within: .seconds(60))?.get() == 42)

        let (never, continuation) = AsyncStream<Int>.makeStream()
        let waiting = Task { () -> Int in
            for await value in never { return value }
            return -1
        }
        #expect(await waiting.result(within: .milliseconds(50)) == nil)
        continuation.yield(7)
        #expect(await waiting.value == 7)
    }
}
