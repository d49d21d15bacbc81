import Logging
import ServiceLifecycle
import TrackMeCore

/// A store shared by several server instances that can say when another instance appended to
/// the dispatcher feed (PostgreSQL: `LISTEN`/`NOTIFY`). A SQLite store has one instance, whose
/// own appends already wake its streams, and does not conform.
protocol FeedFollowing: Sendable {
    /// Calls `changed` for every feed append committed by any instance, until cancelled or the
    /// connection fails (then it throws).
    func followFeedAppends(_ changed: @escaping @Sendable () -> Void) async throws
}

/// Wakes this instance's feed streams when another instance appends an event, within the
/// database's notification latency instead of the 5 s tick. A lost connection is
/// retried with the one backoff (1 s doubling to 30 s); meanwhile the tick still finds new
/// events, so a stream is late, never wrong.
struct FeedListener: Service {
    let store: any FeedFollowing
    let notifier: FeedNotifier
    let clock: any Clock<Duration>
    let logger: Logger
    var backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: 0.2)

    func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                var failures = 0
                var random = SplitMix64(seed: UInt64.random(in: 0...UInt64.max))
                while !Task.isCancelled {
                    do {
                        try await store.followFeedAppends { [notifier] in notifier.notify() }
                        failures = 0
                    } catch is CancellationError {
                        return
                    } catch {
                        failures += 1
                        logger.warning("feed notifications lost; retrying", metadata: ["error": "\(error)", "server.failures": "\(failures)"])
                    }
                    // Whatever was appended while not listening is found by the streams now.
                    notifier.notify()
                    try await clock.sleep(for: backoff.delay(afterFailures: max(1, failures), retryAfter: nil, using: &random))
                }
            }
        } catch is CancellationError {
            // Shutting down.
        }
    }
}
