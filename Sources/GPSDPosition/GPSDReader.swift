public import Logging
import Synchronization
public import TrackMeCore
import TrackMeSystem

/// Reads position from gpsd through libgps and delivers it as an `AsyncStream` of `GPSDEvent`s.
///
/// Each call to `events()` starts an independent session: a dedicated thread runs the blocking
/// `gps_waiting`/`gps_read` loop (never the cooperative pool), polling with a short timeout so
/// that it notices cancellation; an async supervisor waits on the injected clock between
/// connection attempts, with exponential backoff. Fixes and state changes share one bounded
/// stream (`bufferingNewest`): under a flood a slow consumer loses the oldest events, never the
/// latest fix. Ending iteration (or cancelling the consuming task) stops the thread and closes
/// the connection.
///
/// ```swift
/// let reader = GPSDReader(host: "127.0.0.1", port: 2947, clock: ContinuousClock(), logger: logger)
/// for await event in reader.events() { ... }
/// ```
public struct GPSDReader: Sendable {
    public struct Configuration: Sendable {
        /// How long one `gps_waiting` call blocks; bounds how late the thread notices a stop.
        public var pollInterval: Duration = .milliseconds(100)
        public var backoff = Backoff.gpsdReconnect
        /// Reconnect after a failure (the agent); when false the stream finishes after the first
        /// connection ends, with a `.disconnected(_, retryIn: nil)` state (`gps dump`).
        public var reconnects = true
        /// Events kept for a slow consumer before the oldest are dropped.
        public var bufferSize = 1024

        public init() {}
    }

    public let host: String
    public let port: Int
    public let configuration: Configuration
    private let clock: any Clock<Duration>
    private let logger: Logger

    public init(
        host: String = "127.0.0.1",
        port: Int = 2947,
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger,
        configuration: Configuration = Configuration()
    ) {
        self.host = host
        self.port = port
        self.clock = clock
        self.logger = logger
        self.configuration = configuration
    }

    /// Starts a session and returns its events. Iterate it from one task.
    public func events() -> AsyncStream<GPSDEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: GPSDEvent.self,
            bufferingPolicy: .bufferingNewest(configuration.bufferSize)
        )
        let stop = StopFlag()
        let task = Task { [self] in
            await supervise(continuation: continuation, stop: stop)
        }
        continuation.onTermination = { _ in
            stop.raise()
            task.cancel()
        }
        return stream
    }

    private func supervise(continuation: AsyncStream<GPSDEvent>.Continuation, stop: StopFlag) async {
        let elapsed = Stopwatch(clock)
        let machine = SharedStateMachine(
            GPSDStateMachine(backoff: configuration.backoff, reconnects: configuration.reconnects)
        )
        var attempt = 0
        while !stop.isRaised {
            attempt += 1
            let ended = await runConnectionThread(
                machine: machine,
                elapsed: elapsed,
                continuation: continuation,
                stop: stop
            )
            if stop.isRaised { break }
            let (events, retryIn) = machine.receive(.connectionEnded(ended), now: elapsed.elapsed)
            for event in events { continuation.yield(event) }
            logger.info(
                "gpsd connection ended",
                metadata: [
                    "gpsd.error": "\(ended)", "gpsd.attempt": "\(attempt)",
                    "gpsd.retry_in": "\(retryIn.map { "\($0)" } ?? "never")",
                ]
            )
            guard let retryIn else { break }
            do {
                try await clock.sleep(for: retryIn)
            } catch {
                break
            }
        }
        continuation.finish()
    }

    /// Runs one connection on a thread of its own (`BlockingThreads`); returns why it ended.
    private func runConnectionThread(
        machine: SharedStateMachine,
        elapsed: Stopwatch,
        continuation: AsyncStream<GPSDEvent>.Continuation,
        stop: StopFlag
    ) async -> GPSDError {
        let host = host
        let port = port
        let pollInterval = configuration.pollInterval
        let logger = logger
        return await withCheckedContinuation { (done: CheckedContinuation<GPSDError, Never>) in
            BlockingThreads.shared.start {
                let ended = Self.runConnection(
                    host: host,
                    port: port,
                    pollInterval: pollInterval,
                    stop: stop,
                    logger: logger
                ) { input in
                    let (events, _) = machine.receive(input, now: elapsed.elapsed)
                    for event in events { continuation.yield(event) }
                }
                done.resume(returning: ended)
            }
        }
    }

    /// The blocking loop: open, watch, then wait/read until the connection fails or `stop`.
    private static func runConnection(
        host: String,
        port: Int,
        pollInterval: Duration,
        stop: StopFlag,
        logger: Logger,
        deliver: (GPSDStateMachine.Input) -> Void
    ) -> GPSDError {
        do throws(GPSDError) {
            let connection = try GPSDConnection(host: host, port: port)
            try connection.watch()
            logger.info("gpsd connected", metadata: ["gpsd.host": "\(host)", "gpsd.port": "\(port)"])
            deliver(.connected)
            while !stop.isRaised {
                guard try connection.waitForData(timeout: pollInterval) else { continue }
                if let report = try connection.read() {
                    deliver(.report(report))
                }
            }
            return GPSDError(code: .connectionLost, message: "reader stopped", host: host, port: port)
        } catch {
            return error
        }
    }
}

/// The state machine shared by the supervisor and the reader thread (which never run at once,
/// but Swift cannot see that).
final class SharedStateMachine: Sendable {
    private let machine: Mutex<GPSDStateMachine>
    init(_ machine: GPSDStateMachine) { self.machine = Mutex(machine) }
    func receive(_ input: GPSDStateMachine.Input, now: Duration) -> (events: [GPSDEvent], retryIn: Duration?) {
        machine.withLock { $0.receive(input, now: now) }
    }
}
