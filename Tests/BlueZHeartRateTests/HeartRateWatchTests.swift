import BlueZHeartRate
import Logging
import SimulatedStrap
import Synchronization
import Testing
import TrackMeCore

@Suite(.timeLimit(.minutes(10))) struct HeartRateWatchTests {
    @Test func readingJSONHasTheDocumentedShape() {
        let reading = HeartRateReading(bpm: 60, contact: .detected, energyExpendedKilojoules: nil, rrIntervals: [1041])
        #expect(JSONLines.reading(reading) == #"{"bpm":60,"contact":"detected","energy_kj":null,"rr":[1041],"rr_ms":[1017]}"#)
        let other = HeartRateReading(bpm: 300, contact: .notDetected, energyExpendedKilojoules: 4660, rrIntervals: [])
        #expect(JSONLines.reading(other) == #"{"bpm":300,"contact":"not_detected","energy_kj":4660,"rr":[],"rr_ms":[]}"#)
    }

    @Test func strapJSONAndEscaping() throws {
        let strap = DiscoveredStrap(
            address: try #require(BluetoothAddress("E8:A0:1B:3A:5C:0D")),
            addressType: .random,
            name: "Polar \"H10\"",
            rssi: -60,
            services: [0x180D, 0x180F]
        )
        #expect(
            JSONLines.strap(strap)
                == #"{"address":"E8:A0:1B:3A:5C:0D","address_type":"random","name":"Polar \"H10\"","rssi":-60,"services":["0x180D","0x180F"]}"#
        )
        #expect(JSONLines.string("a\nb\u{1}") == #""a\nb\u0001""#)
    }

    /// `hrm watch` against the simulated strap: it prints exactly `count` reading lines, each one
    /// a row of the trace in order, and reports the connection on the diagnostics stream.
    @Test func watchPrintsCountReadingsFromTheStrap() async throws {
        let trace = try Fixtures.trace("mitdb100_normal_sinus.csv")
        let strap = SimulatedStrap(trace: trace, pace: 200, clock: ContinuousClock())
        let player = Task { try await strap.play() }
        defer { player.cancel() }
        let lines = Mutex<(out: [String], err: [String])>(([], []))
        let watch = HeartRateWatch(
            configuration: .init(adapter: nil, address: strap.address, count: 5),
            logger: Logger(label: "test.watch")
        )
        await watch.run(
            connector: strap.connector,
            output: { line in lines.withLock { $0.out.append(line) } },
            diagnostics: { line in lines.withLock { $0.err.append(line) } }
        )
        let (out, err) = lines.withLock { $0 }
        #expect(out.count == 5)
        let expected = trace.rows.map { JSONLines.reading($0.reading) }
        var position = expected.startIndex
        for line in out {
            let found = try #require(expected[position...].firstIndex(of: line), "\(line) is not a later row of the trace")
            position = found + 1
        }
        #expect(err.first?.hasPrefix(#"{"event":"searching""#) == true)
        #expect(err.contains { $0.hasPrefix(#"{"event":"connected","address":"C0:FF:EE:00:00:0D""#) })
    }
}
