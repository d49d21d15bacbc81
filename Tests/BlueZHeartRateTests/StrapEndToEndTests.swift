import BlueZHeartRate
import Logging
import SimulatedStrap
import Testing
import TrackMeCore

/// The real link supervisor and ATT client against the simulated strap over a socket pair. The
/// strap plays its trace on a VirtualClock the test moves one row at a time; the link's own clock
/// is the real one with millisecond backoff, so reconnects need no clock driving.
@Suite(.timeLimit(.minutes(10))) struct StrapEndToEndTests {
    struct Harness {
        let strap: SimulatedStrap
        let strapClock = VirtualClock()
        let trace: HeartRateTrace
        var events: AsyncStream<HeartRateEvent>.Iterator
        var player: Task<Void, any Error>?
        var nextRow = 0

        init(trace name: String) async throws {
            trace = try Fixtures.trace(name)
            strap = SimulatedStrap(trace: trace, clock: strapClock)
            let link = HeartRateLink(
                connector: strap.connector,
                configuration: .init(backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(50))),
                clock: ContinuousClock(),
                logger: Logger(label: "test.link"),
                random: { 0.5 }
            )
            events = link.events().makeAsyncIterator()
            let first = await nextLinkState()
            try #require(first.isSearching)
        }

        /// The next link-state event, collecting the others on the way.
        mutating func nextLinkState(seen: inout [HeartRateEvent]) async -> HeartRateLinkState? {
            while let event = await events.next() {
                if case .linkState(let state) = event { return state }
                seen.append(event)
            }
            return nil
        }

        mutating func nextLinkState() async -> HeartRateLinkState? {
            var ignored: [HeartRateEvent] = []
            return await nextLinkState(seen: &ignored)
        }

        /// Moves the strap's clock to the next row's time.
        mutating func playNextRow() async {
            let first = trace.rows[0].timeMilliseconds
            let row = trace.rows[nextRow]
            if player == nil {
                // Started once subscribed, so row 0 (due at once) is not played to nobody.
                player = Task { [strap] in try await strap.play() }
            }
            if nextRow > 0 { await strapClock.waitForSleepers(1) }
            strapClock.advance(to: VirtualClock.Instant(offset: .milliseconds(row.timeMilliseconds - first)))
            nextRow += 1
        }

        /// The next event that is not a link state, battery or location report.
        mutating func nextDataEvent() async -> HeartRateEvent? {
            while let event = await events.next() {
                switch event {
                case .reading, .malformed: return event
                case .linkState, .battery, .bodySensorLocation: continue
                }
            }
            return nil
        }

        mutating func nextReading() async throws -> (HeartRateReading, [UInt8]) {
            let event = try #require(await nextDataEvent())
            guard case .reading(let reading, let raw) = event else {
                Issue.record("expected a reading, got \(event)")
                throw CancellationError()
            }
            return (reading, raw)
        }

        /// Plays `count` rows and checks each arrives decoded as the CSV row says.
        mutating func playAndCheck(_ count: Int) async throws {
            for _ in 0..<count {
                let row = trace.rows[nextRow]
                await playNextRow()
                let (reading, raw) = try await nextReading()
                #expect(reading.bpm == row.bpm, "row \(nextRow - 1)")
                #expect(reading.contact == (row.contact ? .detected : .notDetected))
                #expect(reading.rrIntervals == row.reading.rrIntervals)
                #expect(try HeartRateMeasurement.decode(raw) == reading)
            }
        }
    }

    @Test func discoversSubscribesAndDecodesSixtyNotifications() async throws {
        var h = try await Harness(trace: "mitdb100_normal_sinus.csv")
        var seen: [HeartRateEvent] = []
        let state = await h.nextLinkState(seen: &seen)
        guard case .connected(let address, let gap) = state else {
            Issue.record("expected connected, got \(String(describing: state))")
            return
        }
        #expect(address == h.strap.address)
        #expect(gap == nil)
        #expect(seen.contains(.battery(87)))
        #expect(seen.contains(.bodySensorLocation(.chest)))
        #expect(await h.strap.subscribed)
        try await h.playAndCheck(60)
        #expect(await h.strap.rowsSent == 60)
        h.player?.cancel()
    }

    @Test func reconnectsAfterALinkDropAndResumes() async throws {
        var h = try await Harness(trace: "mitdb232_sinus_brady_long_pauses.csv")
        guard case .connected = await h.nextLinkState() else {
            Issue.record("no first connection")
            return
        }
        try await h.playAndCheck(30)

        await h.strap.dropLink()
        guard case .lost = await h.nextLinkState() else {
            Issue.record("loss not reported")
            return
        }
        guard case .searching(let attempt) = await h.nextLinkState() else {
            Issue.record("no reconnect attempt")
            return
        }
        #expect(attempt == 1)
        guard case .connected(_, let gap) = await h.nextLinkState() else {
            Issue.record("no reconnection")
            return
        }
        #expect(gap != nil)
        #expect(await h.strap.connections == 2)

        try await h.playAndCheck(30)
        h.player?.cancel()
    }

    @Test func malformedPDUsAreReportedAndSurvived() async throws {
        var h = try await Harness(trace: "mitdb208_scipy_pvc_couplets.csv")
        guard case .connected = await h.nextLinkState() else {
            Issue.record("no connection")
            return
        }
        try await h.playAndCheck(2)

        try await h.strap.sendMalformed(.truncatedMeasurement)
        guard case .malformed(let raw, let error) = await h.nextDataEvent() else {
            Issue.record("truncated measurement not reported")
            return
        }
        #expect(raw == [0x16, 0x48, 0x11])
        #expect(error.code == .truncated && error.offset == 2)

        try await h.strap.sendMalformed(.unknownOpcode)
        guard case .malformed(_, let opcodeError) = await h.nextDataEvent() else {
            Issue.record("unknown opcode not reported")
            return
        }
        #expect(opcodeError.code == .unknownOpcode)

        try await h.strap.sendMalformed(.truncatedPDU)
        guard case .malformed = await h.nextDataEvent() else {
            Issue.record("short PDU not reported")
            return
        }

        try await h.playAndCheck(3)
        #expect(await h.strap.connections == 1)
        h.player?.cancel()
    }

    @Test func contactOverrideNotifyPauseAndBattery() async throws {
        var h = try await Harness(trace: "mitdb100_normal_sinus.csv")
        guard case .connected = await h.nextLinkState() else {
            Issue.record("no connection")
            return
        }
        try await h.playAndCheck(1)

        await h.strap.overrideContact(.notDetected)
        await h.playNextRow()
        #expect(try await h.nextReading().0.contact == .notDetected)
        await h.strap.overrideContact(nil)

        // A row played while notifications are paused never arrives: the next reading is the row after.
        await h.strap.setNotifying(false)
        let skipped = h.trace.rows[h.nextRow].reading
        await h.playNextRow()
        // The player sleeping for the next row means it has handled this one.
        await h.strapClock.waitForSleepers(1)
        await h.strap.setNotifying(true)
        let expected = h.trace.rows[h.nextRow].reading
        try #require(skipped.rrIntervals != expected.rrIntervals)
        await h.playNextRow()
        #expect(try await h.nextReading().0.rrIntervals == expected.rrIntervals)
        #expect(await h.strap.rowsMissed == 1)

        try await h.strap.setBattery(42)
        var battery: Int?
        while battery == nil, let event = await h.events.next() {
            if case .battery(let level) = event { battery = level }
        }
        #expect(battery == 42)
        h.player?.cancel()
    }
}

extension HeartRateLinkState {
    var isSearching: Bool {
        if case .searching = self { true } else { false }
    }
}

extension Optional where Wrapped == HeartRateLinkState {
    var isSearching: Bool { self?.isSearching ?? false }
}
