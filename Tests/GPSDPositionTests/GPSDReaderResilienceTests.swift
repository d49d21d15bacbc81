import Foundation
import GPSDPosition
import GPSDTestSupport
import Testing
import TrackMeCore

/// The reader against the real gpsd when things go wrong. Reconnect delays run on a VirtualClock:
/// each test waits for the reader to report the failure and to sleep, then advances the clock.
@Suite("GPSDReader against a failing gpsd", .timeLimit(.minutes(10)))
struct GPSDReaderResilienceTests {
    static let log = "bu353s4.log"

    @Test("gpsd absent at start: the reader reports it, backs off exponentially, then connects")
    func gpsdAbsentAtStart() async throws {
        let expected = try TraceFixtures.expectedFixes(Self.log)
        let port = try GPSDProcess.freeLoopbackPort()
        let clock = VirtualClock()
        let reader = GPSDReader(port: port, clock: clock, logger: .test)
        var events = reader.events().makeAsyncIterator()

        let first = await events.next()
        guard case .state(.disconnected(let error, let retryIn)) = try #require(first) else {
            Issue.record("expected a disconnected state first, got \(String(describing: first))")
            return
        }
        #expect(error.code == .cannotConnect)
        #expect(retryIn == .milliseconds(500))

        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(500))
        let second = await events.next()
        #expect(second == .state(.disconnected(error, retryIn: .seconds(1))), "the delay doubles")

        let gpsd = try await GPSDFeed.start(log: TraceFixtures.logURL(Self.log), port: port)
        defer { gpsd.stop() }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let log = await events.collectUntilLogEnds()
        #expect(log.states.first == .connected)
        #expect(log.fixes.map(\.time) == expected.map(\.time))
    }

    @Test("gpsd killed mid-stream and restarted: the reader reports the loss and resumes")
    func gpsdKilledAndRestarted() async throws {
        let expected = try TraceFixtures.expectedFixes(Self.log)
        let clock = VirtualClock()
        let first = try await GPSDFeed.start(log: TraceFixtures.logURL(Self.log))
        let port = first.port
        let reader = GPSDReader(port: port, clock: clock, logger: .test)
        var events = reader.events().makeAsyncIterator()
        // Stop half-way through the log: gpsd is killed while it is still streaming to us.
        let half = expected.count / 2
        var firstRun: [PositionFix] = []
        _ = await events.collect(until: { event in
            if case .fix(let fix) = event { firstRun.append(fix) }
            return firstRun.count == half
        })
        first.stop()

        let lost = await events.collect(until: { $0.isDisconnectedState })
        guard case .state(.disconnected(let error, let retryIn)) = lost.events.last else {
            Issue.record("no disconnected state after gpsd was killed")
            return
        }
        #expect(error.code == .connectionLost)
        #expect(retryIn == .milliseconds(500))
        // Fixes before the loss were delivered; whatever gpsd had not yet sent is lost with it.
        #expect(firstRun.map(\.time) == expected.prefix(half).map(\.time))

        let second = try await GPSDFeed.start(log: TraceFixtures.logURL(Self.log), port: port)
        defer { second.stop() }
        await clock.waitForSleepers(1)
        clock.advance(by: .milliseconds(500))
        let resumed = await events.collectUntilLogEnds()
        #expect(resumed.states.first == .connected)
        #expect(resumed.fixes.map(\.time) == expected.map(\.time), "the restarted gpsd's whole log comes through")
    }

    @Test("a receiver sending garbage bytes: no crash, no fix, the end is still seen")
    func garbageBytes() async throws {
        // A fixed pseudo-random byte string (xorshift), with some NULs and newlines in it.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        var bytes: [UInt8] = []
        for _ in 0..<32_768 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            bytes.append(UInt8(truncatingIfNeeded: state))
        }
        // Newlines longer than gpsd's largest packet let its lexer give up on any packet header
        // the garbage happens to start, so the end marker is read as such.
        let padding = [UInt8](repeating: UInt8(ascii: "\n"), count: 10_000)
        let gpsd = try await GPSDFeed.start(bytes: bytes + padding + LogFeedServer.endOfLogMarker)
        defer { gpsd.stop() }
        let reader = GPSDReader(port: gpsd.port, logger: .test)
        var events = reader.events().makeAsyncIterator()
        let log = await events.collect(until: { $0 == .state(.noDevice) })
        #expect(log.fixes.isEmpty)
        #expect(!log.states.contains { $0.isDisconnected })
    }

    @Test("a closed port is a Swift error, not a crash, and a one-shot reader finishes")
    func closedPort() async throws {
        let port = try GPSDProcess.freeLoopbackPort()
        var configuration = GPSDReader.Configuration()
        configuration.reconnects = false
        let reader = GPSDReader(port: port, logger: .test, configuration: configuration)
        var all: [GPSDEvent] = []
        for await event in reader.events() { all.append(event) }
        guard case .state(.disconnected(let error, nil)) = try #require(all.last), all.count == 1 else {
            Issue.record("expected exactly one disconnected state, got \(all)")
            return
        }
        #expect(error.code == .cannotConnect)
        #expect(error.port == port)
        #expect(error.gpsdCode != nil)
    }
}

extension GPSDEvent {
    var isDisconnectedState: Bool {
        if case .state(let state) = self { state.isDisconnected } else { false }
    }
}

@Suite("gps dump against the real gpsd", .timeLimit(.minutes(10)))
struct GPSDDumpTests {
    @Test("prints N lines and stops; exits when gpsd closes; a closed port throws")
    func dumpCountsAndEnds() async throws {
        let name = "april6_2019.log"
        let expected = try TraceFixtures.expectedFixes(name)
        let gpsd = try await GPSDFeed.start(log: TraceFixtures.logURL(name))
        var lines: [String] = []
        try await GPSDDump.run(.init(port: gpsd.port, count: 1), logger: .test) { lines.append($0) }
        #expect(lines.count == 1)

        gpsd.stop()

        // Without --count the dump runs until gpsd closes: kill gpsd once the log's last fix
        // has been printed, and the dump returns with every fix.
        let second = try await GPSDFeed.start(log: TraceFixtures.logURL(name))
        lines = []
        try await GPSDDump.run(.init(port: second.port), logger: .test) { line in
            lines.append(line)
            if lines.count == expected.count { second.stop() }
        }
        #expect(lines.count == expected.count)
        #expect(lines.last?.contains("\"time\": \"\(expected.last?.time ?? "")\"") == true)

        let port = try GPSDProcess.freeLoopbackPort()
        await #expect(throws: GPSDError.self) {
            try await GPSDDump.run(.init(port: port), logger: .test) { _ in }
        }
    }
}

@Suite("GPSDReader cancellation", .timeLimit(.minutes(10)))
struct GPSDReaderCancellationTests {
    @Test("ending iteration stops the reader thread and closes the connection to gpsd")
    func endingIterationDisconnects() async throws {
        let gpsd = try await GPSDFeed.start(log: TraceFixtures.logURL("bu353s4.log"))
        defer { gpsd.stop() }
        do {
            let reader = GPSDReader(port: gpsd.port, logger: .test)
            var events = reader.events().makeAsyncIterator()
            let first = await events.collect(until: { if case .fix = $0 { true } else { false } })
            #expect(!first.fixes.isEmpty)
        }
        // The iterator is gone: its stream terminates, the thread sees the stop flag within one
        // poll and closes the libgps connection, which gpsd logs.
        let detached = await gpsd.gpsd.waitForLog(containing: "detaching")
        #expect(detached, "gpsd did not see the client leave: \(gpsd.gpsd.recentOutput)")
    }
}

@Suite("GPSDReader under a flood", .timeLimit(.minutes(10)))
struct GPSDReaderFloodTests {
    @Test("a consumer that does not keep up loses the oldest events, never the latest fix")
    func slowConsumerKeepsNewest() async throws {
        let name = "ublox-neo-m9n-nmea.log"
        let expected = try TraceFixtures.expectedFixes(name)
        let gpsd = try await GPSDFeed.start(log: TraceFixtures.logURL(name))
        defer { gpsd.stop() }
        var configuration = GPSDReader.Configuration()
        configuration.bufferSize = 8
        let reader = GPSDReader(port: gpsd.port, logger: .test, configuration: configuration)
        var events = reader.events().makeAsyncIterator()
        // Read nothing until gpsd has sent the whole log (1414 sentences, 67 fixes).
        #expect(await gpsd.gpsd.waitForLog(containing: #""activated":0"#))
        let log = await events.collect(until: { $0 == .state(.noDevice) })
        // The reader thread may still be reading when we start (it lags gpsd by a few reports on
        // a loaded machine), so the exact number kept is not fixed; but most of the 67 fixes
        // cannot fit in 8 slots, what survives is in order, and the newest fix is among it.
        #expect(log.fixes.count < expected.count, "old events were dropped, not queued without bound")
        let times = log.fixes.compactMap(\.time)
        let expectedTimes = expected.compactMap(\.time)
        #expect(times.allSatisfy { expectedTimes.contains($0) })
        #expect(times == times.sorted(), "order is kept")
        #expect(log.fixes.last?.time == expected.last?.time, "the newest fix survives")
    }
}
