import Synchronization
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

    @Test("work that ignores cancellation (a lease on a stopped database) is answered at its limit, before it ends")
    func valueWithinDoesNotWaitForItsWork() async throws {
        let stuck = Mutex<(continuation: CheckedContinuation<Void, Never>?, ended: Bool)>((nil, false))
        // What ends the work if nothing else does: a helper that waits for it fails instead of
        // hanging the suite.
        let fallback = Task.detached {
            try? await ContinuousClock().sleep(for: .seconds(20))
            stuck.withLock { $0.continuation?.resume() }
        }
        let answer = await Task.value(within: .milliseconds(50)) { () -> Bool in
            await withCheckedContinuation { continuation in stuck.withLock { $0.continuation = continuation } }
            stuck.withLock {
                $0.continuation = nil
                $0.ended = true
            }
            return true
        }
        let endedFirst = stuck.withLock { $0.ended }
        #expect(answer == nil)
        #expect(!endedFirst, "the answer came only once the work had ended")
        // The abandoned work ends now (it may not have started waiting yet).
        while stuck.withLock({ $0.continuation == nil && !$0.ended }) { await Task.yield() }
        stuck.withLock { $0.continuation?.resume() }
        fallback.cancel()
        #expect(await Task.value(within: .seconds(60)) { 7 } == 7)
    }
}
